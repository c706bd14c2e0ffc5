"""JobSet status conditions: upstream's exact update semantics and its catalog of conditions.

Upstream `updateCondition` (jobset_controller.go l.1228-1271), reproduced rule by rule:

* same type, different status: replace it with lastTransitionTime = now;
* same type and status, different reason or message: replace it, keeping lastTransitionTime;
* identical: nothing changes and no event is queued;
* absent: append only if the new status is True (a False condition is never introduced);
* StartupPolicyInProgress and StartupPolicyCompleted exclude each other: setting one True flips an
  existing True other one to False (status field only, as upstream) and counts as a change.

Every effective change queues an event (type from the spec, reason and message of the condition),
which the runtime emits only after the status write succeeds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import format_time

__all__ = [
    "ConditionSpec",
    "EventType",
    "completed",
    "failed",
    "find_condition",
    "in_order_completed",
    "in_order_in_progress",
    "is_true",
    "restarting",
    "restarting_stopped",
    "resumed",
    "set_condition",
    "suspended",
]

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True, slots=True)
class ConditionSpec:
    """A condition to set, and the type of the event that announces a change of it."""

    type: str
    status: Literal["True", "False"]
    reason: str
    message: str
    event_type: EventType = "Normal"


_EXCLUSIVE = {
    c.CONDITION_STARTUP_POLICY_IN_PROGRESS: c.CONDITION_STARTUP_POLICY_COMPLETED,
    c.CONDITION_STARTUP_POLICY_COMPLETED: c.CONDITION_STARTUP_POLICY_IN_PROGRESS,
}


def find_condition(conditions: Sequence[dict[str, Any]], type_: str) -> dict[str, Any] | None:
    """Return the condition of type `type_`, or None."""
    for cond in conditions:
        if cond.get("type") == type_:
            return cond
    return None


def is_true(conditions: Sequence[dict[str, Any]], type_: str) -> bool:
    """Return whether the condition of type `type_` exists with status True."""
    cond = find_condition(conditions, type_)
    return cond is not None and cond.get("status") == "True"


def _as_dict(spec: ConditionSpec, transition: str) -> dict[str, Any]:
    return {
        "type": spec.type,
        "status": spec.status,
        "reason": spec.reason,
        "message": spec.message,
        "lastTransitionTime": transition,
    }


def set_condition(conditions: list[dict[str, Any]], spec: ConditionSpec, now: datetime) -> bool:
    """Set `spec` in `conditions` in place with upstream's semantics; return whether it changed.

    Pure apart from mutating the list it is given (the reconcile's working copy of the status).
    """
    changed = False
    found = False
    for i, cond in enumerate(conditions):
        if cond.get("type") == spec.type:
            found = True
            if cond.get("status") != spec.status:
                conditions[i] = _as_dict(spec, format_time(now))
                changed = True
            elif cond.get("reason") != spec.reason or cond.get("message") != spec.message:
                keep = cond.get("lastTransitionTime") or format_time(now)
                conditions[i] = _as_dict(spec, keep)
                changed = True
        elif (
            spec.status == "True"
            and _EXCLUSIVE.get(spec.type) == cond.get("type")
            and cond.get("status") == "True"
        ):
            conditions[i] = {**cond, "status": "False"}
            changed = True
    if not found and spec.status == "True":
        conditions.append(_as_dict(spec, format_time(now)))
        changed = True
    return changed


# --------------------------------------------------------------------------- catalog (§2.10)


def completed() -> ConditionSpec:
    """Completed=True: the success policy is met."""
    return ConditionSpec(
        c.CONDITION_COMPLETED, "True", c.ALL_JOBS_COMPLETED_REASON, c.ALL_JOBS_COMPLETED_MESSAGE
    )


def failed(reason: str, message: str) -> ConditionSpec:
    """Failed=True with one of FailedJobs / ReachedMaxRestarts / FailJobSetFailurePolicyAction."""
    return ConditionSpec(c.CONDITION_FAILED, "True", reason, message, "Warning")


def suspended() -> ConditionSpec:
    """Suspended=True: spec.suspend is set."""
    return ConditionSpec(c.CONDITION_SUSPENDED, "True", c.SUSPENDED_REASON, c.SUSPENDED_MESSAGE)


def resumed() -> ConditionSpec:
    """Suspended=False: the JobSet was resumed (only flips an existing condition)."""
    return ConditionSpec(c.CONDITION_SUSPENDED, "False", c.RESUMED_REASON, c.RESUMED_MESSAGE)


def restarting(reason: str, message: str) -> ConditionSpec:
    """RestartingJobSet=True while a JobSet-level restart is in progress."""
    return ConditionSpec(c.CONDITION_RESTARTING, "True", reason, message, "Warning")


def restarting_stopped(reason: str) -> ConditionSpec:
    """RestartingJobSet=False: JobsReady, JobSetFailed, JobSetCompleted or JobSetSuspended."""
    messages = {
        c.JOBS_READY_REASON: c.JOBS_READY_MESSAGE,
        c.JOBSET_FAILED_REASON: c.JOBSET_FAILED_MESSAGE,
        c.JOBSET_COMPLETED_REASON: c.ALL_JOBS_COMPLETED_MESSAGE,
        c.JOBSET_SUSPENDED_REASON: c.SUSPENDED_MESSAGE,
    }
    return ConditionSpec(c.CONDITION_RESTARTING, "False", reason, messages[reason])


def in_order_in_progress() -> ConditionSpec:
    """StartupPolicyInProgress=True: InOrder startup is still starting replicated jobs."""
    return ConditionSpec(
        c.CONDITION_STARTUP_POLICY_IN_PROGRESS,
        "True",
        c.IN_ORDER_STARTUP_IN_PROGRESS_REASON,
        c.IN_ORDER_STARTUP_IN_PROGRESS_MESSAGE,
    )


def in_order_completed() -> ConditionSpec:
    """StartupPolicyCompleted=True: every replicated job has started, in order."""
    return ConditionSpec(
        c.CONDITION_STARTUP_POLICY_COMPLETED,
        "True",
        c.IN_ORDER_STARTUP_COMPLETED_REASON,
        c.IN_ORDER_STARTUP_COMPLETED_MESSAGE,
    )
