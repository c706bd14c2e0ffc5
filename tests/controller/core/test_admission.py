"""The controller's spec check sees every feature gate the controller runs with."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core import reconcile
from jobset_infra.controller.core.admission import spec_problems
from jobset_infra.controller.core.types import (
    CoreConfig,
    CreateJob,
    EmitEvent,
    Observed,
    Plan,
    UpdateStatus,
)
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def _in_place(b: JobSetBuilder) -> JobSetBuilder:
    b = b.failure_policy(restart_strategy="InPlaceRestart")
    return b.job_spec("w", backoffLimit=c.MAX_INT32, podReplacementPolicy="Failed")


def _restart_job(b: JobSetBuilder) -> JobSetBuilder:
    return b.rule("RestartJob")


@pytest.mark.parametrize(
    "build, feature, on, want_problem",
    [
        pytest.param(_in_place, Feature.IN_PLACE_RESTART, True, None,
                     id="InPlaceRestart with the controller's gate on is a valid spec"),
        pytest.param(_in_place, Feature.IN_PLACE_RESTART, False, "InPlaceRestart requires",
                     id="InPlaceRestart with the gate off is reported"),
        pytest.param(_restart_job, Feature.RESTART_JOB, True, None,
                     id="RestartJob with the controller's gate on is a valid spec"),
        pytest.param(_restart_job, Feature.RESTART_JOB, False, "RestartJob requires",
                     id="RestartJob with the gate off is reported"),
    ],
)
def test_the_spec_check_uses_the_controllers_gates(
    build: Callable[[JobSetBuilder], JobSetBuilder], feature: Feature, on: bool,
    want_problem: str | None,
) -> None:
    js = build(make_jobset("js", "ns").replicated_job("w", replicas=2)).model()
    problems = spec_problems(js, CoreConfig(FeatureGates.of({feature: on})))
    messages = [p.message for p in problems]
    assert messages == [] if want_problem is None else any(want_problem in m for m in messages)


@pytest.mark.parametrize("standing", [None, "True", "False"],
                         ids=["no report yet", "reported invalid", "reported valid"])
def test_a_pass_whose_verdict_is_pending_acts_alike_and_leaves_the_report(
    standing: str | None,
) -> None:
    """The verdict is a report, never a gate: without it (the runtime still loading the check)
    a pass plans the same actions as with it, and leaves InvalidSpec as it stands."""
    builder = _restart_job(make_jobset("js", "ns").uid("u").replicated_job("w", replicas=2))
    if standing is not None:
        builder = builder.condition(c.CONDITION_INVALID_SPEC, standing)
    js = builder.model()
    config = CoreConfig()
    pending = reconcile(Observed(js, spec_pending=True), NOW, config)
    checked = reconcile(Observed(js, spec_problems=tuple(spec_problems(js, config))), NOW, config)

    def acts(plan: Plan) -> list[Any]:
        return [a for a in plan.actions if not isinstance(a, UpdateStatus | EmitEvent)]

    assert acts(pending) == acts(checked) and len(pending.of_type(CreateJob)) == 2
    assert not pending.of_type(EmitEvent)
    update = pending.status_update
    assert update is not None
    reports = [x for x in update.status.get("conditions", [])
               if x["type"] == c.CONDITION_INVALID_SPEC]
    assert [x["status"] for x in reports] == ([] if standing is None else [standing])
