"""Condition update semantics (upstream TestUpdateConditions, §2.10)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.status import Condition
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.conditions import ConditionSpec, set_condition

EARLIER = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 1, 2, tzinfo=UTC)
EARLIER_S = "2026-01-01T00:00:00Z"
NOW_S = "2026-01-02T00:00:00Z"


def _c(type_: str, status: str, reason: str, message: str, at: str) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
    }


SUSPENDED_TRUE = _c("Suspended", "True", c.SUSPENDED_REASON, c.SUSPENDED_MESSAGE, EARLIER_S)


@pytest.mark.parametrize(
    ("existing", "spec", "want", "want_changed"),
    [
        pytest.param(
            [], cond.resumed(), [], False, id="no existing conditions, not adding conditions"
        ),
        pytest.param(
            [],
            cond.completed(),
            [
                _c(
                    "Completed",
                    "True",
                    c.ALL_JOBS_COMPLETED_REASON,
                    c.ALL_JOBS_COMPLETED_MESSAGE,
                    NOW_S,
                )
            ],
            True,
            id="no existing conditions, add a condition",
        ),
        pytest.param(
            [],
            cond.suspended(),
            [_c("Suspended", "True", c.SUSPENDED_REASON, c.SUSPENDED_MESSAGE, NOW_S)],
            True,
            id="suspended",
        ),
        pytest.param(
            [SUSPENDED_TRUE],
            cond.resumed(),
            [_c("Suspended", "False", c.RESUMED_REASON, c.RESUMED_MESSAGE, NOW_S)],
            True,
            id="resume (update suspended condition type in-place)",
        ),
        pytest.param(
            [SUSPENDED_TRUE],
            cond.suspended(),
            [SUSPENDED_TRUE],
            False,
            id="existing conditions, attempt to add duplicate",
        ),
        pytest.param(
            [_c("RestartingJobSet", "True", "FailurePolicy_a", "old message", EARLIER_S)],
            cond.restarting("FailurePolicy_b", "new message"),
            [_c("RestartingJobSet", "True", "FailurePolicy_b", "new message", EARLIER_S)],
            True,
            id="existing conditions, update reason/message but keep status same",
        ),
        pytest.param(
            [_c("StartupPolicyInProgress", "True", "x", "y", EARLIER_S)],
            cond.in_order_completed(),
            [
                _c("StartupPolicyInProgress", "False", "x", "y", EARLIER_S),
                _c(
                    "StartupPolicyCompleted",
                    "True",
                    c.IN_ORDER_STARTUP_COMPLETED_REASON,
                    c.IN_ORDER_STARTUP_COMPLETED_MESSAGE,
                    NOW_S,
                ),
            ],
            True,
            id="startup policy completed flips in progress to false",
        ),
        pytest.param(
            [_c("RestartingJobSet", "True", "DefaultFailurePolicy", "m", EARLIER_S)],
            cond.restarting_stopped(c.JOBS_READY_REASON),
            [_c("RestartingJobSet", "False", c.JOBS_READY_REASON, c.JOBS_READY_MESSAGE, NOW_S)],
            True,
            id="restarting set false once jobs are ready",
        ),
    ],
)
def test_set_condition(
    existing: list[dict[str, Any]],
    spec: ConditionSpec,
    want: list[dict[str, Any]],
    want_changed: bool,
) -> None:
    conditions = [Condition.model_validate(x) for x in existing]
    updated = set_condition(conditions, spec, NOW)
    assert (updated is not None) is want_changed
    assert [x.to_dict() for x in (updated if updated is not None else conditions)] == want


def test_restarting_stopped_messages_follow_upstream() -> None:
    assert (
        cond.restarting_stopped(c.JOBSET_COMPLETED_REASON).message
        == "jobset completed successfully"
    )
    assert cond.restarting_stopped(c.JOBSET_SUSPENDED_REASON).message == "jobset is suspended"
    assert cond.restarting_stopped(c.JOBSET_FAILED_REASON).message == "jobset failed"
    assert cond.restarting_stopped(c.JOBS_READY_REASON).message == "all jobs are ready"
