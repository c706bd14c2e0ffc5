"""Elastic JobSets (upstream gate ElasticJobSet, `syncJobScaling` l.837-905): when a replicated
job's template changes parallelism and completions together, live Jobs are patched to match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from jobset_infra.api.models import ReplicatedJob
from jobset_infra.controller.core.types import ChildJob, UpdateJob

__all__ = ["scaling_updates"]


def scaling_updates(
    rjobs: Iterable[ReplicatedJob], active: Iterable[ChildJob]
) -> tuple[UpdateJob, ...]:
    """Return patches for active Jobs whose parallelism/completions differ from their template.

    Only templates with parallelism == completions are propagated, as upstream.
    """
    wanted: Mapping[str, int] = {
        rjob.name: p
        for rjob in rjobs
        if isinstance(p := (rjob.template.get("spec") or {}).get("parallelism"), int)
        and (rjob.template.get("spec") or {}).get("completions") == p
    }
    updates = []
    for job in active:
        size = wanted.get(job.rjob)
        if size is None or (job.parallelism == size and job.completions == size):
            continue
        patch = {"spec": {"parallelism": size, "completions": size}}
        updates.append(
            UpdateJob(job.namespace, job.name, job.resource_version, patch, why="elastic scaling")
        )
    return tuple(updates)
