"""A JobSet's children classified and counted one Job event at a time, so a pass over a JobSet of
N Jobs does not classify and count all N again (issue 33).

The runtime keeps a `ChildTally` per JobSet, applies each of its child Job events to it
(`apply`: O(1)) and hands it to the pass in `Observed.tally`. Which group a Job is in depends on
the JobSet's uid, its restart count and (RestartJob gate) its per-Job restart targets: the
tally's `basis`. A pass uses the tally only when it was kept for the basis the pass computes
(`tally_basis`), and classifies and counts every Job itself otherwise; the runtime then builds a
new tally for the new basis (once per restart). Held equal to the full recomputation by
tests/controller/core/test_child_tally.py.

Pure: no I/O, no clock. A tally is mutable data the runtime owns; a pass only reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from jobset_infra.api.features import Feature
from jobset_infra.api.models import JobSet, ReplicatedJob
from jobset_infra.controller.core.classify import ChildJobs, job_group
from jobset_infra.controller.core.draft import normalized_status
from jobset_infra.controller.core.replicated_jobs_status import RJobCounts, is_ready
from jobset_infra.controller.core.types import ChildJob, CoreConfig

__all__ = ["ChildTally", "TallyBasis", "tally_basis"]

_Group = Literal["active", "successful", "failed", "previous"]
_GROUPS: tuple[_Group, ...] = ("active", "successful", "failed", "previous")


@dataclass(frozen=True, slots=True)
class TallyBasis:
    """What classifying a child depends on besides the child itself."""

    jobset_uid: str
    restarts: int
    job_restarts: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    """Per replicated job, its per-index restart targets (RestartJob gate); None: gate off."""

    @classmethod
    def of(
        cls, jobset_uid: str, restarts: int, job_restarts: Mapping[str, Sequence[int]] | None
    ) -> TallyBasis:
        """The basis for these classification inputs."""
        targets = None
        if job_restarts is not None:
            targets = tuple(sorted((k, tuple(v)) for k, v in job_restarts.items()))
        return cls(jobset_uid, restarts, targets)

    def targets(self) -> dict[str, tuple[int, ...]] | None:
        """The per-Job restart targets as `classify_child_jobs` takes them."""
        return None if self.job_restarts is None else dict(self.job_restarts)


def tally_basis(js: JobSet, config: CoreConfig) -> TallyBasis:
    """The basis a pass over `js` (as stored: its status as the pass starts) classifies on."""
    status = normalized_status(js)
    job_restarts = None
    if config.enabled(Feature.RESTART_JOB):
        job_restarts = {
            entry.name: tuple(entry.job_restarts)
            for entry in status.replicated_jobs_status
            if entry.job_restarts is not None
        }
    return TallyBasis.of(js.metadata.uid or "", status.restarts, job_restarts)


class ChildTally:
    """The children of one JobSet by group, and the counts status.replicatedJobsStatus shows."""

    __slots__ = ("_counts", "_groups", "_targets", "_where", "basis")

    def __init__(self, basis: TallyBasis, jobs: Iterable[ChildJob] = ()) -> None:
        self.basis = basis
        self._targets = basis.targets()
        self._where: dict[str, _Group] = {}  # Job name -> its group
        self._groups: dict[_Group, dict[str, ChildJob]] = {g: {} for g in _GROUPS}
        self._counts: dict[str, RJobCounts] = {}
        for job in jobs:
            self.apply(None, job)

    def __len__(self) -> int:
        """Children tallied (Jobs of other owners are not)."""
        return len(self._where)

    def apply(self, old: ChildJob | None, new: ChildJob | None) -> None:
        """A child Job event: `old` (None: added) became `new` (None: deleted)."""
        if old is not None:
            self._remove(old.name)
        if new is not None:
            self._remove(new.name)
            group = job_group(new, self.basis.jobset_uid, self.basis.restarts, self._targets)
            if group is not None:
                self._where[new.name] = group
                self._groups[group][new.name] = new
                self._count(new, group, 1)

    def child_jobs(self) -> ChildJobs:
        """The children by group, as `classify_child_jobs` returns them (order aside)."""
        groups = self._groups
        return ChildJobs(
            tuple(groups["active"].values()),
            tuple(groups["successful"].values()),
            tuple(groups["failed"].values()),
            tuple(groups["previous"].values()),
        )

    def counts(self, rjobs: Sequence[ReplicatedJob]) -> dict[str, RJobCounts]:
        """The counts of every replicated job in spec order, as `count_replicated_jobs`."""
        out: dict[str, RJobCounts] = {}
        for rjob in rjobs:
            kept = self._counts.get(rjob.name)
            out[rjob.name] = RJobCounts() if kept is None else RJobCounts(
                kept.ready, kept.succeeded, kept.failed, kept.active, kept.suspended)
        return out

    def _remove(self, name: str) -> None:
        group = self._where.pop(name, None)
        if group is not None:
            self._count(self._groups[group].pop(name), group, -1)

    def _count(self, job: ChildJob, group: _Group, sign: int) -> None:
        if group == "previous":
            return
        entry = self._counts.setdefault(job.rjob, RJobCounts())
        if group == "active":
            entry.ready += sign * is_ready(job)
            entry.active += sign * (job.active > 0)
            entry.suspended += sign * job.suspend
        elif group == "successful":
            entry.succeeded += sign
        else:
            entry.failed += sign
