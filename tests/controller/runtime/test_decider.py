"""The bridge to the core: feature gates reach CoreConfig; malformed objects get a plan."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.features import Feature
from jobset_infra.controller.core.types import CoreConfig, EmitEvent, Observed, Plan, UpdateStatus
from jobset_infra.controller.runtime.controller import core_config, core_decider
from jobset_infra.controller.runtime.spec_verdicts import SpecVerdicts

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_feature_gates_and_placement_mode_reach_the_core() -> None:
    config = ControllerConfig.from_dict(
        {"featureGates": {"RestartJob": True}, "placement": {"mode": "off"}}
    )
    core = core_config(config)
    assert core.enabled(Feature.RESTART_JOB) is True
    assert core.enabled(Feature.ELASTIC_JOBSET) is False
    assert core.exclusive_placement is False


def test_a_malformed_jobset_gets_an_invalid_spec_status_not_a_crash() -> None:
    decide = core_decider(core_config(ControllerConfig()))
    raw = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": "js", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
        "spec": {"replicatedJobs": "not-a-list"},
    }
    plan = decide(Observed(raw), NOW)
    status = plan.status_update
    assert isinstance(status, UpdateStatus)
    conditions = {x["type"]: x for x in status.status.get("conditions", [])}
    assert conditions[c.CONDITION_INVALID_SPEC]["reason"] == c.INVALID_SPEC_REASON
    assert "replicatedJobs" in conditions[c.CONDITION_INVALID_SPEC]["message"]


def _string_template(generation: int = 1) -> dict[str, object]:
    from jobset_infra.testing.jobsets import make_jobset

    js = make_jobset("js", "ns").uid("u").generation(generation).replicated_job("w").obj()
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] = "a string"
    return js


def _with_status(js: dict[str, object], plan: Plan) -> dict[str, object]:
    update = plan.status_update
    assert update is not None
    return {**js, "status": update.status}


def test_a_malformed_jobset_is_reported_once_then_costs_nothing() -> None:
    verdicts = SpecVerdicts()
    decide = core_decider(core_config(ControllerConfig()), verdicts)
    js = _string_template()
    first = decide(Observed(js), NOW)
    assert [e.reason for e in first.of_type(EmitEvent)] == [c.INVALID_SPEC_REASON]
    assert "template.spec.template" in first.of_type(EmitEvent)[0].message
    reported = _with_status(js, first)
    assert decide(Observed(reported), NOW).is_empty  # the report stands: settled
    calls: list[bool] = []

    def observe_counting(check: bool) -> Any:
        calls.append(check)
        raise AssertionError("a settled JobSet is not parsed again")

    plan = verdicts.decide(reported, observe_counting, lambda o: Plan(), NOW, CoreConfig())
    assert plan.is_empty and calls == []


def test_the_full_spec_check_runs_once_per_generation() -> None:
    verdicts = SpecVerdicts()
    checks: list[bool] = []

    def observed(check: bool) -> Any:
        checks.append(check)
        return object()

    for generation in (1, 1, 1, 2, 2):
        js = {"metadata": {"uid": "u", "generation": generation}}
        verdicts.decide(js, observed, lambda o: Plan(), NOW, CoreConfig())
    assert checks == [True, False, False, True, False]


def test_a_crash_in_reconcile_is_reported_as_invalid_spec_not_retried() -> None:
    verdicts = SpecVerdicts()
    js = {"metadata": {"name": "js", "namespace": "ns", "uid": "u", "generation": 1}}

    def crash(observed: Any) -> Plan:
        raise AttributeError("'str' object has no attribute 'get'")

    plan = verdicts.decide(js, lambda check: object(), crash, NOW, CoreConfig())
    (event,) = plan.of_type(EmitEvent)
    assert event.type == "Warning"
    assert "cannot reconcile this JobSet (AttributeError" in event.message


def test_a_deleted_jobset_is_forgotten() -> None:
    verdicts = SpecVerdicts()
    js = {"metadata": {"uid": "u", "generation": 1}}
    verdicts.decide(js, lambda check: object(), lambda o: Plan(), NOW, CoreConfig())
    verdicts.forget("u")
    assert verdicts.checked == {} and verdicts.settled == {}
