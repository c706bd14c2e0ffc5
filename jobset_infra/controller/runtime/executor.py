"""Carry out a core `Plan` against the API server, once, in order.

1. Runs of the same action kind execute in parallel, bounded (default 50, upstream's
   MaxParallelism); the first failed run stops the plan and the key is retried with backoff.
   Job creates and deletes go through one congestion window shared by every JobSet
   (`congestion`, AIMD as TCP's): it opens as fast as the server answers and halves when it
   throttles (429, APF), times out or answers slowly. A JobSet new to this process, or whose
   last create failed, sends its first create alone: a failing JobSet (quota, admission, a
   refused template) stops after one failed create instead of a window of them, and the
   creates it did not send are no longer expected. A lazy create's manifest is built as it is
   sent, so a pass holds only the manifests in flight.
2. Creates and deletes are recorded as expectations *before* they are sent, so the informer event
   that answers them can never race past the bookkeeping.
3. The status is one optimistic-concurrency PUT; a 409 means our view was stale: requeue.
4. Events and metric increments run only after that write succeeded, so a retried pass never
   double-counts. The only events made up here are upstream's immediate creation failures.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, TypeVar

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import (
    Action,
    CreateJob,
    CreatePVC,
    CreateService,
    DeleteJob,
    DeleteJobs,
    DeleteJobSet,
    EmitEvent,
    IncrementMetric,
    Plan,
    RecordDomainFailure,
    RequeueAfter,
    UpdateJob,
    UpdateStatus,
)
from jobset_infra.controller.runtime.congestion import Answer, CongestionWindow
from jobset_infra.controller.runtime.events import Event, EventRecorder, creation_failed_event
from jobset_infra.controller.runtime.expectations import Expectations
from jobset_infra.controller.runtime.kube import (
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    AlreadyExistsError,
    AnswerHook,
    ApiError,
    ConflictError,
    InvalidError,
    KubeClient,
    NotFoundError,
)
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.ratelimit import Clock
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, PVCS, SERVICES
from jobset_infra.controller.runtime.write_gate import WriteGate
from jobset_infra.placement.pool_health import DomainFailure

log = logging.getLogger(__name__)
A = TypeVar("A")
PROVEN_CAPACITY = 4096


@dataclass
class Outcome:
    """What executing a plan did (for the reconcile result and tests)."""

    writes: int = 0
    status_written: bool = False
    requeue_after: float | None = None


class PlanExecutor:
    def __init__(
        self,
        client: KubeClient,
        expectations: Expectations,
        recorder: EventRecorder,
        metrics: Metrics,
        *,
        max_parallelism: int = 50,
        clock: Clock = time.monotonic,
        on_jobset_written: Callable[[dict[str, Any]], None] | None = None,
        on_job_written: Callable[[dict[str, Any]], None] | None = None,
        on_job_created: Callable[[dict[str, Any]], None] | None = None,
        job_created_wanted: Callable[[dict[str, Any]], bool] | None = None,
        on_domain_failures: Callable[[list[DomainFailure]], Awaitable[None]] | None = None,
        window: CongestionWindow | None = None,
    ) -> None:
        self.client = client
        self.expectations = expectations
        self.recorder = recorder
        self.metrics = metrics
        self.max_parallelism = max_parallelism
        self._clock = clock
        self._on_jobset_written = on_jobset_written
        self._on_job_written = on_job_written
        self._on_job_created = on_job_created
        # which creates `on_job_created` needs the stored Job of (default: all); the answers to
        # the others, and to every Job delete, are not decoded (a Job's JSON is ~100 us of CPU)
        self._created_wanted = job_created_wanted
        self._on_domain_failures = on_domain_failures
        self.gate = WriteGate(window or CongestionWindow(ceiling=max_parallelism),
                              self._window_moved)
        self._cuts_seen = 0
        self._size_seen = self.gate.window.size
        metrics.job_write_window.set(self._size_seen)
        # JobSets whose last Job create succeeded: their creates go straight to the window.
        # Bounded; a key forgotten early only sends one create alone again.
        self._proven: OrderedDict[Hashable, None] = OrderedDict()
        self._counters = {
            c.METRIC_COMPLETED_TOTAL: metrics.jobset_completed,
            c.METRIC_FAILED_TOTAL: metrics.jobset_failed,
        }

    async def execute(self, key: Hashable, jobset: dict[str, Any], plan: Plan) -> Outcome:
        """Run `plan` for JobSet `key` (cached manifest `jobset`). Raises the first API error."""
        outcome = Outcome(requeue_after=plan.requeue_after)
        status_ok = True
        for kind, run in groupby(plan.actions, key=type):
            actions = list(run)
            if kind is UpdateStatus:
                status_ok = await self._update_status(jobset, actions[0], outcome)
            elif kind in (EmitEvent, IncrementMetric):
                if status_ok:
                    self._after_status(actions)
            elif kind is not RequeueAfter:
                await self._run_writes(key, kind, actions, outcome)
        return outcome

    # --- writes ----------------------------------------------------------------------------------

    async def _run_writes(
        self, key: Hashable, kind: type, actions: list[Action], outcome: Outcome
    ) -> None:
        if kind is CreateJob:
            creates = [a for a in actions if isinstance(a, CreateJob)]
            self.expectations.expect(key, self._clock(), creates={a.name: None for a in creates})
            await self._create_all(key, creates, outcome)
        elif kind is DeleteJob:
            deletes = [a for a in actions if isinstance(a, DeleteJob)]
            self.expectations.expect(key, self._clock(), deletes={a.uid for a in deletes})
            errors, _ = await self._gated(
                deletes, lambda a, hook: self._delete_job(key, a, outcome, hook), stop=False)
            if errors:
                raise errors[0]
        elif kind is DeleteJobs:
            for collection in (a for a in actions if isinstance(a, DeleteJobs)):
                await self._delete_jobs(key, collection, outcome)
        elif kind is UpdateJob:
            updates = [a for a in actions if isinstance(a, UpdateJob)]
            await self._parallel(updates, lambda a: self._update_job(a, outcome))
        elif kind is CreateService:
            for service in (a for a in actions if isinstance(a, CreateService)):
                await self._create_service(service, outcome)
        elif kind is CreatePVC:
            for pvc in (a for a in actions if isinstance(a, CreatePVC)):
                await self._create_pvc(pvc, outcome)
        elif kind is RecordDomainFailure:
            if self._on_domain_failures is not None:
                failures = [a.failure for a in actions if isinstance(a, RecordDomainFailure)]
                await self._on_domain_failures(failures)
        elif kind is DeleteJobSet:
            for delete in (a for a in actions if isinstance(a, DeleteJobSet)):
                await self._delete_jobset(delete, outcome)
        else:  # a new action kind the core added: fail loudly rather than skip it silently
            raise TypeError(f"no executor for plan action {kind.__name__}")

    async def _parallel(self, actions: Sequence[A], run: Callable[[A], Awaitable[None]]) -> None:
        """Run all `actions` with at most `max_parallelism` in flight; raise the first error."""
        items = iter(actions)
        errors: list[BaseException] = []

        async def lane() -> None:
            for action in items:
                try:
                    await run(action)
                except ApiError as err:
                    errors.append(err)

        lanes = min(self.max_parallelism, len(actions))
        await asyncio.gather(*(lane() for _ in range(lanes)))
        if errors:
            raise errors[0]

    def _window_moved(self, verdict: Answer) -> None:
        """Report the congestion window after an answer (its size when it changed, any cut)."""
        window = self.gate.window
        if window.size != self._size_seen:  # most answers leave it at its ceiling
            self._size_seen = window.size
            self.metrics.job_write_window.set(window.size)
        if window.cuts > self._cuts_seen:
            self.metrics.job_write_window_cuts.inc(window.cuts - self._cuts_seen)
            self._cuts_seen = window.cuts

    def forget(self, key: Hashable) -> None:
        """The JobSet `key` is gone: a new object by that name sends its first create alone."""
        self._proven.pop(key, None)

    async def _gated(
        self,
        actions: Sequence[A],
        run: Callable[[A, AnswerHook], Awaitable[None]],
        *,
        stop: bool,
    ) -> tuple[list[ApiError], list[A]]:
        """Run `actions` through the congestion window on up to `max_parallelism` lanes; return
        the API errors and, with `stop` (nothing more is sent after a failure), the unsent."""
        items = iter(actions)
        errors: list[ApiError] = []
        unsent: list[A] = []

        async def send(action: A, hook: AnswerHook) -> None:
            if stop and errors:
                unsent.append(action)
                return
            try:
                await run(action, hook)
            except ApiError as err:
                errors.append(err)

        async def lane() -> None:
            for action in items:
                await self.gate.send(functools.partial(send, action))

        await asyncio.gather(*(lane() for _ in range(min(self.max_parallelism, len(actions)))))
        return errors, unsent

    async def _create_all(
        self, key: Hashable, creates: Sequence[CreateJob], outcome: Outcome
    ) -> None:
        """Create through the window (a JobSet not proven yet: its first create alone); after a
        failure send nothing more, mark the unsent creates as observed so the next pass is not
        held back, and raise the first error."""
        def create(action: CreateJob, hook: AnswerHook) -> Awaitable[None]:
            return self._create_job(key, action, outcome, hook)

        first: Sequence[CreateJob] = () if key in self._proven else creates[:1]
        errors, unsent = await self._gated(first, create, stop=True)
        rest = creates[len(first):]
        if errors:
            unsent = list(rest)
        else:
            more, unsent = await self._gated(rest, create, stop=True)
            errors += more
        self._remember(key, not errors)
        for skipped in unsent:
            self.expectations.observe_create(key, skipped.name)
        if errors:
            raise errors[0]

    def _remember(self, key: Hashable, succeeded: bool) -> None:
        if not succeeded:
            self._proven.pop(key, None)
            return
        self._proven[key] = None
        self._proven.move_to_end(key)
        while len(self._proven) > PROVEN_CAPACITY:
            self._proven.popitem(last=False)

    async def _create_job(
        self, key: Hashable, action: CreateJob, outcome: Outcome, on_answer: AnswerHook
    ) -> None:
        manifest = action.manifest  # a lazy create's manifest lives only while it is sent
        wanted = self._on_job_created is not None and (
            self._created_wanted is None or self._created_wanted(manifest))
        try:
            created = await self.client.create(JOBS, manifest, on_answer=on_answer,
                                               decode=wanted)
        except AlreadyExistsError:
            self.expectations.observe_create(key, action.name)  # exists: no ADDED will come
            return
        except ApiError as err:
            self.expectations.observe_create(key, action.name)
            self._creation_failed(manifest, c.JOB_CREATION_FAILED_EVENT, err)
            raise
        outcome.writes += 1
        if wanted and self._on_job_created is not None:
            self._on_job_created(created)

    async def _delete_job(
        self, key: Hashable, action: DeleteJob, outcome: Outcome, on_answer: AnswerHook
    ) -> None:
        try:
            await self.client.delete(
                JOBS,
                action.name,
                namespace=action.namespace,
                propagation=action.propagation,
                uid=action.uid,
                on_answer=on_answer,
                decode=False,  # the answer is not used
            )
        except (NotFoundError, ConflictError):  # gone, or a different object by now
            self.expectations.observe_delete(key, action.uid)
            return
        except ApiError:
            self.expectations.observe_delete(key, action.uid)
            raise
        outcome.writes += 1

    async def _delete_jobs(self, key: Hashable, action: DeleteJobs, outcome: Outcome) -> None:
        """One deletecollection request; the server deletes each Job the selector picks."""
        self.expectations.expect(key, self._clock(), deletes=set(action.uids))
        try:
            await self.client.delete_collection(
                JOBS, action.namespace, action.label_selector, propagation=action.propagation,
                decode=False,  # the list of the Jobs deleted is not used
            )
        except ApiError:
            # none of it may have happened: the next pass sees which Jobs are left
            for uid in action.uids:
                self.expectations.observe_delete(key, uid)
            raise
        outcome.writes += 1

    async def _update_job(self, action: UpdateJob, outcome: Outcome) -> None:
        if action.clear_start_time:
            await self.client.patch(
                JOBS,
                action.name,
                {"status": {"startTime": None}},
                namespace=action.namespace,
                subresource="status",
            )
            outcome.writes += 1
        patch = copy.deepcopy(action.patch)
        patch.setdefault("metadata", {})["resourceVersion"] = action.resource_version
        kind = STRATEGIC_MERGE_PATCH if action.strategic else MERGE_PATCH
        try:
            updated = await self.client.patch(
                JOBS, action.name, patch, namespace=action.namespace, content_type=kind
            )
        except InvalidError as err:
            if action.on_refusal is not None:
                event = action.on_refusal
                note = event.message.format(error=err.message or err)
                self.recorder.emit(Event(event.regarding, event.type, event.reason, note))
            raise
        outcome.writes += 1
        if self._on_job_written:
            self._on_job_written(updated)

    async def _create_service(self, action: CreateService, outcome: Outcome) -> None:
        try:
            await self.client.create(SERVICES, action.manifest)
        except AlreadyExistsError:
            return
        except ApiError as err:
            self._creation_failed(action.manifest, c.HEADLESS_SERVICE_CREATION_FAILED_EVENT, err)
            raise
        outcome.writes += 1

    async def _create_pvc(self, action: CreatePVC, outcome: Outcome) -> None:
        try:
            await self.client.create(PVCS, action.manifest)
        except AlreadyExistsError:
            return
        except ApiError as err:
            self._creation_failed(action.manifest, c.PVC_CREATION_FAILED_EVENT, err)
            raise
        outcome.writes += 1

    async def _delete_jobset(self, action: DeleteJobSet, outcome: Outcome) -> None:
        try:
            await self.client.delete(
                JOBSETS,
                action.name,
                namespace=action.namespace,
                propagation=action.propagation,
                uid=action.uid,
            )
        except (NotFoundError, ConflictError):
            return
        outcome.writes += 1

    async def _update_status(
        self, jobset: dict[str, Any], action: Action, outcome: Outcome
    ) -> bool:
        assert isinstance(action, UpdateStatus)
        body = {key: value for key, value in jobset.items() if key != "status"}
        body["metadata"] = {
            **jobset.get("metadata", {}),
            "resourceVersion": action.resource_version,
        }
        body["status"] = action.status
        written = await self.client.replace(JOBSETS, body, subresource="status")  # 409 -> raise
        outcome.writes += 1
        outcome.status_written = True
        if self._on_jobset_written:
            self._on_jobset_written(written)
        return True

    # --- after the status write ------------------------------------------------------------------

    def _after_status(self, actions: Iterable[Action]) -> None:
        for action in actions:
            if isinstance(action, EmitEvent):
                self.recorder.emit(
                    Event(action.regarding, action.type, action.reason, action.message)
                )
            elif isinstance(action, IncrementMetric):
                counter = self._counters.get(action.name)
                if counter is None:
                    log.warning("plan asked for unknown metric %s", action.name)
                    continue
                counter.labels(**dict(action.labels)).inc()

    def _creation_failed(self, manifest: dict[str, Any], reason: str, err: ApiError) -> None:
        event = creation_failed_event(manifest, reason, err.message or str(err))
        if event is not None:
            self.recorder.emit(event)
