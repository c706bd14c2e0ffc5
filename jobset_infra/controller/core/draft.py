"""The working state of one reconcile pass: a draft of the new status and the actions so far.

A `Draft` lives only inside one `reconcile` call, so reconcile stays a pure function: it is
created from the observed state, the named steps add to it, and `plan()` turns it into the
immutable Plan. Upstream's equivalent is the JobSet status mutated in place plus
`statusUpdateOpts` (queued events, whether to write).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature
from jobset_infra.api.models import JobSet
from jobset_infra.api.status import Condition, JobSetStatus, ReplicatedJobStatus
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.exclusive_placement import placement_stopped
from jobset_infra.controller.core.execution_attempts import annotation_value
from jobset_infra.controller.core.failure_policy import RestartCounters
from jobset_infra.controller.core.types import (
    Action,
    CoreConfig,
    EmitEvent,
    IncrementMetric,
    ObjectRef,
    Observed,
    Plan,
    RequeueAfter,
    UpdateStatus,
)

__all__ = ["Draft", "normalized_status"]

# Written even when empty; an empty one compares equal to an absent one (wire names).
_LISTS = tuple(
    JobSetStatus.model_fields[name].alias or name
    for name in ("conditions", "replicated_jobs_status")
)


def normalized_status(js: JobSet) -> JobSetStatus:
    """Return the JobSet's status in the shape this core writes it.

    `restarts`, `conditions` and `replicatedJobsStatus` are always written, the latter sorted
    by name, descending (the order upstream persists), so comparing with a freshly computed
    status never sees churn.
    """
    status = js.status or JobSetStatus()
    return status.model_copy(
        update={
            "restarts": status.restarts,
            "conditions": list(status.conditions),
            "replicated_jobs_status": sorted(
                status.replicated_jobs_status, key=lambda s: s.name, reverse=True
            ),
        }
    )


_COUNTS = JobSetStatus.model_fields["replicated_jobs_status"].alias or "replicated_jobs_status"
_COUNT_FIELDS = frozenset(
    ReplicatedJobStatus.model_fields[name].alias or name
    for name in ("ready", "succeeded", "failed", "active", "suspended"))


def _semantic(status: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in status.items() if v != [] or k not in _LISTS}


def _without_counts(status: dict[str, Any]) -> dict[str, Any]:
    """The status but its replicated jobs' five counts (their names and per-Job restarts kept)."""
    entries = [{k: v for k, v in entry.items() if k not in _COUNT_FIELDS}
               for entry in status.get(_COUNTS) or ()]
    return {**_semantic(status), _COUNTS: entries}


@dataclass
class Draft:
    """The mutable working copy of one pass: new status, writes, and post-write effects."""

    observed: Observed[JobSet]
    now: datetime
    config: CoreConfig
    status: JobSetStatus
    original: dict[str, Any]
    """The status as observed, in its wire form: the status is written when it changed."""
    writes: list[Action] = field(default_factory=list)
    events: list[EmitEvent] = field(default_factory=list)
    metrics: list[IncrementMetric] = field(default_factory=list)
    requeue: list[float] = field(default_factory=list)
    last: list[Action] = field(default_factory=list)

    @classmethod
    def begin(cls, observed: Observed[JobSet], now: datetime, config: CoreConfig) -> Draft:
        """Start a pass from the observed JobSet status (`now` normalised to aware UTC)."""
        now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
        status = normalized_status(observed.jobset)
        return cls(observed, now, config, status, status.to_dict())

    # -- reading ----------------------------------------------------------------------------

    @property
    def js(self) -> JobSet:
        """The JobSet being reconciled."""
        return self.observed.jobset

    @property
    def conditions(self) -> Sequence[Condition]:
        """The draft's status.conditions."""
        return self.status.conditions

    @property
    def finished(self) -> bool:
        """Whether the JobSet is Completed or Failed."""
        return cond.is_true(self.conditions, c.CONDITION_COMPLETED) or cond.is_true(
            self.conditions, c.CONDITION_FAILED
        )

    @property
    def suspended(self) -> bool:
        """Whether spec.suspend is set."""
        return self.js.spec.suspend is True

    @property
    def counters(self) -> RestartCounters:
        """The restart accounting currently in the draft."""
        job_restarts: dict[str, tuple[int, ...]] = {}
        towards: dict[str, tuple[int, ...]] = {}
        for entry in self.status.replicated_jobs_status:
            if entry.job_restarts is not None:
                job_restarts[entry.name] = tuple(entry.job_restarts)
            if entry.job_restarts_count_towards_max is not None:
                towards[entry.name] = tuple(entry.job_restarts_count_towards_max)
        return RestartCounters(
            restarts=self.status.restarts,
            counts_towards_max=self.status.restarts_count_towards_max or 0,
            job_restarts=job_restarts,
            job_restarts_towards_max=towards,
        )

    # -- writing ----------------------------------------------------------------------------

    def set_condition(self, spec: ConditionSpec) -> None:
        """Set a condition with upstream's semantics; queue its event when it changed."""
        conditions = cond.set_condition(self.conditions, spec, self.now)
        if conditions is not None:
            self._update(conditions=conditions)
            self.event(spec.event_type, spec.reason, spec.message)

    def event(self, type_: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        """Queue an event about the JobSet, emitted after the status write."""
        self.events.append(EmitEvent(type_, reason, message, self._ref()))

    def warning(self, reason: str, message: str) -> EmitEvent:
        """A Warning about the JobSet, for an action to emit itself (not queued here)."""
        return EmitEvent("Warning", reason, message, self._ref())

    def set_counters(self, counters: RestartCounters) -> None:
        """Write restart accounting into the draft status."""
        update: dict[str, Any] = {"restarts": counters.restarts}
        if counters.counts_towards_max or self.status.restarts_count_towards_max is not None:
            update["restarts_count_towards_max"] = counters.counts_towards_max
        update["replicated_jobs_status"] = [
            _with_job_restarts(entry, counters) for entry in self.status.replicated_jobs_status
        ]
        self._update(**update)

    def set_in_place_restart_attempts(self, current: int | None, previous: int | None) -> None:
        """Set current/previousInPlaceRestartAttempt (None leaves a field as it is)."""
        update = {}
        if current is not None:
            update["current_in_place_restart_attempt"] = current
        if previous is not None:
            update["previous_in_place_restart_attempt"] = previous
        if update:
            self._update(**update)

    def set_execution_attempts(self, value: int | None) -> None:
        """Set status.executionAttempts (None leaves it unset)."""
        if value is not None and value != self.status.execution_attempts:
            self._update(execution_attempts=value)

    @property
    def execution_attempt(self) -> str | None:
        """The execution-attempt annotation new and resumed Jobs get; None with the gate off."""
        if not self.config.enabled(Feature.EXECUTION_ATTEMPTS):
            return None
        return annotation_value(self.status.execution_attempts)

    def set_replicated_jobs_status(self, entries: Sequence[ReplicatedJobStatus]) -> None:
        """Replace status.replicatedJobsStatus."""
        self._update(replicated_jobs_status=list(entries))

    def fail(self, failed: ConditionSpec) -> None:
        """Mark the JobSet Failed (upstream setJobSetFailedCondition)."""
        self.set_condition(failed)
        self.set_condition(cond.restarting_stopped(c.JOBSET_FAILED_REASON))
        self.set_condition(placement_stopped(c.JOBSET_FAILED_REASON))
        self._update(terminal_state=c.CONDITION_FAILED)
        self._count(c.METRIC_FAILED_TOTAL)

    def complete(self) -> None:
        """Mark the JobSet Completed (upstream setJobSetCompletedCondition)."""
        self.set_condition(cond.completed())
        self.set_condition(cond.restarting_stopped(c.JOBSET_COMPLETED_REASON))
        self.set_condition(placement_stopped(c.JOBSET_COMPLETED_REASON))
        self._update(terminal_state=c.CONDITION_COMPLETED)
        self._count(c.METRIC_COMPLETED_TOTAL)

    def add(self, *actions: Action) -> None:
        """Append writes (Job/Service changes) in order."""
        self.writes.extend(actions)

    def add_last(self, action: Action) -> None:
        """Append an action that runs after the status write (deleting the JobSet itself)."""
        self.last.append(action)

    def requeue_after(self, seconds: float) -> None:
        """Ask for another pass after `seconds`."""
        self.requeue.append(seconds)

    # -- result -----------------------------------------------------------------------------

    def plan(self) -> Plan:
        """Return the immutable plan: writes, the status write, events and metrics, then last."""
        actions: list[Action] = list(self.writes)
        status = self.status.to_dict()
        if _semantic(status) != _semantic(self.original):
            meta = self.js.metadata
            counts_only = _without_counts(status) == _without_counts(self.original)
            actions.append(UpdateStatus(self.js.namespace, self.js.name,
                                        meta.resource_version or "", status, counts_only))
            actions.extend(self.events)
            actions.extend(self.metrics)
        actions.extend(self.last)
        if self.requeue:
            actions.append(RequeueAfter(min(self.requeue)))
        return Plan(tuple(actions))

    def _update(self, **fields: Any) -> None:
        # The status model is frozen: each change makes the next one (and marks the fields set,
        # so they are written).
        self.status = self.status.model_copy(update=fields)

    def _ref(self) -> ObjectRef:
        meta = self.js.metadata
        return ObjectRef(c.KIND, c.API_VERSION, self.js.namespace, self.js.name, meta.uid or "")

    def _count(self, metric: str) -> None:
        labels = (
            (c.METRIC_LABEL_JOBSET_NAME, self.js.name),
            (c.METRIC_LABEL_NAMESPACE, self.js.namespace),
        )
        self.metrics.append(IncrementMetric(metric, labels))


def _with_job_restarts(
    entry: ReplicatedJobStatus, counters: RestartCounters
) -> ReplicatedJobStatus:
    update: dict[str, list[int]] = {}
    if entry.name in counters.job_restarts:
        update["job_restarts"] = list(counters.job_restarts[entry.name])
    if entry.name in counters.job_restarts_towards_max:
        update["job_restarts_count_towards_max"] = list(
            counters.job_restarts_towards_max[entry.name]
        )
    return entry.model_copy(update=update) if update else entry
