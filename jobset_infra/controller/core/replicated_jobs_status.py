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

from jobset_infra.api.models import ReplicatedJob
from jobset_infra.api.status import ReplicatedJobStatus
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
    carried: Mapping[str, ReplicatedJobStatus] | None = None,
) -> list[ReplicatedJobStatus]:
    """Return the status list (sorted by name, descending) for `counts`.

    `carried` (RestartJob gate) maps a replicated job to its previous entry, whose `jobRestarts`
    and `jobRestartsCountTowardsMax` arrays are carried forward.
    """
    out: list[ReplicatedJobStatus] = []
    for name in sorted(counts, reverse=True):
        n = counts[name]
        previous = (carried or {}).get(name)
        restarts = {}
        if previous is not None:
            restarts = {
                k: list(v)
                for k in ("job_restarts", "job_restarts_count_towards_max")
                if (v := getattr(previous, k)) is not None
            }
        out.append(
            ReplicatedJobStatus(
                name=name,
                ready=n.ready,
                succeeded=n.succeeded,
                failed=n.failed,
                active=n.active,
                suspended=n.suspended,
                **restarts,
            )
        )
    return out
