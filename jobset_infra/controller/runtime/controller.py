"""The JobSet controller shell: caches -> work queue -> decide (pure core) -> execute the plan.

Informers run on every replica (warm standbys); workers run only on the leader. A reconcile
reads only caches; the only API calls are the plan's writes. Reconciles of JobSets that ask for
exclusive topology are serialized under one lock (occupancy -> decide -> create), and occupancy
counts Jobs created or re-pinned but not yet seen by the informer (held_domains.py), so two
JobSets never get the same domain.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
import uuid
from collections.abc import Callable, Hashable
from typing import Any

from jobset_infra.api.controller_config import ControllerConfig, PlacementMode
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core.child_tally import ChildTally, tally_basis
from jobset_infra.controller.core.status_pacing import paced
from jobset_infra.controller.core.types import Manifest, Observed, Plan
from jobset_infra.controller.runtime.cache_health import CacheState, readiness
from jobset_infra.controller.runtime.caches import (
    NAMESPACE_INDEX,
    OWNER_UID_INDEX,
    CachedJob,
    CachedName,
    CachedService,
    ForeignJob,
    TakenNames,
    cache_job,
    cache_jobset,
    cache_name,
    cache_service,
    cached_child,
    jobset_namespace,
    jobset_uid,
    newly_failed,
    only_counts_changed,
    owner_uid,
    same_but_bookkeeping,
    service_name,
)
from jobset_infra.controller.runtime.decider import Decide, core_config, core_decider
from jobset_infra.controller.runtime.events import EventRecorder
from jobset_infra.controller.runtime.executor import Outcome, PlanExecutor
from jobset_infra.controller.runtime.expectations import Expectations
from jobset_infra.controller.runtime.held_domains import HeldDomains, freed_domain
from jobset_infra.controller.runtime.informer import Informer, object_key
from jobset_infra.controller.runtime.kube import ApiError, ConflictError, KubeClient
from jobset_infra.controller.runtime.logs import FIELDS
from jobset_infra.controller.runtime.metrics import CONTROLLER_NAME, Metrics
from jobset_infra.controller.runtime.pod_watch import (
    JobPods,
    jobset_pods,
    pod_handler,
    pod_informer,
)
from jobset_infra.controller.runtime.ratelimit import Clock, ItemBackoff
from jobset_infra.controller.runtime.recovery import RecoveryTracker
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, NODES, PVCS, SERVICES
from jobset_infra.controller.runtime.slice_health import SliceHealthLedger
from jobset_infra.controller.runtime.spec_cache import SpecCache
from jobset_infra.controller.runtime.workqueue import QueueShutDownError, WorkQueue
from jobset_infra.placement.inputs import (
    PlacementInputs,
    needs_exclusive_placement,
    placement_inputs,
)
from jobset_infra.placement.jobs import asks_exclusive_placement
from jobset_infra.placement.nodes import SlimNode, slim_node_from_manifest

log = logging.getLogger(__name__)


WallClock = Callable[[], datetime.datetime]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class JobSetController:
    def __init__(
        self,
        client: KubeClient,
        config: ControllerConfig,
        metrics: Metrics,
        recorder: EventRecorder,
        *,
        decide: Decide | None = None,
        clock: Clock = time.monotonic,
        wall: WallClock = _utcnow,
    ) -> None:
        tuning = config.controller
        self.config = config
        self.metrics = metrics
        self._core = core_config(config)
        self.specs = SpecCache(self._core)
        self._tallies: dict[str, ChildTally] = {}  # JobSet uid -> its children, kept per event
        self._status_written: dict[Hashable, float] = {}  # key -> our last status write (clock)
        self.decide = decide or core_decider(self._core, self.specs, self._tally_for)
        self._clock = clock
        self._wall = wall
        self._batch_period = tuning.child_event_batch_period
        self._make_informers(client, tuning.watch_namespace or None)
        self.health = SliceHealthLedger.for_config(client, config, metrics, wall)
        self.job_pods = JobPods(client, self._core)
        self.queue = WorkQueue(
            CONTROLLER_NAME, metrics, ItemBackoff(tuning.backoff_base, tuning.backoff_max)
        )
        self.expectations = Expectations(tuning.expectations_timeout)
        self.placement_lock = asyncio.Lock()
        self.held = HeldDomains()
        self.executor = PlanExecutor(
            client,
            self.expectations,
            recorder,
            metrics,
            max_parallelism=tuning.max_parallelism,
            clock=clock,
            on_jobset_written=self.jobsets.write_through,
            on_job_written=self.jobs.write_through,
            on_job_created=self.held.record_created,
            job_created_wanted=asks_exclusive_placement,  # what `record_created` reads
            on_domain_failures=self.health.record,
        )
        self.recovery = RecoveryTracker(metrics, self._wall, self._tallies,
                                        ledger=lambda: self.health.failures)
        self.reconciles = 0
        metrics.initialise()
        self._wire_handlers()

    def _make_informers(self, client: KubeClient, namespace: str | None) -> None:
        clock = self._clock
        self.jobsets: Informer[dict[str, Any]] = Informer(
            client, JOBSETS, cache_jobset, namespace=namespace, clock=clock,
            indexers={NAMESPACE_INDEX: jobset_namespace},
        )
        # Every Job, as upstream's owner index: children are found by their controller's UID,
        # never by a label a user can remove; other Jobs are cached as a name only (they may
        # hold a name a child needs).
        self.jobs: Informer[CachedJob | ForeignJob] = Informer(
            client,
            JOBS,
            cache_job,
            namespace=namespace,
            indexers={OWNER_UID_INDEX: owner_uid},
            clock=clock,
        )
        self.services: Informer[CachedService] = Informer(
            client, SERVICES, cache_service, namespace=namespace, clock=clock
        )
        self.pvcs: Informer[CachedName] = Informer(
            client,
            PVCS,
            cache_name,
            namespace=namespace,
            indexers={NAMESPACE_INDEX: lambda p: (p.namespace,)},
            required=False,
            degrades="volumeClaimPolicies' claims are created without knowing which exist",
            clock=clock,
        )
        self.pods = pod_informer(client, namespace, clock, self.config.gates())
        self.nodes: Informer[SlimNode] | None = None
        if self.config.placement.mode is not PlacementMode.OFF:
            self.nodes = Informer(
                client, NODES, slim_node_from_manifest, required=False, clock=clock,
                degrades="exclusive placement cannot see node pools (auto mode falls back to "
                         "pod affinity; declared domains still count)",
            )

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def informers(self) -> list[Informer[Any]]:
        found: list[Informer[Any]] = [self.jobsets, self.jobs, self.services, self.pvcs]
        return found + [i for i in (self.pods, self.nodes) if i is not None]

    def cache_states(self) -> list[CacheState]:
        return [informer.state() for informer in self.informers]

    def synced(self) -> bool:
        """Every required cache is in sync (what /readyz reports)."""
        return readiness(self.cache_states()).ok

    async def resync(self) -> None:
        """Re-list every cache (a new leader does, before its first reconcile)."""
        await asyncio.gather(*(informer.resync() for informer in self.informers))

    # --- event handlers (O(1) except node/domain changes, which wake exclusive JobSets) ----------

    def _wire_handlers(self) -> None:
        self.jobsets.add_handler(self._on_jobset)
        self.jobs.add_handler(self._on_job)
        self.services.add_handler(self._on_service)
        if self.nodes is not None:
            self.nodes.add_handler(self._on_node)
        if self.pods is not None:
            self.pods.add_handler(pod_handler(self.queue, self._batch_period))

    def _on_jobset(self, kind: str, old: Any, new: Any) -> None:
        if kind == "delete" and old is not None:
            self.specs.forget(jobset_uid(old))
            self._tallies.pop(jobset_uid(old), None)
        if kind == "update" and same_but_bookkeeping(old, new):
            return
        if kind == "update" and only_counts_changed(old, new):  # our count write: batch it
            return self.queue.add_batched(object_key(new), self._batch_period,
                                          self._children(jobset_uid(new)))
        self.queue.add(object_key(new if new is not None else old))

    def _on_job(self, kind: str, old: CachedJob | ForeignJob | None,
                new: CachedJob | ForeignJob | None) -> None:
        child_old, child_new = cached_child(old), cached_child(new)
        if child_old is None and child_new is None:
            return self._on_foreign_job(kind, old, new)
        self._tally(child_old, child_new)
        entry = child_new if child_new is not None else child_old
        assert entry is not None
        child = entry.child
        job_key = f"{child.namespace}/{child.name}"
        owner = entry.owner_key
        if owner is not None:
            if child_new is not None:
                self.expectations.observe_create(owner, child.name)
            if child_new is None or child.deletion_timestamp is not None:
                self.expectations.observe_delete(owner, child.uid)
                self.expectations.observe_create(owner, child.name)
        self.held.track(job_key, child_new)
        if owner is not None and newly_failed(child_old, child_new):
            self.queue.add(owner)  # a restart waits for no batch (failures end in one)
        elif owner is not None:
            self.queue.add_batched(owner, self._batch_period, self._children(entry.owner_uid))
        if freed_domain(child_old, child_new):
            self._wake_exclusive()

    def _children(self, jobset_uid: str | None) -> int:
        """How many children the JobSet's tally holds (0 before its first pass)."""
        tally = self._tallies.get(jobset_uid or "")
        return 0 if tally is None else len(tally)

    def _tally(self, old: CachedJob | None, new: CachedJob | None) -> None:
        """Keep the tallies of the JobSets the Job left and joined (O(1))."""
        if old is not None and (tally := self._tallies.get(old.owner_uid or "")) is not None:
            tally.apply(old.child, None)
        if new is not None and (tally := self._tallies.get(new.owner_uid or "")) is not None:
            tally.apply(None, new.child)

    def _tally_for(self, found: Observed[JobSet]) -> ChildTally:
        """The kept tally, or a new one when the basis moved (a restart) or it misses a child."""
        basis = tally_basis(found.jobset, self._core)
        tally = self._tallies.get(basis.jobset_uid)
        if tally is None or tally.basis != basis or len(tally) != len(found.jobs):
            tally = self._tallies[basis.jobset_uid] = ChildTally(basis, found.jobs)
        return tally

    def _on_foreign_job(self, kind: str, old: Any, new: Any) -> None:
        """A Job no JobSet controls appeared or went: wake the JobSets of its namespace whose
        children it could be named like (a freed name lets a held-back child be created)."""
        if kind == "update":
            return
        job = new if new is not None else old
        prefix = f"{job.namespace}/"
        for key in self.jobsets.keys_by_index(NAMESPACE_INDEX, job.namespace):
            if job.name.startswith(key[len(prefix):] + "-"):
                self.queue.add(key)

    def _on_service(self, kind: str, old: Any, new: Any) -> None:
        entry = new if new is not None else old
        if entry.owner_key is not None and kind != "update":
            self.queue.add(entry.owner_key)

    def _on_node(self, kind: str, old: Any, new: Any) -> None:
        if kind == "update" and old == new:
            return
        self._wake_exclusive()

    def _wake_exclusive(self) -> None:
        for key, jobset in self.jobsets.store.items():
            if needs_exclusive_placement(jobset):
                self.queue.add(key)

    # --- workers ---------------------------------------------------------------------------------

    async def run_workers(self, workers: int) -> None:
        """Reconcile until cancelled; the pool-failure ledger read, every JobSet queued first."""
        await self.health.load()
        for key in list(self.jobsets.store):
            self.queue.add(key)
        self.metrics.max_concurrent.labels(controller=CONTROLLER_NAME).set(workers)
        tasks = [asyncio.create_task(self._worker()) for _ in range(workers)]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDownError:
                return
            try:
                await self.process(key)
            finally:
                self.queue.done(key)

    async def process(self, key: Hashable) -> str:
        """One reconcile of `key` with its accounting; returns the result label."""
        namespace, _, name = str(key).partition("/")
        fields = {
            "controller": CONTROLLER_NAME,
            "namespace": namespace,
            "name": name,
            "reconcileID": uuid.uuid4().hex,
        }
        context = {FIELDS: fields}
        started = self._clock()
        labels = {"controller": CONTROLLER_NAME}
        self.metrics.active_workers.labels(**labels).inc()
        result = "error"
        try:
            outcome = await self.reconcile(key)
            result = self._requeue(key, outcome)
            if outcome.writes:
                log.info("reconciled", extra={FIELDS: {**fields, "writes": outcome.writes}})
        except ConflictError as err:  # a stale view: retry soon, not an incident
            log.debug("conflict: %s", err.message, extra=context)
            self.queue.add_rate_limited(key)
        except ApiError as err:
            log.warning("reconcile failed: %s", err, extra=context)
            self.queue.add_rate_limited(key)
        except Exception:
            log.exception("reconcile crashed", extra=context)
            self.metrics.reconcile_panics.labels(**labels).inc()
            self.queue.add_rate_limited(key)
        finally:
            self.reconciles += 1
            self.metrics.active_workers.labels(**labels).dec()
            self.metrics.reconcile_time.labels(**labels).observe(self._clock() - started)
            self.metrics.reconcile_total.labels(result=result, **labels).inc()
            if result == "error":
                self.metrics.reconcile_errors.labels(**labels).inc()
        return result

    def _requeue(self, key: Hashable, outcome: Outcome) -> str:
        self.queue.forget(key)
        if outcome.requeue_after is not None:
            self.queue.add_after(key, outcome.requeue_after)
            return "requeue_after"
        return "success"

    # --- one reconcile ---------------------------------------------------------------------------

    async def reconcile(self, key: Hashable) -> Outcome:
        jobset = self.jobsets.get(str(key))
        if jobset is None:
            self.expectations.forget(key)
            self.executor.forget(key)
            self.recovery.forget(key)
            self._status_written.pop(key, None)
            self.queue.discard(key)
            return Outcome()
        # The spec check's machinery, loaded off the loop once: the first pass needs it (its full
        # parse asks the CRD's CEL rules whether the API server would refuse the children).
        await self.specs.loaded()
        now = self._clock()
        if self.expectations.expired(key, now):
            self.metrics.expectations_expired.inc()
        if not self.expectations.satisfied(key, now):
            # Writes of ours are not in the cache yet; their watch events requeue this key.
            deadline = self.expectations.deadline(key) or now
            return Outcome(requeue_after=max(0.0, deadline - now))
        if not self._exclusive(jobset):
            return await self._decide_and_execute(key, self._snapshot(jobset))
        async with self.placement_lock:
            observed = await self.job_pods.add_to(self._snapshot(jobset, self._placement()))
            return await self._decide_and_execute(key, observed)

    async def _decide_and_execute(self, key: Hashable, observed: Observed[Manifest]) -> Outcome:
        wall = self._wall()
        plan = self.decide(observed, wall)
        self.recovery.observe(key, observed.jobset, observed.jobs, plan, wall)
        plan = self._paced(key, observed, plan)
        outcome = await self.executor.execute(key, observed.jobset, plan)
        if outcome.status_written:
            self._status_written[key] = self._clock()
        return outcome

    def _paced(self, key: Hashable, observed: Observed[Manifest], plan: Plan) -> Plan:
        """`plan`, a large JobSet's count-only status write held back (core/status_pacing)."""
        written = self._status_written.get(key)
        since = None if written is None else self._clock() - written
        return paced(plan, len(observed.jobs), since)

    def _snapshot(
        self, jobset: dict[str, Any], placement: PlacementInputs | None = None
    ) -> Observed[Manifest]:
        namespace = str(jobset["metadata"].get("namespace", ""))
        pvc_names = None
        if self.pvcs.usable:
            pvc_names = frozenset(p.name for p in self.pvcs.by_index(NAMESPACE_INDEX, namespace))
        uid = jobset_uid(jobset)
        tally = self._tallies.get(uid)  # the same children, kept by their events: no cache walk
        if tally is not None and len(tally) == self.jobs.index_size(OWNER_UID_INDEX, uid):
            jobs = tally.jobs()
        else:
            children = self.jobs.by_index(OWNER_UID_INDEX, uid)
            jobs = tuple(e.child for e in children if isinstance(e, CachedJob))
        return Observed(
            jobset=jobset,
            jobs=jobs,
            service_exists=f"{namespace}/{service_name(jobset)}" in self.services.store,
            placement=placement,
            pvc_names=pvc_names,
            taken_names=TakenNames(self.jobs.store, namespace, uid),
            pods=jobset_pods(self.pods, object_key(jobset)),
        )

    def _exclusive(self, jobset: dict[str, Any]) -> bool:
        return self.nodes is not None and needs_exclusive_placement(jobset)

    def _placement(self) -> PlacementInputs:
        nodes = None
        if self.nodes is not None and self.nodes.usable:
            nodes = tuple(self.nodes.store.values())
        return placement_inputs(
            nodes, self.config.placement.domains, self.held.views(), self.config.placement.mode,
            kept_out=self.health.kept_out(),
        )

