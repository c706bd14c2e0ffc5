"""The working state of one reconcile pass: a draft of the new status and the actions so far.

A `Draft` lives only inside one `reconcile` call, so reconcile stays a pure function: it is
created from the observed state, the named steps add to it, and `plan()` turns it into the
immutable Plan. Upstream's equivalent is the JobSet status mutated in place plus
`statusUpdateOpts` (queued events, whether to write).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from jobset_infra.api import constants as c
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.exclusive_placement import placement_stopped
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

_COUNT_TOWARDS_MAX = "restartsCountTowardsMax"
_RJOB_STATUS = "replicatedJobsStatus"


def normalized_status(js: JobSet) -> dict[str, Any]:
    """Return the JobSet's status as plain data, in the shape this core writes it.

    `restarts` is always present and replicatedJobsStatus is sorted by name, descending (the
    order upstream persists), so comparing with a freshly computed status never sees churn.
    """
    status = js.status.to_dict() if js.status is not None else {}
    status.setdefault("restarts", 0)
    status.setdefault("conditions", [])
    status[_RJOB_STATUS] = sorted(
        status.get(_RJOB_STATUS, []), key=lambda s: str(s.get("name", "")), reverse=True
    )
    return status


def _semantic(status: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in status.items() if v != [] or k not in ("conditions", _RJOB_STATUS)}


@dataclass
class Draft:
    """The mutable working copy of one pass: new status, writes, and post-write effects."""

    observed: Observed
    now: datetime
    config: CoreConfig
    status: dict[str, Any]
    original: dict[str, Any]
    writes: list[Action] = field(default_factory=list)
    events: list[EmitEvent] = field(default_factory=list)
    metrics: list[IncrementMetric] = field(default_factory=list)
    requeue: list[float] = field(default_factory=list)
    last: list[Action] = field(default_factory=list)

    @classmethod
    def begin(cls, observed: Observed, now: datetime, config: CoreConfig) -> Draft:
        """Start a pass from the observed JobSet status (`now` normalised to aware UTC)."""
        now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
        original = normalized_status(observed.jobset)
        status = normalized_status(observed.jobset)
        return cls(observed, now, config, status, original)

    # -- reading ----------------------------------------------------------------------------

    @property
    def js(self) -> JobSet:
        """The JobSet being reconciled."""
        return self.observed.jobset

    @property
    def conditions(self) -> list[dict[str, Any]]:
        """The draft's status.conditions (mutable)."""
        conds: list[dict[str, Any]] = self.status["conditions"]
        return conds

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
        for entry in self.status[_RJOB_STATUS]:
            if "jobRestarts" in entry:
                job_restarts[entry["name"]] = tuple(entry["jobRestarts"])
            if "jobRestartsCountTowardsMax" in entry:
                towards[entry["name"]] = tuple(entry["jobRestartsCountTowardsMax"])
        return RestartCounters(
            restarts=int(self.status.get("restarts", 0)),
            counts_towards_max=int(self.status.get(_COUNT_TOWARDS_MAX, 0)),
            job_restarts=job_restarts,
            job_restarts_towards_max=towards,
        )

    # -- writing ----------------------------------------------------------------------------

    def set_condition(self, spec: ConditionSpec) -> None:
        """Set a condition with upstream's semantics; queue its event when it changed."""
        if cond.set_condition(self.conditions, spec, self.now):
            self.event(spec.event_type, spec.reason, spec.message)

    def event(self, type_: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        """Queue an event about the JobSet, emitted after the status write."""
        self.events.append(EmitEvent(type_, reason, message, self._ref()))

    def set_counters(self, counters: RestartCounters) -> None:
        """Write restart accounting into the draft status."""
        self.status["restarts"] = counters.restarts
        if counters.counts_towards_max or _COUNT_TOWARDS_MAX in self.status:
            self.status[_COUNT_TOWARDS_MAX] = counters.counts_towards_max
        for entry in self.status[_RJOB_STATUS]:
            if entry["name"] in counters.job_restarts:
                entry["jobRestarts"] = list(counters.job_restarts[entry["name"]])
            if entry["name"] in counters.job_restarts_towards_max:
                towards = counters.job_restarts_towards_max[entry["name"]]
                entry["jobRestartsCountTowardsMax"] = list(towards)

    def fail(self, failed: ConditionSpec) -> None:
        """Mark the JobSet Failed (upstream setJobSetFailedCondition)."""
        self.set_condition(failed)
        self.set_condition(cond.restarting_stopped(c.JOBSET_FAILED_REASON))
        self.set_condition(placement_stopped(c.JOBSET_FAILED_REASON))
        self.status["terminalState"] = c.CONDITION_FAILED
        self._count(c.METRIC_FAILED_TOTAL)

    def complete(self) -> None:
        """Mark the JobSet Completed (upstream setJobSetCompletedCondition)."""
        self.set_condition(cond.completed())
        self.set_condition(cond.restarting_stopped(c.JOBSET_COMPLETED_REASON))
        self.set_condition(placement_stopped(c.JOBSET_COMPLETED_REASON))
        self.status["terminalState"] = c.CONDITION_COMPLETED
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
        if _semantic(self.status) != _semantic(self.original):
            meta = self.js.metadata
            actions.append(
                UpdateStatus(
                    self.js.namespace, self.js.name, meta.resource_version or "", self.status
                )
            )
            actions.extend(self.events)
            actions.extend(self.metrics)
        actions.extend(self.last)
        if self.requeue:
            actions.append(RequeueAfter(min(self.requeue)))
        return Plan(tuple(actions))

    def _ref(self) -> ObjectRef:
        meta = self.js.metadata
        return ObjectRef(c.KIND, c.API_VERSION, self.js.namespace, self.js.name, meta.uid or "")

    def _count(self, metric: str) -> None:
        labels = (
            (c.METRIC_LABEL_JOBSET_NAME, self.js.name),
            (c.METRIC_LABEL_NAMESPACE, self.js.namespace),
        )
        self.metrics.append(IncrementMetric(metric, labels))
