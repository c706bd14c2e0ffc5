"""A JobSet's children classified and counted one Job event at a time, so a pass over a JobSet of
N Jobs does not classify and count all N again (issue 33).

The runtime keeps a `ChildTally` per JobSet, applies each of its child Job events to it
(`apply`: O(1)) and hands it to the pass in `Observed.tally`. Which group a Job is in depends on
the JobSet's uid, its restart count and (RestartJob gate) its per-Job restart targets: the
tally's `basis`. A pass uses the tally only when it was kept for the basis the pass computes
(`tally_basis`), and classifies and counts every Job itself otherwise; the runtime then builds a
new tally for the new basis (once per restart). Held equal to the full recomputation by
tests/controller/core/test_child_tally.py.

Besides the groups and counts, the tally keeps what other per-pass walks over every child ask,
each held equal to its full recomputation by the same tests:
* `covers`: whether every Job a replicated job names exists (the missing-Job check of step 15
  then builds no names: a settled pass at N=2,048 spent three quarters of its time on them);
* `names`: the children's names, as that check compares them;
* `ready_in`: the Jobs `recovery.phase_of` counts ready (the recovery metrics' phase);
* `failing`: the only Jobs `recovery.failures_of` can find failing;
* `unsuspended`: the active Jobs not suspended, the only ones step 16 suspends;
* `sized_otherwise`: the active Jobs of a replicated job whose parallelism or completions
  differ from a size, the only ones elastic scaling (step 14) patches.

Pure: no I/O, no clock. A tally is mutable data the runtime owns; a pass only reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, KeysView, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Literal

from jobset_infra.api.features import Feature
from jobset_infra.api.job_names import child_job_name
from jobset_infra.api.models import JobSet, ReplicatedJob
from jobset_infra.controller.core.classify import ChildJobs, job_group
from jobset_infra.controller.core.draft import Draft, normalized_status
from jobset_infra.controller.core.recovery import ready_in_attempt
from jobset_infra.controller.core.replicated_jobs_status import RJobCounts, is_ready
from jobset_infra.controller.core.types import ChildJob, CoreConfig

__all__ = ["ChildTally", "TallyBasis", "kept_tally", "tally_basis"]

_Group = Literal["active", "successful", "failed", "previous"]
_GROUPS: tuple[_Group, ...] = ("active", "successful", "failed", "previous")
_Size = tuple[int | None, int | None]


@dataclass(frozen=True, slots=True)
class TallyBasis:
    """What classifying a child depends on besides the child itself."""

    jobset_uid: str
    restarts: int
    job_restarts: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    """Per replicated job, its per-index restart targets (RestartJob gate); None: gate off."""
    jobset_name: str = ""
    """The JobSet's name, which its Jobs' names start with ("": `covers` is never sure)."""

    @classmethod
    def of(
        cls, jobset_uid: str, restarts: int, job_restarts: Mapping[str, Sequence[int]] | None,
        jobset_name: str = "",
    ) -> TallyBasis:
        """The basis for these classification inputs."""
        targets = None
        if job_restarts is not None:
            targets = tuple(sorted((k, tuple(v)) for k, v in job_restarts.items()))
        return cls(jobset_uid, restarts, targets, jobset_name)

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
    meta = js.metadata
    return TallyBasis.of(meta.uid or "", status.restarts, job_restarts, meta.name or "")


def kept_tally(draft: Draft) -> ChildTally | None:
    """The observed tally if it classifies as this pass would, else None."""
    tally = draft.observed.tally
    if not isinstance(tally, ChildTally) or tally.basis != tally_basis(draft.js, draft.config):
        return None
    return tally


class ChildTally:
    """The children of one JobSet by group, and the counts status.replicatedJobsStatus shows."""

    __slots__ = ("_counts", "_groups", "_indexes", "_jobs", "_ready", "_running", "_sizes",
                 "_sorted", "_targets", "_where", "basis")

    def __init__(self, basis: TallyBasis, jobs: Iterable[ChildJob] = ()) -> None:
        self.basis = basis
        self._targets = basis.targets()
        self._where: dict[str, _Group] = {}  # Job name -> its group
        self._groups: dict[_Group, dict[str, ChildJob]] = {g: {} for g in _GROUPS}
        self._counts: dict[str, RJobCounts] = {}
        # replicated job -> [how many, sum] of the indexes of the Jobs named as that index's
        self._indexes: dict[str, list[int]] = {}
        self._ready = 0  # Jobs `ready_in_attempt(job, basis.restarts)`
        self._running: dict[str, ChildJob] = {}  # active Jobs not suspended, by name
        # replicated job -> (parallelism, completions) -> its active Jobs of that size, by name
        self._sizes: dict[str, dict[_Size, dict[str, ChildJob]]] = {}
        # what `jobs` and `child_jobs` last returned, until the next event: a pass with no
        # event since the last one walks nothing
        self._jobs: tuple[ChildJob, ...] | None = None
        self._sorted: ChildJobs | None = None
        for job in jobs:
            self.apply(None, job)

    def __len__(self) -> int:
        """Children tallied (Jobs of other owners are not)."""
        return len(self._where)

    def apply(self, old: ChildJob | None, new: ChildJob | None) -> None:
        """A child Job event: `old` (None: added) became `new` (None: deleted)."""
        self._jobs = self._sorted = None
        if old is not None:
            self._remove(old.name)
        if new is not None:
            self._remove(new.name)
            group = job_group(new, self.basis.jobset_uid, self.basis.restarts, self._targets)
            if group is not None:
                self._where[new.name] = group
                self._groups[group][new.name] = new
                self._count(new, group, 1)
                self._index(new, 1)
                if group == "active":
                    self._add_active(new)

    def child_jobs(self) -> ChildJobs:
        """The children by group, as `classify_child_jobs` returns them (order aside)."""
        if self._sorted is None:
            groups = self._groups
            self._sorted = ChildJobs(
                tuple(groups["active"].values()),
                tuple(groups["successful"].values()),
                tuple(groups["failed"].values()),
                tuple(groups["previous"].values()),
            )
        return self._sorted

    def jobs(self) -> tuple[ChildJob, ...]:
        """Every child tallied (what the runtime's snapshot of the JobSet's Jobs holds)."""
        if self._jobs is None:
            self._jobs = tuple(chain.from_iterable(g.values() for g in self._groups.values()))
        return self._jobs

    def counts(self, rjobs: Sequence[ReplicatedJob]) -> dict[str, RJobCounts]:
        """The counts of every replicated job in spec order, as `count_replicated_jobs`."""
        out: dict[str, RJobCounts] = {}
        for rjob in rjobs:
            kept = self._counts.get(rjob.name)
            out[rjob.name] = RJobCounts() if kept is None else RJobCounts(
                kept.ready, kept.succeeded, kept.failed, kept.active, kept.suspended)
        return out

    def names(self) -> KeysView[str]:
        """The names of the children tallied (every group), as a set."""
        return self._where.keys()

    def covers(self, rjob: str, replicas: int) -> bool:
        """Whether a child named `<jobset>-<rjob>-<i>` exists for every i below `replicas`.
        False says nothing (the caller checks name by name): a child named so that does not
        carry its index in its labels, or children past `replicas`, make it False."""
        if not self.basis.jobset_name:
            return False
        count, total = self._indexes.get(rjob, (0, 0))
        # distinct indexes >= 0: `replicas` of them sum to at least 0+1+...+(replicas-1),
        # exactly when they are those
        return count == replicas and total == replicas * (replicas - 1) // 2

    def ready_in(self, attempt: int) -> int | None:
        """How many children `recovery.phase_of` counts ready in restart `attempt` (None: the
        tally counts for another attempt)."""
        return self._ready if attempt == self.basis.restarts else None

    def failing(self) -> Iterable[ChildJob]:
        """The children that can be failing (a failing Job is in no other group)."""
        return chain(self._groups["failed"].values(), self._groups["previous"].values())

    def unsuspended(self) -> Iterable[ChildJob]:
        """The active children not suspended (what suspending the JobSet patches)."""
        return self._running.values()

    def sized_otherwise(self, rjob: str, size: int) -> Iterable[ChildJob]:
        """The active children of `rjob` whose parallelism or completions is not `size` (what
        elastic scaling patches): none walked when every one has that size."""
        wanted = (size, size)
        sizes = self._sizes.get(rjob, {})
        return chain.from_iterable(jobs.values() for key, jobs in sizes.items() if key != wanted)

    def _add_active(self, job: ChildJob) -> None:
        if not job.suspend:
            self._running[job.name] = job
        sizes = self._sizes.get(job.rjob)
        if sizes is None:
            sizes = self._sizes[job.rjob] = {}
        key = (job.parallelism, job.completions)
        jobs = sizes.get(key)
        if jobs is None:
            jobs = sizes[key] = {}
        jobs[job.name] = job

    def _remove_active(self, job: ChildJob) -> None:
        self._running.pop(job.name, None)
        sizes = self._sizes[job.rjob]
        key = (job.parallelism, job.completions)
        del sizes[key][job.name]
        if not sizes[key]:  # emptied sizes are dropped: a scaled JobSet keeps no old buckets
            del sizes[key]

    def _remove(self, name: str) -> None:
        group = self._where.pop(name, None)
        if group is not None:
            job = self._groups[group].pop(name)
            self._count(job, group, -1)
            self._index(job, -1)
            if group == "active":
                self._remove_active(job)

    def _index(self, job: ChildJob, sign: int) -> None:
        self._ready += sign * ready_in_attempt(job, self.basis.restarts)
        index = job.job_index
        if index is None or index < 0:
            return
        if job.name != child_job_name(self.basis.jobset_name, job.rjob, index):
            return
        entry = self._indexes.get(job.rjob)
        if entry is None:
            entry = self._indexes[job.rjob] = [0, 0]
        entry[0] += sign
        entry[1] += sign * index

    def _count(self, job: ChildJob, group: _Group, sign: int) -> None:
        if group == "previous":
            return
        entry = self._counts.get(job.rjob)
        if entry is None:  # not setdefault: that builds a RJobCounts on every event
            entry = self._counts[job.rjob] = RJobCounts()
        if group == "active":
            entry.ready += sign * is_ready(job)
            entry.active += sign * (job.active > 0)
            entry.suspended += sign * job.suspend
        elif group == "successful":
            entry.succeeded += sign
        else:
            entry.failed += sign
