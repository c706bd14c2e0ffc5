"""Elastic JobSets (upstream gate ElasticJobSet, `syncJobScaling` l.837-905): when a replicated
job's template changes parallelism and completions together, live Jobs are patched to match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from itertools import chain

from jobset_infra.api.models import ReplicatedJob
from jobset_infra.controller.core.types import ChildJob, UpdateJob

__all__ = ["SizedOtherwise", "scaling_updates", "wanted_sizes"]

SizedOtherwise = Callable[[str, int], Iterable[ChildJob]]
"""The active Jobs of a replicated job whose parallelism or completions is not a size (the
runtime's tally answers it without walking the Jobs of the right size)."""


def wanted_sizes(rjobs: Iterable[ReplicatedJob]) -> dict[str, int]:
    """The size each replicated job's Jobs should have; only templates with parallelism ==
    completions are propagated, as upstream."""
    return {
        rjob.name: p
        for rjob in rjobs
        if isinstance(p := (rjob.template.get("spec") or {}).get("parallelism"), int)
        and (rjob.template.get("spec") or {}).get("completions") == p
    }


def scaling_updates(
    rjobs: Iterable[ReplicatedJob],
    active: Iterable[ChildJob],
    sized_otherwise: SizedOtherwise | None = None,
) -> tuple[UpdateJob, ...]:
    """Return patches for active Jobs whose parallelism/completions differ from their template,
    ordered by replicated job, index and name (the same whichever way the Jobs were found).

    `sized_otherwise`, when given, finds the Jobs to patch instead of a walk over `active`.
    """
    wanted = wanted_sizes(rjobs)
    if sized_otherwise is None:
        off: Iterable[ChildJob] = (job for job in active if _off(job, wanted))
    else:
        off = chain.from_iterable(sized_otherwise(name, size) for name, size in wanted.items())
    return tuple(_patch(job, wanted[job.rjob]) for job in sorted(off, key=_order))


def _off(job: ChildJob, wanted: Mapping[str, int]) -> bool:
    size = wanted.get(job.rjob)
    return size is not None and (job.parallelism != size or job.completions != size)


def _order(job: ChildJob) -> tuple[str, int, str]:
    return job.rjob, -1 if job.job_index is None else job.job_index, job.name


def _patch(job: ChildJob, size: int) -> UpdateJob:
    patch = {"spec": {"parallelism": size, "completions": size}}
    return UpdateJob(job.namespace, job.name, job.resource_version, patch, why="elastic scaling")
