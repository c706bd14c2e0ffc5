"""The pydantic models: round-trips, rejected unknown fields, typed Job templates."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from jobset_infra.api import constants as c
from jobset_infra.api.errors import FieldError
from jobset_infra.api.models import (
    FailurePolicyAction,
    JobSet,
    JobSetStatus,
    RestartStrategy,
    field_errors,
)
from jobset_infra.testing.jobsets import make_jobset


def _errors(manifest: dict[str, Any]) -> list[FieldError]:
    with pytest.raises(ValidationError) as info:
        JobSet.model_validate(manifest)
    return field_errors(info.value)


def _full_jobset() -> dict[str, Any]:
    return (
        make_jobset("js", "ns")
        .label("team", "ml")
        .replicated_job("leader", replicas=1, parallelism=1)
        .replicated_job("workers", replicas=4, parallelism=2, depends_on=[("leader", "Ready")])
        .network(enable_dns_hostnames=True, subdomain="sub", publish_not_ready_addresses=False)
        .success_policy("All", ["workers"])
        .failure_policy(max_restarts=3, restart_strategy="BlockingRecreate")
        .rule("FailJobSet", "r0", targets=["leader"], reasons=["PodFailurePolicy"])
        .coordinator("leader")
        .ttl_after_finished(60)
        .managed_by("example.com/ctl")
        .suspend(True)
        .volume_claim_policy("ckpt", when_deleted="Retain")
        .condition(c.CONDITION_SUSPENDED, reason=c.SUSPENDED_REASON, message=c.SUSPENDED_MESSAGE)
        .restarts(2, counting=1)
        .obj()
    )


def test_a_manifest_round_trips_unchanged() -> None:
    manifest = _full_jobset()
    assert JobSet.model_validate(manifest).to_manifest() == manifest


def test_model_defaults_are_upstream_effective_defaults_but_not_serialised() -> None:
    js = make_jobset("js").replicated_job("w", replicas=None).failure_policy().model()
    rjob = js.spec.replicated_jobs[0]
    assert (rjob.replicas, rjob.group_name) == (1, c.DEFAULT_GROUP_NAME)
    assert js.spec.failure_policy is not None
    assert js.spec.failure_policy.restart_strategy is RestartStrategy.RECREATE
    assert "replicas" not in js.to_manifest()["spec"]["replicatedJobs"][0]
    assert js.to_manifest()["spec"]["failurePolicy"] == {}


def test_status_restarts_is_always_serialised() -> None:
    assert JobSetStatus().to_dict() == {"restarts": 0}


def test_enums_parse_to_members() -> None:
    js = JobSet.model_validate(_full_jobset())
    assert js.spec.failure_policy is not None
    assert js.spec.failure_policy.rules[0].action is FailurePolicyAction.FAIL_JOBSET


@pytest.mark.parametrize(
    ("mutate", "want"),
    [
        pytest.param(
            lambda m: m["spec"].update(bogus=1),
            FieldError("spec.bogus", 'unknown field "bogus"'),
            id="unknown spec field is rejected",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].update(
                containerz=[]
            ),
            FieldError(
                "spec.replicatedJobs[0].template.spec.template.spec.containerz",
                'unknown field "containerz"',
            ),
            id="mistyped pod spec field is rejected with its full path",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
                "containers"
            ][0].update(image=5),
            FieldError(
                "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image",
                "Invalid value: 5: must be of type string",
            ),
            id="wrongly typed container image is rejected",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"].update(parallelism=2**40),
            FieldError(
                "spec.replicatedJobs[0].template.spec.parallelism",
                "Invalid value: 1099511627776: must be a valid int32",
            ),
            id="parallelism beyond int32 is rejected",
        ),
        pytest.param(
            lambda m: m["spec"]["volumeClaimPolicies"][0]["templates"][0]["spec"].update(
                accesModes=[]
            ),
            FieldError(
                "spec.volumeClaimPolicies[0].templates[0].spec.accesModes",
                'unknown field "accesModes"',
            ),
            id="mistyped PVC template field is rejected",
        ),
        pytest.param(
            lambda m: m["spec"]["successPolicy"].update(operator="Some"),
            FieldError(
                "spec.successPolicy.operator",
                'Unsupported value: "Some": supported values: "All", "Any"',
            ),
            id="unknown enum value lists the supported values",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0].update(replicas="4"),
            FieldError(
                "spec.replicatedJobs[0].replicas",
                'Invalid value: "4": Input should be a valid integer',
            ),
            id="a numeric string is not an integer",
        ),
        pytest.param(
            lambda m: m["spec"].update(suspend="yes"),
            FieldError("spec.suspend", 'Invalid value: "yes": Input should be a valid boolean'),
            id="yes is not a boolean",
        ),
        pytest.param(
            lambda m: m.update(kind="Job"),
            FieldError("kind", 'Unsupported value: "Job": supported values: "JobSet"'),
            id="wrong kind is rejected",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0].pop("template"),
            FieldError("spec.replicatedJobs[0].template", "Required value"),
            id="missing template is required",
        ),
    ],
)
def test_invalid_manifests_name_the_field(mutate: Any, want: FieldError) -> None:
    manifest = _full_jobset()
    mutate(manifest)
    assert want in _errors(manifest)


def test_template_check_can_be_skipped_for_trusted_objects() -> None:
    manifest = _full_jobset()
    manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["bogus"] = 1
    js = JobSet.model_validate(manifest, context={"check_templates": False})
    assert js.spec.replicated_jobs[0].template["spec"]["bogus"] == 1


def test_metadata_keeps_unknown_keys() -> None:
    manifest = make_jobset("js").obj()
    manifest["metadata"]["futureField"] = {"x": 1}
    assert JobSet.model_validate(manifest).to_manifest() == manifest
