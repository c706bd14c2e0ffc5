"""The built-in resource table derived from the pinned API definitions."""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes
import pytest

from jobset_infra.sim.apiserver.resources import GVR, builtin_resources, plural_of


def official_client_paths() -> set[str]:
    """Every URL path template in the official client's generated API modules."""
    folder = Path(kubernetes.__file__).parent / "client" / "api"
    paths: set[str] = set()
    for module in folder.glob("*_api.py"):
        paths |= set(re.findall(r"'(/apis?/[^']*)'", module.read_text()))
    return paths


def collection_path(gvr: GVR, namespaced: bool) -> str:
    base = f"/apis/{gvr.group}/{gvr.version}" if gvr.group else f"/api/{gvr.version}"
    return f"{base}/namespaces/{{namespace}}/{gvr.resource}" if namespaced else \
        f"{base}/{gvr.resource}"


def test_every_served_builtin_has_the_plural_and_scope_the_official_client_uses() -> None:
    paths = official_client_paths()
    infos = builtin_resources()
    assert len(infos) >= 60
    wrong = [str(i.gvr) for i in infos if collection_path(i.gvr, i.namespaced) not in paths]
    assert wrong == []


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        pytest.param("Job", "jobs", id="regular plural"),
        pytest.param("Ingress", "ingresses", id="s gets es"),
        pytest.param("NetworkPolicy", "networkpolicies", id="consonant y gets ies"),
        pytest.param("Endpoints", "endpoints", id="the built-in exception"),
    ],
)
def test_plurals(kind: str, want: str) -> None:
    assert plural_of(kind) == want


def test_the_kinds_this_project_needs_are_served() -> None:
    served = {(i.gvr.group, i.gvr.version, i.gvr.resource): i for i in builtin_resources()}
    for key in [("", "v1", "pods"), ("", "v1", "services"), ("", "v1", "nodes"),
                ("", "v1", "events"), ("events.k8s.io", "v1", "events"),
                ("coordination.k8s.io", "v1", "leases"), ("batch", "v1", "jobs"),
                ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies")]:
        assert key in served, key
    assert served[("", "v1", "nodes")].namespaced is False
    assert served[("batch", "v1", "jobs")].has_status is True
    assert served[("", "v1", "configmaps")].has_status is False
