"""The models and the CRD cover every field and string of upstream's API (reference §1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from jobset_infra.api import constants as c
from jobset_infra.api import models
from jobset_infra.api.crd.generate import generate_crd

# Upstream's JSON field names per type (reference §1.1).
UPSTREAM_FIELDS: dict[type[BaseModel], set[str]] = {
    models.JobSetSpec: {
        "replicatedJobs",
        "network",
        "successPolicy",
        "failurePolicy",
        "startupPolicy",
        "suspend",
        "coordinator",
        "managedBy",
        "ttlSecondsAfterFinished",
        "volumeClaimPolicies",
    },
    models.ReplicatedJob: {"name", "groupName", "template", "replicas", "dependsOn"},
    models.DependsOn: {"name", "status"},
    models.Network: {"enableDNSHostnames", "subdomain", "publishNotReadyAddresses"},
    models.SuccessPolicy: {"operator", "targetReplicatedJobs"},
    models.FailurePolicy: {"maxRestarts", "restartStrategy", "rules"},
    models.FailurePolicyRule: {
        "name",
        "action",
        "onJobFailureReasons",
        "onJobFailureMessagePatterns",
        "targetReplicatedJobs",
    },
    models.StartupPolicy: {"startupPolicyOrder"},
    models.Coordinator: {"replicatedJob", "jobIndex", "podIndex"},
    models.VolumeClaimPolicy: {"templates", "retentionPolicy"},
    models.VolumeRetentionPolicy: {"whenDeleted"},
    models.JobSetStatus: {
        "conditions",
        "restarts",
        "restartsCountTowardsMax",
        "terminalState",
        "replicatedJobsStatus",
        "previousInPlaceRestartAttempt",
        "currentInPlaceRestartAttempt",
        "executionAttempts",  # upstream's main branch (KEP-1282), not v0.12
    },
    models.ReplicatedJobStatus: {
        "name",
        "ready",
        "succeeded",
        "failed",
        "active",
        "suspended",
        "jobRestarts",
        "jobRestartsCountTowardsMax",
    },
}

UPSTREAM_ENUMS: dict[type[Any], set[str]] = {
    models.Operator: {"All", "Any"},
    models.RestartStrategy: {"Recreate", "BlockingRecreate", "InPlaceRestart"},
    models.FailurePolicyAction: {
        "FailJobSet",
        "RestartJobSet",
        "RestartJobSetAndIgnoreMaxRestarts",
        "RestartJob",
        "RestartJobAndIgnoreMaxRestarts",
    },
    models.StartupPolicyOrder: {"AnyOrder", "InOrder"},
    models.DependsOnStatus: {"Ready", "Complete"},
    models.WhenDeleted: {"Delete", "Retain"},
}

# Reference §1.3: every well-known key, exactly as upstream spells it.
UPSTREAM_KEYS = {
    "jobset.sigs.k8s.io/jobset-name",
    "jobset.sigs.k8s.io/jobset-uid",
    "jobset.sigs.k8s.io/replicatedjob-name",
    "jobset.sigs.k8s.io/replicatedjob-replicas",
    "jobset.sigs.k8s.io/global-replicas",
    "jobset.sigs.k8s.io/job-index",
    "jobset.sigs.k8s.io/job-global-index",
    "jobset.sigs.k8s.io/job-key",
    "jobset.sigs.k8s.io/group-name",
    "jobset.sigs.k8s.io/group-replicas",
    "jobset.sigs.k8s.io/job-group-index",
    "jobset.sigs.k8s.io/restart-attempt",
    "jobset.sigs.k8s.io/job-restart-attempt",
    "jobset.sigs.k8s.io/coordinator",
    "alpha.jobset.sigs.k8s.io/exclusive-topology",
    "alpha.jobset.sigs.k8s.io/node-selector",
    "alpha.jobset.sigs.k8s.io/namespaced-job",
    "alpha.jobset.sigs.k8s.io/no-schedule",
    "jobset.sigs.k8s.io/priority",
    "jobset.sigs.k8s.io/jobset-controller",
    "jobset.sigs.k8s.io/in-place-restart-attempt",
    "jobset.sigs.k8s.io/disable-in-place-restart",
    "batch.kubernetes.io/job-completion-index",
}
UPSTREAM_CONDITIONS = {
    "Completed",
    "Failed",
    "Suspended",
    "RestartingJobSet",
    "StartupPolicyInProgress",
    "StartupPolicyCompleted",
}


def _aliases(model: type[BaseModel]) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize(
    ("model", "want"), [pytest.param(m, w, id=m.__name__) for m, w in UPSTREAM_FIELDS.items()]
)
def test_model_has_exactly_upstreams_fields(model: type[BaseModel], want: set[str]) -> None:
    assert _aliases(model) == want


@pytest.mark.parametrize(
    ("enum", "want"), [pytest.param(e, w, id=e.__name__) for e, w in UPSTREAM_ENUMS.items()]
)
def test_enum_has_exactly_upstreams_values(enum: type[Any], want: set[str]) -> None:
    assert {m.value for m in enum} == want


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = generate_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def _walk(model: type[BaseModel], schema: dict[str, Any], path: str) -> list[str]:
    """Fields of `model` (recursively) missing from `schema`."""
    missing = []
    props = schema.get("properties", {})
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if alias not in props:
            missing.append(f"{path}.{alias}")
            continue
        sub = props[alias]
        nested = _model_of(info.annotation)
        if nested is not None and nested is not models.ObjectMeta:
            target = sub["items"] if sub.get("type") == "array" else sub
            missing += _walk(nested, target, f"{path}.{alias}")
    return missing


def _model_of(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def test_crd_schema_has_every_model_field() -> None:
    assert _walk(models.JobSet, _schema(), "") == []


def test_crd_enums_and_list_types_match_upstream() -> None:
    spec = _schema()["properties"]["spec"]["properties"]
    rjobs = spec["replicatedJobs"]
    assert (rjobs["x-kubernetes-list-type"], rjobs["x-kubernetes-list-map-keys"]) == (
        "map",
        ["name"],
    )
    depends = rjobs["items"]["properties"]["dependsOn"]
    assert (depends["maxItems"], depends["x-kubernetes-list-map-keys"]) == (5, ["name"])
    assert rjobs["items"]["properties"]["replicas"]["minimum"] == 0
    assert spec["volumeClaimPolicies"]["maxItems"] == 50
    rule = spec["failurePolicy"]["properties"]["rules"]["items"]["properties"]
    assert set(rule["action"]["enum"]) == UPSTREAM_ENUMS[models.FailurePolicyAction]
    assert set(rule["onJobFailureReasons"]["items"]["enum"]) == set(c.VALID_JOB_FAILURE_REASONS)
    status = _schema()["properties"]["status"]["properties"]
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]
    assert status["replicatedJobsStatus"]["x-kubernetes-list-map-keys"] == ["name"]


def test_every_upstream_key_and_condition_is_a_constant() -> None:
    values = {v for k, v in vars(c).items() if k.isupper() and isinstance(v, str)}
    assert UPSTREAM_KEYS - values == set()
    assert UPSTREAM_CONDITIONS - values == set()


def test_no_other_module_spells_a_jobset_key_as_a_string_literal() -> None:
    # Style guideline 4: a key only ever appears quoted in api/constants.py (prose may mention it).
    literal = re.compile(r"['\"](alpha\.)?jobset\.sigs\.k8s\.io/")
    root = Path(c.__file__).parents[1]
    offenders = [
        str(p.relative_to(root))
        for p in root.rglob("*.py")
        if p.name != "constants.py" and literal.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
