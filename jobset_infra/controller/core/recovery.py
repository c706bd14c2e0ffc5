"""Where a JobSet is in its life, and which failures start a recovery (pure; no I/O, no clock).

The runtime's recovery tracker (`controller/runtime/recovery.py`) turns these into the
resilience metrics: time in each phase, failures by cause, and the time from a failure to every
Job running again, by cause.

* `phase_of`: `queued` (suspended: waiting for Kueue or a person), `admitted` (resumed, but not
  every Job of the current attempt exists with all its pods ready: placement, scheduling, pod
  start, a restart under way), `running` (every Job ready), `finished` (Completed or Failed).
* `failures_of`: the child Jobs failing now, each once by UID, with a cause: the one the
  reconcile recorded against the Job's pool (with node evidence) when there is one, else what
  the Job's failure condition says (`placement.failure_cause.diagnose`).
* `resumed_recovery`: a recovery that started before this process saw the JobSet (a restart,
  a new leader), read from cluster state: `RestartingJobSet=True` since the pass that restarted
  it, with the cause the slice-health ledger recorded for one of its Jobs by then.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any, TypeGuard

from jobset_infra.api import constants as c
from jobset_infra.api.resilience import Cause
from jobset_infra.controller.core.classify import job_failure
from jobset_infra.controller.core.job_view import parse_time
from jobset_infra.controller.core.types import ChildJob, Plan, RecordDomainFailure
from jobset_infra.placement.failure_cause import diagnose
from jobset_infra.placement.pool_health import DomainFailure

__all__ = ["Failure", "Phase", "failures_of", "phase_of", "ready_in_attempt",
           "resumed_recovery"]

# A failure is recorded in the ledger in the pass that restarts the JobSet, before its status
# write: at most this much before the condition's (whole-second) time, allowing for clocks.
_LEDGER_SLACK = timedelta(minutes=5)


class Phase(StrEnum):
    """A JobSet's phase for the time-in-phase metric (a bounded label set)."""

    QUEUED = "queued"
    ADMITTED = "admitted"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class Failure:
    """A child Job failing, since when, and why."""

    job_uid: str
    at: datetime | None
    cause: Cause


def phase_of(
    jobset: Mapping[str, Any], jobs: Iterable[ChildJob],
    ready_in: Callable[[int], int | None] | None = None,
) -> Phase:
    """Return the JobSet's phase from its manifest and its child Jobs. The manifest is the
    stored object as it is, which may be malformed (the controller reports that as InvalidSpec):
    any shape gives a phase, never an error. `ready_in(attempt)`: how many of `jobs` are
    `ready_in_attempt` (a tally kept from their events: `child_tally`), or None: count them."""
    status = _mapping(jobset.get("status"))
    for entry in _list(status.get("conditions")):
        cond = _mapping(entry)
        if cond.get("type") in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) and \
                cond.get("status") == "True":
            return Phase.FINISHED
    spec = _mapping(jobset.get("spec"))
    if spec.get("suspend") is True:
        return Phase.QUEUED
    expected = _expected_jobs(spec)
    restarts = status.get("restarts")
    attempt = restarts if _count(restarts) else 0
    ready = ready_in(attempt) if ready_in is not None else None
    if ready is None:
        ready = sum(1 for j in jobs if ready_in_attempt(j, attempt))
    return Phase.RUNNING if expected and ready >= expected else Phase.ADMITTED


def ready_in_attempt(job: ChildJob, attempt: int) -> bool:
    """Whether `job` counts towards `running`: of restart `attempt`, not deleting, suspended or
    failing, and with all its pods ready (or succeeded)."""
    return (job.deletion_timestamp is None and not job.suspend
            and job.restart_attempt == attempt and job_failure(job) is None
            and job.ready + job.succeeded >= _pods(job))


def _expected_jobs(spec: Mapping[str, Any]) -> int:
    """The Jobs the spec asks for; 0 (never `running`) when a replica count is not a count."""
    total = 0
    for rjob in _list(spec.get("replicatedJobs")):
        replicas = _mapping(rjob).get("replicas", 1)
        if not _count(replicas):
            return 0
        total += replicas
    return total


def _count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _pods(job: ChildJob) -> int:
    parallelism = 1 if job.parallelism is None else job.parallelism
    return parallelism if job.completions is None else min(parallelism, job.completions)


def failures_of(jobs: Iterable[ChildJob], plan: Plan) -> tuple[Failure, ...]:
    """Return each failing child Job with its cause (the pool's evidence when recorded).
    `jobs` may leave out Jobs that cannot be failing (`ChildTally.failing`)."""
    recorded = {a.failure.job_uid: a.failure for a in plan.actions
                if isinstance(a, RecordDomainFailure)}
    out = []
    for job in jobs:
        failure = job_failure(job)
        if failure is None or job.deletion_timestamp is not None:
            continue
        found = recorded.get(job.uid)
        cause = found.cause if found is not None else diagnose(failure.reason,
                                                               failure.message).cause
        out.append(Failure(job.uid, failure.since, cause))
    return tuple(out)


def resumed_recovery(jobset: Mapping[str, Any], ledger: Iterable[DomainFailure]
                     ) -> Failure | None:
    """Return the recovery under way when this process first sees the JobSet, or None.

    Open while `RestartingJobSet` is True (a restart of the whole JobSet not yet running
    again), since that condition's lastTransitionTime; its cause is the last failure `ledger`
    recorded for a Job of this JobSet up to then (infrastructure causes stay there long
    enough), else `unknown`.
    """
    status = _mapping(jobset.get("status"))
    since = None
    for entry in _list(status.get("conditions")):
        cond = _mapping(entry)
        if cond.get("type") == c.CONDITION_RESTARTING and cond.get("status") == "True":
            since = parse_time(cond.get("lastTransitionTime"))
    if since is None:
        return None
    meta = _mapping(jobset.get("metadata"))
    prefixes = tuple(f"{meta.get('namespace', '')}/{meta.get('name', '')}-{name}-"
                     for rjob in _list(_mapping(jobset.get("spec")).get("replicatedJobs"))
                     if isinstance(name := _mapping(rjob).get("name"), str))
    found = [f for f in ledger if prefixes and f.job.startswith(prefixes)
             and since - _LEDGER_SLACK <= f.at <= since + timedelta(seconds=1)]
    cause = max(found, key=lambda f: f.at).cause if found else Cause.UNKNOWN
    return Failure("", since, cause)
