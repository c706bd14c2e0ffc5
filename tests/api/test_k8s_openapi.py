"""The pinned Kubernetes OpenAPI definitions: schemas, built-in kinds, error paths."""

from __future__ import annotations

import time
from typing import Any

import jsonschema
import pytest

from jobset_infra.api import k8s_openapi as k
from jobset_infra.api.errors import FieldError


def _deployment(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "ctl", "namespace": "jobset-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "ctl"}},
            "template": {
                "metadata": {"labels": {"app": "ctl"}},
                "spec": {
                    "containers": [
                        {"name": "ctl", "image": "ctl:1", "ports": [{"containerPort": 8080}]}
                    ]
                },
            },
            **spec,
        },
    }


def test_pinned_version_has_the_job_template_and_known_kinds() -> None:
    assert k.K8S_VERSION.startswith("1.")
    assert k.definition_for("batch/v1", "Job") == "io.k8s.api.batch.v1.Job"
    assert k.definition_for("v1", "Pod") == "io.k8s.api.core.v1.Pod"
    assert k.definition_for("jobset.x-k8s.io/v1alpha2", "JobSet") is None
    assert "spec" in k.definition(k.JOB_TEMPLATE_SPEC)["properties"]


def test_schema_is_self_contained_with_resolvable_refs() -> None:
    schema = k.schema("io.k8s.api.core.v1.PodSpec")
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"containers": [{"name": "a"}]})
    assert not validator.is_valid({"containers": [{"name": 1}]})


def test_unknown_definition_names_itself() -> None:
    with pytest.raises(k.UnknownDefinitionError, match=r"io\.k8s\.api\.core\.v1\.Nope"):
        k.definition("io.k8s.api.core.v1.Nope")


def test_a_valid_deployment_has_no_problems() -> None:
    assert k.validate_builtin(_deployment()) == []


@pytest.mark.parametrize(
    ("manifest", "want"),
    [
        pytest.param(
            _deployment(replica=3),
            FieldError("spec.replica", 'unknown field "replica"'),
            id="unknown field",
        ),
        pytest.param(
            _deployment(replicas="3"),
            FieldError("spec.replicas", 'Invalid value: "3": must be of type integer'),
            id="wrong type",
        ),
        pytest.param(
            _deployment(replicas=2**31),
            FieldError("spec.replicas", "Invalid value: 2147483648: must be a valid int32"),
            id="beyond int32",
        ),
        pytest.param(
            _deployment(strategy={"rollingUpdate": {"maxSurge": [1]}}),
            FieldError(
                "spec.strategy.rollingUpdate.maxSurge",
                'Invalid value: "array": must be a string or an integer',
            ),
            id="int-or-string",
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}},
            FieldError("spec.selector", "Required value"),
            id="a missing spec is the empty spec the server decodes: spec.selector is required",
        ),
        pytest.param(
            {"kind": "Deployment"},
            FieldError("apiVersion", "Required value"),
            id="missing apiVersion",
        ),
        pytest.param(
            {"apiVersion": "apps/v1"}, FieldError("kind", "Required value"), id="missing kind"
        ),
    ],
)
def test_problems_name_the_field(manifest: dict[str, Any], want: FieldError) -> None:
    assert want in k.validate_builtin(manifest)


def test_unknown_kind_is_one_problem() -> None:
    errors = k.validate_builtin({"apiVersion": "example.com/v1", "kind": "Widget"})
    assert [e.path for e in errors] == ["kind"]
    assert "Widget" in errors[0].message


def test_validators_are_cached_and_fast() -> None:
    manifest = _deployment()
    k.validate_builtin(manifest)
    start = time.perf_counter()
    for _ in range(50):
        k.validate_builtin(manifest)
    assert (time.perf_counter() - start) / 50 < 0.02
