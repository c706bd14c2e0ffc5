"""Execution attempts (KEP-1282, gate ExecutionAttemptsTracking; upstream's main branch).

`status.executionAttempts` counts the JobSet's executions: 0 for the first run, one more for
every restart that recreates all Jobs and for every resume after a suspension (a Kueue eviction
and readmission), so log pipelines can tell the runs apart. Jobs and their pod templates carry
it as the annotation `jobset.sigs.k8s.io/execution-attempt` (0 while it is unset), set when a
Job is created or resumed, in the same write as the resume, so no Pod starts with a stale one.

As the KEP says: unset while the JobSet never ran; a JobSet already running when tracking starts
(restarts, or Jobs running) starts from its restart count; one created suspended starts at 0 on
its first resume. Where the KEP is silent, what we chose:
* "active child Jobs" of its upgrade rule are Jobs that run (not suspended): a JobSet suspended
  before the upgrade starts at 0 on its resume, as the KEP's own example of such JobSets says;
* a resume is counted in the pass that resumes the first Job after a suspension (every Job is
  suspended then), so an InOrder resume that takes several passes counts once; a Job already
  running again carries the count of its resume, so a pass whose status write failed is
  counted again with the same value, never twice;
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
    if suspended or not cond.is_true(conditions, c.CONDITION_SUSPENDED):
        return current
    # A resume: counted in the pass that resumes the first Job. A Job already running again
    # was resumed by an earlier pass of this resume, with the count it carries (more than
    # `current` when that pass's status write failed).
    carried = [_carried(job) for job in running]
    return max(current, *carried) if carried else current + 1


def _carried(job: ChildJob) -> int:
    try:
        return int(job.annotations.get(c.EXECUTION_ATTEMPT_KEY, "-1"))
    except ValueError:
        return -1


def after_restart(current: int | None, restarts_before: int) -> int:
    """The value after a restart that recreates every Job (RestartJobSet*)."""
    return (restarts_before if current is None else current) + 1


def annotation_value(current: int | None) -> str:
    """The annotation's value: the count, 0 while it is unset."""
    return str(current or 0)
