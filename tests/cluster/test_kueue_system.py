"""Kueue on a system node (cluster.kueue_system): the chart's objects in Helm's install order,
the install's placement and image, and a missing chart named with its fix. Rendering the chart
itself (the provider's Helm) is the placement-modes tier's (tests/e2e/test_placement_modes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobset_infra.cluster import kueue_system
from jobset_infra.cluster.install import SYSTEM_TOLERATION
from jobset_infra.cluster.kueue_system import KueueInstallError, in_install_order
from jobset_infra.cluster.realnode import SYSTEM_NODE_LABEL

IMAGE = "jobset-infra.local/kueue:0.1.0@sha256:" + "1" * 64


def _object(kind: str, name: str) -> dict[str, object]:
    return {"kind": kind, "metadata": {"name": name}}


def test_the_namespace_comes_first_and_the_webhook_configurations_last() -> None:
    rendered = [_object("ValidatingWebhookConfiguration", "v"), _object("Deployment", "d"),
                _object("CustomResourceDefinition", "c1"), _object("Secret", "s"),
                _object("MutatingWebhookConfiguration", "m"), _object("Service", "svc"),
                _object("CustomResourceDefinition", "c2"), _object("APIService", "a")]
    ordered = [(o["kind"], o["metadata"]["name"]) for o in in_install_order(rendered, "q")]
    assert ordered == [("Namespace", "q"), ("Secret", "s"), ("CustomResourceDefinition", "c1"),
                       ("CustomResourceDefinition", "c2"), ("Service", "svc"),
                       ("Deployment", "d"), ("APIService", "a"),
                       ("MutatingWebhookConfiguration", "m"),
                       ("ValidatingWebhookConfiguration", "v")]


def test_a_kind_the_install_cannot_apply_is_named() -> None:
    with pytest.raises(KueueInstallError, match="Ingress"):
        in_install_order([_object("Ingress", "viz")], "q")


def test_the_system_node_install_selects_and_tolerates_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chart = tmp_path / "sigs.k8s.io" / "kueue@v0.19.2" / "charts" / "kueue"
    chart.mkdir(parents=True)
    (chart / "Chart.yaml").write_text("version: 0.19.2\n")
    monkeypatch.setenv("GOMODCACHE", str(tmp_path))
    install = kueue_system.system_node_kueue(IMAGE, replicas=2)
    assert install.chart_path == str(chart)
    assert install.node_selector == {SYSTEM_NODE_LABEL: "true"}
    assert install.tolerations == (SYSTEM_TOLERATION,)
    assert (install.image, install.replicas) == (IMAGE, 2)


def test_a_missing_chart_names_make_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          ) -> None:
    monkeypatch.setenv("GOMODCACHE", str(tmp_path))
    with pytest.raises(KueueInstallError, match="make tools"):
        kueue_system.system_node_kueue(IMAGE)
