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
from typing import Literal

from jobset_infra.api import constants as c
from jobset_infra.api.model_base import ConditionStatus
from jobset_infra.api.status import Condition
from jobset_infra.controller.core.types import format_time

__all__ = [
    "ConditionSpec",
    "EventType",
    "as_condition",
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


def find_condition(conditions: Sequence[Condition], type_: str) -> Condition | None:
    """Return the condition of type `type_`, or None."""
    for cond in conditions:
        if cond.type == type_:
            return cond
    return None


def is_true(conditions: Sequence[Condition], type_: str) -> bool:
    """Return whether the condition of type `type_` exists with status True."""
    cond = find_condition(conditions, type_)
    return cond is not None and cond.status == ConditionStatus.TRUE


def as_condition(spec: ConditionSpec, transition: str) -> Condition:
    """Return the status condition `spec` describes, last changed at `transition`."""
    return Condition(
        type=spec.type,
        status=ConditionStatus(spec.status),
        reason=spec.reason,
        message=spec.message,
        last_transition_time=transition,
    )


def set_condition(
    conditions: Sequence[Condition], spec: ConditionSpec, now: datetime
) -> list[Condition] | None:
    """Return `conditions` with `spec` set by upstream's semantics, or None when unchanged."""
    out = list(conditions)
    changed = False
    found = False
    for i, cond in enumerate(out):
        if cond.type == spec.type:
            found = True
            if cond.status != spec.status:
                out[i] = as_condition(spec, format_time(now))
                changed = True
            elif cond.reason != spec.reason or cond.message != spec.message:
                out[i] = as_condition(spec, cond.last_transition_time or format_time(now))
                changed = True
        elif (
            spec.status == "True"
            and _EXCLUSIVE.get(spec.type) == cond.type
            and cond.status == ConditionStatus.TRUE
        ):
            out[i] = cond.model_copy(update={"status": ConditionStatus.FALSE})
            changed = True
    if not found and spec.status == "True":
        out.append(as_condition(spec, format_time(now)))
        changed = True
    return out if changed else None


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
