"""Execution attempts (KEP-1282, gate ExecutionAttemptsTracking; upstream's main branch).

`status.executionAttempts` counts the JobSet's executions: 0 for the first run, one more for
every restart that recreates all Jobs and for every resume after a suspension (a Kueue eviction
and readmission), so log pipelines can tell the runs apart. Jobs and their pod templates carry
it as the annotation `jobset.sigs.k8s.io/execution-attempt`, set when a Job is created or
resumed, in the same write as the resume, so no Pod starts with a stale one. A Job created while
the count is unset (a JobSet created suspended) carries none until its first resume: a Job
carrying the annotation has run in the execution it names.

As the KEP says: unset while the JobSet never ran; a JobSet already running when tracking starts
(restarts, or Jobs running) starts from its restart count; one created suspended starts at 0 on
its first resume. Where the KEP is silent, what we chose:
* "active child Jobs" of its upgrade rule are Jobs that run (not suspended): a JobSet suspended
  before the upgrade starts at 0 on its resume, as the KEP's own example of such JobSets says;
* the Jobs are the witness, not the JobSet's own status: a resume is a pass where the JobSet is
  not suspended, no Job runs and suspended Jobs carry the execution they ran in, and it counts
  one more than that. So a suspension whose status write was lost (the JobSet resumed before the
  `Suspended` condition was written) is still counted, a resume that takes several passes
  (InOrder, a refused write, placement holding Jobs) is counted once, and a Job already running
  again carries the count of its resume, which the status catches up with if its write failed;
* RestartJob (one Job recreated) and in-place restarts are not counted: the KEP counts restarts
  that recreate all Jobs, and neither changes `status.restarts` either.
Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from jobset_infra.api import constants as c
from jobset_infra.api.status import Condition
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.classify import ChildJobs
from jobset_infra.controller.core.types import ChildJob

__all__ = ["after_restart", "annotation_value", "execution_attempts"]


def execution_attempts(
    current: int | None,
    *,
    restarts: int,
    suspended: bool,
    jobs: ChildJobs,
    conditions: Sequence[Condition],
) -> int | None:
    """The value for this pass: initialised, or one more when a resume starts in this pass."""
    running = [job for job in jobs.active if not job.suspend]
    if current is None:
        if restarts > 0 or running:
            return restarts  # tracking starts on a JobSet that already ran
        return None if suspended else 0
    if suspended:
        return current
    if running:
        # Running Jobs were created or resumed with the count of their execution: more than
        # `current` when the status write of that pass failed.
        return max(current, *(_carried(job) for job in running))
    ran = [_carried(job) for job in jobs.active if job.suspend and _carried(job) >= 0]
    if ran:
        return max(current, max(ran) + 1)  # a resume of Jobs that ran: the next execution
    # Suspended Jobs that never ran (or none at all): only a recorded suspension counts.
    return current + 1 if cond.is_true(conditions, c.CONDITION_SUSPENDED) else current


def _carried(job: ChildJob) -> int:
    """The execution the Job runs or ran in; -1 when it carries none (or not a number)."""
    try:
        return int(job.annotations.get(c.EXECUTION_ATTEMPT_KEY, "-1"))
    except ValueError:
        return -1


def after_restart(current: int | None, restarts_before: int) -> int:
    """The value after a restart that recreates every Job (RestartJobSet*)."""
    return (restarts_before if current is None else current) + 1


def annotation_value(current: int | None) -> str | None:
    """The annotation's value: the count; None (no annotation) while it is unset."""
    return None if current is None else str(current)
