"""Observed state from raw objects, and JobSets that do not parse."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core import (
    MalformedJobSetError,
    observe,
    reconcile,
    reconcile_malformed,
)
from jobset_infra.controller.core.types import CoreConfig, CreateJob, EmitEvent, Plan, UpdateStatus
from jobset_infra.testing.jobsets import make_jobset

NOW = datetime(2026, 6, 1, tzinfo=UTC)


def _raw(**spec: Any) -> dict[str, Any]:
    js = make_jobset("js", "ns").uid("u").replicated_job("w").obj()
    js["metadata"]["resourceVersion"] = "5"
    js["spec"].update(spec)
    return js


def test_observe_parses_the_jobset() -> None:
    observed = observe(_raw(), service_exists=True)
    assert observed.jobset.name == "js"
    assert observed.service_exists is True


@pytest.mark.parametrize(
    ("spec", "want_path"),
    [
        pytest.param(
            {"replicatedJobs": [{"name": "w", "template": {}, "replicas": "four"}]},
            "spec.replicatedJobs[0].replicas",
            id="replicas is not a number",
        ),
        pytest.param(
            {"failurePolicy": {"rules": [{"action": "Explode"}]}},
            "spec.failurePolicy.rules[0].action",
            id="unknown failure policy action",
        ),
        pytest.param(
            {"sucessPolicy": {"operator": "All"}}, "spec.sucessPolicy", id="misspelled field"
        ),
        pytest.param(
            {"replicatedJobs": [{"name": "w", "template": {}}, {"name": "w", "template": {}}]},
            "spec.replicatedJobs[1].name",
            id="two replicated jobs with one name (the CRD's listType=map was bypassed)",
        ),
    ],
)
def test_malformed_jobset_names_the_field(spec: dict[str, Any], want_path: str) -> None:
    with pytest.raises(MalformedJobSetError) as err:
        observe(_raw(**spec))
    assert want_path in str(err.value)
    assert any(e.path == want_path for e in err.value.errors)


def test_malformed_jobset_gets_a_condition_and_a_warning_once() -> None:
    raw = _raw(replicatedJobs=[{"name": "w", "template": {}, "replicas": "four"}])
    with pytest.raises(MalformedJobSetError) as err:
        observe(raw)
    plan = reconcile_malformed(raw, err.value, NOW)
    status = plan.of_type(UpdateStatus)[0]
    assert (status.name, status.namespace, status.resource_version) == ("js", "ns", "5")
    cond = status.status["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "InvalidSpec",
        "True",
        "InvalidJobSetSpec",
    )
    assert "spec.replicatedJobs[0].replicas" in cond["message"]
    assert "jobset-infra validate" in cond["message"]
    (event,) = plan.of_type(EmitEvent)
    assert (event.type, event.reason) == ("Warning", "InvalidJobSetSpec")
    raw["status"] = status.status
    assert reconcile_malformed(raw, err.value, NOW) == Plan()  # reported once, no churn


def test_fixed_jobset_flips_invalid_spec_to_false() -> None:
    raw = _raw()
    raw["status"] = {
        "restarts": 0,
        "conditions": [
            {
                "type": "InvalidSpec",
                "status": "True",
                "reason": "InvalidJobSetSpec",
                "message": "x",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    plan = reconcile(observe(raw), NOW)
    cond = plan.of_type(UpdateStatus)[0].status["conditions"][0]
    assert (cond["status"], cond["reason"], cond["message"]) == (
        "False",
        c.VALID_SPEC_REASON,
        c.VALID_SPEC_MESSAGE,
    )


def test_malformed_jobset_managed_elsewhere_or_deleting_is_left_alone() -> None:
    raw = _raw(managedBy="example.com/x", replicatedJobs=5)
    assert reconcile_malformed(raw, ValueError("bad"), NOW) == Plan()
    raw = _raw(replicatedJobs=5)
    raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert reconcile_malformed(raw, ValueError("bad"), NOW) == Plan()


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(raw=st.dictionaries(st.sampled_from(["metadata", "spec", "status", "kind", "x"]), _json))
def test_reconcile_malformed_never_raises(raw: dict[str, Any]) -> None:
    plan = reconcile_malformed(raw, ValueError("bad"), NOW)
    assert isinstance(plan, Plan)


@pytest.mark.parametrize(
    ("builder", "config", "want_field"),
    [
        pytest.param(
            make_jobset("js", "ns")
            .replicated_job("w")
            .failure_policy(restart_strategy="InPlaceRestart"),
            CoreConfig(),
            "spec.failurePolicy.restartStrategy",
            id="InPlaceRestart without its gate (not implemented here) is reported",
        ),
        pytest.param(
            make_jobset("js", "ns")
            .replicated_job("w")
            .failure_policy(max_restarts=1)
            .rule("RestartJob", "r"),
            CoreConfig(FeatureGates.of({Feature.RESTART_JOB: False})),
            "spec.failurePolicy.rules[0].action",
            id="RestartJob action with the RestartJob gate off is reported",
        ),
        pytest.param(
            make_jobset("js", "ns").replicated_job("w").success_policy("All", ["nope"]),
            CoreConfig(),
            "spec.successPolicy",
            id="a success policy naming a missing replicated job is reported",
        ),
    ],
)
def test_what_the_webhook_would_reject_is_reported_and_reconcile_goes_on(
    builder: Any, config: CoreConfig, want_field: str
) -> None:
    raw = builder.uid("u").obj()
    raw["metadata"]["resourceVersion"] = "3"
    plan = reconcile(observe(raw), NOW, config)
    cond = next(
        x for x in plan.of_type(UpdateStatus)[0].status["conditions"] if x["type"] == "InvalidSpec"
    )
    assert (cond["status"], cond["reason"]) == ("True", "InvalidJobSetSpec")
    assert want_field in cond["message"]
    assert [e.reason for e in plan.of_type(EmitEvent)] == ["InvalidJobSetSpec"]
    assert plan.of_type(CreateJob)  # still reconciled as written
    raw["status"] = plan.of_type(UpdateStatus)[0].status
    again = reconcile(observe(raw), NOW, config)
    assert again.of_type(EmitEvent) == ()  # reported once


_GOOD_CONTAINER = {"name": "m", "image": "x"}


def _template(pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": pod_spec}}}


@pytest.mark.parametrize(
    ("rjobs", "want"),
    [
        pytest.param(
            [{"name": "w", "template": _template({"containers": [{"name": "main"}]})}],
            'job "js-w-0" creation failed with error: Job.batch "js-w-0" is invalid: '
            "spec.template.spec.containers[0].image: Required value",
            id="no image gets upstream's JobCreationFailed as the server words it",
        ),
        pytest.param(
            [
                {"name": "ok", "template": _template({"containers": [_GOOD_CONTAINER]})},
                {"name": "w", "template": _template({"containers": [{"name": "M"}]})},
            ],
            'job "js-w-0" creation failed with error: Job.batch "js-w-0" is invalid: '
            '[spec.template.spec.containers[0].name: Invalid value: "M": a lowercase RFC 1123 '
            "label must consist of lower case alphanumeric characters or '-', and must start "
            "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
            "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?'), "
            "spec.template.spec.containers[0].image: Required value]",
            id="several refusals of one replicated job are listed as the server lists them",
        ),
    ],
)
def test_a_refused_job_template_also_gets_job_creation_failed(
    rjobs: list[dict[str, Any]], want: str
) -> None:
    raw = _raw(replicatedJobs=rjobs)
    with pytest.raises(MalformedJobSetError) as err:
        observe(raw, check_templates=True)
    plan = reconcile_malformed(raw, err.value, NOW)
    events = {e.reason: e for e in plan.of_type(EmitEvent)}
    assert set(events) == {c.INVALID_SPEC_REASON, c.JOB_CREATION_FAILED_EVENT}
    assert events[c.JOB_CREATION_FAILED_EVENT].type == "Warning"
    assert events[c.JOB_CREATION_FAILED_EVENT].message == want
    status = plan.of_type(UpdateStatus)[0].status
    assert status["conditions"][0]["reason"] == c.INVALID_SPEC_REASON  # the condition stays


def test_a_malformed_jobset_that_is_not_a_refused_template_gets_no_job_creation_failed() -> None:
    raw = _raw(replicatedJobs=[{"name": "w", "template": {}, "replicas": "four"}])
    with pytest.raises(MalformedJobSetError) as err:
        observe(raw)
    reasons = [e.reason for e in reconcile_malformed(raw, err.value, NOW).of_type(EmitEvent)]
    assert reasons == [c.INVALID_SPEC_REASON]
