"""`jobset-infra validate` checks a built-in object whose spec is missing as the API server does:
as an empty spec (issue 16, finding 9)."""

from __future__ import annotations

from jobset_infra.api.k8s_openapi import validate_builtin


def test_a_pod_without_spec_needs_containers() -> None:
    errors = validate_builtin({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert [(e.path, e.message) for e in errors] == [("spec.containers", "Required value")]


def test_a_configmap_has_no_spec_to_require() -> None:
    assert validate_builtin({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "c"}}) == []
