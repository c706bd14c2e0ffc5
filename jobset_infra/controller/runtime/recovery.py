"""Recovery time and time in phase, per JobSet, as metrics (the runtime half of core/recovery).

After each reconcile the controller hands the tracker the JobSet, its child Jobs and the plan.
The tracker keeps, per JobSet, its phase and since when, and an open recovery (the first
failure's time and cause); `jobset_phase_seconds_total{phase}` counts the phases that ended and,
at each scrape, the open ones so far; counts a new recovery in
`jobset_restarts_by_cause_total{cause}`, and when every Job runs again observes
`jobset_recovery_seconds{cause}`. The state is memory, but a recovery under way when this
process first sees a JobSet (after a restart or a leader change) is read back from cluster state
(`core.recovery.resumed_recovery`: the JobSet's `RestartingJobSet` condition and the
slice-health ledger) and measured from then; the previous leader already counted it in
`jobset_restarts_by_cause_total`, so this one does not. Wall-clock time, as the failure times in
Job conditions are.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobset_infra.controller.core.child_tally import ChildTally
from jobset_infra.controller.core.job_view import ChildJob
from jobset_infra.controller.core.recovery import (
    Failure,
    Phase,
    failures_of,
    phase_of,
    resumed_recovery,
)
from jobset_infra.controller.core.types import Plan
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.placement.pool_health import DomainFailure

__all__ = ["RecoveryTracker"]


@dataclass
class _State:
    phase: Phase
    since: datetime
    failed: Failure | None = None
    seen: set[str] = field(default_factory=set)


class RecoveryTracker:
    """Per-JobSet phase and open recovery, turned into metrics."""

    def __init__(self, metrics: Metrics, wall: Callable[[], datetime],
                 tallies: Mapping[str, ChildTally] | None = None,
                 ledger: Callable[[], Iterable[DomainFailure]] = tuple) -> None:
        self.metrics = metrics
        self._wall = wall
        self._ledger = ledger  # the slice-health ledger as loaded (causes of open recoveries)
        # JobSet uid -> its children's tally: the controller's own dict, kept by its events
        self._tallies = tallies if tallies is not None else {}
        self._states: dict[Hashable, _State] = {}
        metrics.phase_seconds.open_seconds = self.open_seconds

    def open_seconds(self) -> dict[str, float]:
        """The time so far of every JobSet's current phase, by phase (at scrape time)."""
        now, out = self._wall(), dict[str, float]()
        for state in self._states.values():
            if state.phase is not Phase.FINISHED:
                seconds = max(0.0, (now - state.since).total_seconds())
                out[state.phase.value] = out.get(state.phase.value, 0.0) + seconds
        return out

    def observe(self, key: Hashable, jobset: Mapping[str, Any], jobs: Sequence[ChildJob],
                plan: Plan, now: datetime) -> None:
        """Account for one reconcile of `key` at `now`, from the JobSet's tally when one is
        kept in step with `jobs` (then the pass walks none of them)."""
        meta = jobset.get("metadata")
        tally = self._tallies.get(meta.get("uid", "")) if isinstance(meta, Mapping) else None
        if tally is not None and len(tally) != len(jobs):
            tally = None
        phase = phase_of(jobset, jobs, tally.ready_in if tally is not None else None)
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _State(phase, now)
            if phase is not Phase.FINISHED:
                state.failed = resumed_recovery(jobset, self._ledger())
        elif state.phase is not Phase.FINISHED:
            elapsed = max(0.0, (now - state.since).total_seconds())
            self.metrics.phase_seconds.add(state.phase.value, elapsed)
        state.phase, state.since = phase, now
        for failure in failures_of(jobs if tally is None else tally.failing(), plan):
            if failure.job_uid in state.seen:
                continue
            state.seen.add(failure.job_uid)
            if state.failed is None:
                state.failed = failure if failure.at is not None else Failure(
                    failure.job_uid, now, failure.cause)
                self.metrics.restarts_by_cause.labels(cause=failure.cause.value).inc()
        if state.failed is not None and phase is Phase.RUNNING:
            assert state.failed.at is not None
            took = max(0.0, (now - state.failed.at).total_seconds())
            self.metrics.recovery_seconds.labels(cause=state.failed.cause.value).observe(took)
            state.failed = None
            state.seen.clear()  # the failed Jobs are gone; their UIDs never come back
        if phase is Phase.FINISHED:
            state.failed = None

    def forget(self, key: Hashable) -> None:
        """Drop a deleted JobSet's state (its open phase's time so far is counted)."""
        state = self._states.pop(key, None)
        if state is not None and state.phase is not Phase.FINISHED:
            elapsed = max(0.0, (self._wall() - state.since).total_seconds())
            self.metrics.phase_seconds.add(state.phase.value, elapsed)
