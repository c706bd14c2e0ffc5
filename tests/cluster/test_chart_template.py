"""A local chart rendered by the provider's Helm (cluster.chart_template): its errors. The
render itself, against a real cluster, is the placement-modes tier's (Kueue's chart on the
system node, tests/e2e/test_placement_modes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobset_infra.cluster import chart_template
from jobset_infra.cluster.chart_template import ChartTemplateError, template_chart


def _tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str | None) -> None:
    monkeypatch.setenv("JOBSET_INFRA_TOOLS", str(tmp_path))
    monkeypatch.setenv("JOBSET_INFRA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    if script is not None:
        provider = tmp_path / chart_template.PROVIDER
        provider.write_text(f"#!/bin/sh\n{script}\n")
        provider.chmod(0o755)


def test_without_the_provider_the_error_names_make_tools(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(tmp_path, monkeypatch, None)
    with pytest.raises(ChartTemplateError, match="make tools"):
        template_chart(tmp_path, release="r", namespace="n", values={},
                       kubeconfig=tmp_path / "kubeconfig")


def test_a_provider_that_announces_no_port_is_an_error_with_what_it_said(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tools(tmp_path, monkeypatch, "echo 'fatal: no engine' >&2; exit 3")
    with pytest.raises(ChartTemplateError, match=r"did not start \(exit 3\): fatal: no engine"):
        template_chart(tmp_path, release="r", namespace="n", values={},
                       kubeconfig=tmp_path / "kubeconfig", timeout=30)
