"""The controller's spec check sees every feature gate the controller runs with."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core.admission import spec_problems
from jobset_infra.controller.core.types import CoreConfig
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset


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
