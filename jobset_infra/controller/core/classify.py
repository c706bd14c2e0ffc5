"""Sort a JobSet's child Jobs into previous-attempt, active, successful and failed (upstream
`getChildJobs`, jobset_controller.go l.353-443).

Deliberate differences from upstream, each tested and listed in docs/controller-core.md:

* A Job with `FailureTarget=True` is failing even before `Failed=True` appears (upstream #979,
  #928): the Job controller sets FailureTarget as soon as the Job's fate is decided and only adds
  Failed once every pod has terminated, which can take minutes. Likewise `SuccessCriteriaMet=True`
  counts as succeeded.
* A Job whose restart-attempt label is missing or not an integer is treated as belonging to a
  previous attempt (deleted and recreated) instead of aborting every reconcile of the JobSet.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import ChildJob, JobCondition

__all__ = [
    "ChildJobs",
    "JobFailure",
    "classify_child_jobs",
    "job_failure",
    "job_group",
    "job_succeeded",
]

_FAILED = c.JOB_CONDITION_FAILED
_FAILURE_TARGET = c.JOB_CONDITION_FAILURE_TARGET
_COMPLETE = c.JOB_CONDITION_COMPLETE
_SUCCESS_CRITERIA_MET = c.JOB_CONDITION_SUCCESS_CRITERIA_MET


@dataclass(frozen=True, slots=True)
class JobFailure:
    """Why and since when a Job is failing (from its Failed or FailureTarget condition)."""

    reason: str
    message: str
    since: datetime | None


@dataclass(frozen=True, slots=True)
class ChildJobs:
    """The JobSet's own child Jobs, classified. `previous` Jobs belong to an older attempt."""

    active: tuple[ChildJob, ...] = ()
    successful: tuple[ChildJob, ...] = ()
    failed: tuple[ChildJob, ...] = ()
    previous: tuple[ChildJob, ...] = ()

    def all(self) -> Iterable[ChildJob]:
        """Every classified Job, previous attempts included."""
        yield from self.active
        yield from self.successful
        yield from self.failed
        yield from self.previous


def job_failure(job: ChildJob) -> JobFailure | None:
    """Return why `job` is failing, or None. FailureTarget counts (fix of upstream #979)."""
    target: JobCondition | None = None
    final: JobCondition | None = None
    for cond in job.conditions:
        if cond.status != "True":
            continue
        if cond.type == _FAILURE_TARGET:
            target = cond
        elif cond.type == _FAILED:
            final = cond
    if target is None:
        return None if final is None else _failure(final, final)
    # The Job controller copies Failed's reason onto FailureTarget, but other Job writers (a
    # test harness, a custom controller, an older Kubernetes) may leave FailureTarget without
    # one: then rules match on Failed's reason and message, as upstream (which reads only
    # Failed) effectively does. The failure still dates from FailureTarget, the earlier sign.
    described = final if final is not None and not target.reason else target
    return _failure(described, target)


def _failure(described: JobCondition, dated: JobCondition) -> JobFailure:
    return JobFailure(described.reason, described.message, dated.last_transition_time)


def job_succeeded(job: ChildJob) -> bool:
    """Return whether `job` completed (Complete=True, or SuccessCriteriaMet=True already)."""
    return any(
        cond.status == "True" and cond.type in (_COMPLETE, _SUCCESS_CRITERIA_MET)
        for cond in job.conditions
    )


def _is_previous(
    job: ChildJob,
    restarts: int,
    job_restarts: Mapping[str, Sequence[int]] | None,
) -> bool:
    if job.restart_attempt is None or job.restart_attempt < restarts:
        return True
    if job_restarts is None:
        return False
    targets = job_restarts.get(job.rjob, ())
    index = job.job_index
    if index is None or not 0 <= index < len(targets):
        return False
    # upstream only logs a missing per-Job label; the Job then stays current
    return job.job_restart_attempt is not None and job.job_restart_attempt < targets[index]


def job_group(
    job: ChildJob,
    jobset_uid: str,
    restarts: int,
    job_restarts: Mapping[str, Sequence[int]] | None = None,
) -> Literal["active", "successful", "failed", "previous"] | None:
    """Return the group `classify_child_jobs` puts `job` in; None for a Job of another owner."""
    if job.controller_uid != jobset_uid:
        return None
    if _is_previous(job, restarts, job_restarts):
        return "previous"
    if job_failure(job) is not None:
        return "failed"
    if job_succeeded(job):
        return "successful"
    return "active"


def classify_child_jobs(
    jobs: Iterable[ChildJob],
    jobset_uid: str,
    restarts: int,
    job_restarts: Mapping[str, Sequence[int]] | None = None,
) -> ChildJobs:
    """Classify the Jobs controlled by `jobset_uid`; Jobs of other owners are ignored (#1167).

    `job_restarts` (RestartJob gate only) maps a replicated job name to its per-index restart
    targets (status.replicatedJobsStatus[].jobRestarts). Pure; one pass over the Jobs.
    """
    groups: dict[str | None, list[ChildJob]] = {
        "active": [], "successful": [], "failed": [], "previous": [], None: []
    }
    for job in jobs:
        groups[job_group(job, jobset_uid, restarts, job_restarts)].append(job)
    return ChildJobs(tuple(groups["active"]), tuple(groups["successful"]),
                     tuple(groups["failed"]), tuple(groups["previous"]))
