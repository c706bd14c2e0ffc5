"""status.replicatedJobsStatus: per replicated job counts of the current attempt's Jobs
(upstream `calculateReplicatedJobStatuses`, jobset_controller.go l.458-560).

* every replicated job in the spec gets an entry, even before its Jobs exist;
* an active Job is `ready` when succeeded + ready pods reach min(parallelism, completions),
  `active` when it has active pods, `suspended` when spec.suspend is set;
* successful and failed Jobs count as `succeeded` / `failed`; previous attempts are not counted;
* Jobs without a known replicated-job label are skipped;
* the list is sorted by name, descending, as upstream persists it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobset_infra.api.models import ReplicatedJob
from jobset_infra.controller.core.classify import ChildJobs
from jobset_infra.controller.core.types import ChildJob

__all__ = [
    "RJobCounts",
    "count_replicated_jobs",
    "is_ready",
    "replicated_jobs_status",
]


@dataclass(slots=True)
class RJobCounts:
    """Counts of one replicated job's current-attempt Jobs."""

    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    active: int = 0
    suspended: int = 0


def is_ready(job: ChildJob) -> bool:
    """Return whether all pods a Job needs are ready or done (upstream's `ready` rule)."""
    parallelism = 1 if job.parallelism is None else job.parallelism
    needed = parallelism if job.completions is None else min(parallelism, job.completions)
    return job.succeeded + job.ready >= needed


def count_replicated_jobs(rjobs: Sequence[ReplicatedJob], jobs: ChildJobs) -> dict[str, RJobCounts]:
    """Return counts for every replicated job in spec order. Pure; one pass over the Jobs."""
    counts = {rjob.name: RJobCounts() for rjob in rjobs}
    for job in jobs.active:
        entry = counts.get(job.rjob)
        if entry is None:
            continue
        entry.ready += is_ready(job)
        entry.active += job.active > 0
        entry.suspended += job.suspend
    for group, field in ((jobs.successful, "succeeded"), (jobs.failed, "failed")):
        for job in group:
            entry = counts.get(job.rjob)
            if entry is not None:
                setattr(entry, field, getattr(entry, field) + 1)
    return counts


def replicated_jobs_status(
    counts: Mapping[str, RJobCounts],
    job_restarts: Mapping[str, Mapping[str, list[int]]] | None = None,
) -> list[dict[str, Any]]:
    """Return the status list (sorted by name, descending) for `counts`.

    `job_restarts` (RestartJob gate) maps a replicated job to its `jobRestarts` and
    `jobRestartsCountTowardsMax` arrays, which are carried forward.
    """
    out: list[dict[str, Any]] = []
    for name in sorted(counts, reverse=True):
        n = counts[name]
        entry: dict[str, Any] = {
            "name": name,
            "ready": n.ready,
            "succeeded": n.succeeded,
            "failed": n.failed,
            "active": n.active,
            "suspended": n.suspended,
        }
        if job_restarts is not None:
            entry.update({k: list(v) for k, v in job_restarts.get(name, {}).items()})
        out.append(entry)
    return out
