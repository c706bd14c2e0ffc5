"""The simulated cluster's Job controller (and kubelet): turns batch/v1 Jobs into Pods and status.

    async with JobController(sim.store, wait_for_binding=False) as jc:
        await jc.succeed_job("ns", "js-workers-0")
        await jc.fail_job("ns", "js-workers-1", reason="BackoffLimitExceeded", message="...")
        await jc.fail_pod("ns", "js-workers-1-0-bcdfg", exit_code=3)  # OnFailure: in place
        await jc.fail_pod("ns", "js-workers-1-0-bcdfg", in_place=False, reason="Evicted")
        await jc.settled()

In-process on the `Store`: two watches (Jobs, Pods) only say which Jobs changed; a worker reads
each dirty Job and the Pods it owns straight from the store (always fresh, so a replayed decision
never doubles Pods), asks `job_sync.sync_job` what to do and applies the plan. Dirty Jobs are
de-duplicated and handled in batches with a yield in between: O(changes), never O(n^2).

`wait_for_binding=True` (a scheduler runs): a Pod becomes Running and Ready only once
`spec.nodeName` is set; otherwise at once. `auto_complete_after=S`: every Pod succeeds S seconds
after it started (demos). Without a JobController, tests write Job status by hand, as upstream
JobSet's envtest suites do.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import heapq
import itertools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final

from jobset_infra.api.constants import JOB_REASON_BACKOFF_LIMIT_EXCEEDED
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.cluster import events, job_pods, job_sync
from jobset_infra.sim.cluster.background import Background, Component

log = logging.getLogger(__name__)

JsonObj = dict[str, Any]
Key = tuple[str, str]
JOBS: Final = GVR("batch", "v1", "jobs")
PODS: Final = GVR("", "v1", "pods")
# what admission looks up when it refuses a Pod (403): their creation retries the Jobs it blocked
ADMISSION_INPUTS: Final = (GVR("", "v1", "serviceaccounts"),
                           GVR("scheduling.k8s.io", "v1", "priorityclasses"))
# Jobs synced before the worker yields to the event loop (keeps the API server responsive).
BATCH: Final = 32
# How many passes a test helper runs to let a Job reach its end state.
_HELPER_PASSES: Final = 64


class JobController(Component):
    """Fake kube-controller-manager Job controller plus kubelet, for the simulated cluster."""

    def __init__(
        self,
        store: Store,
        *,
        wait_for_binding: bool = False,
        auto_complete_after: float | None = None,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.store = store
        self.wait_for_binding = wait_for_binding
        self.auto_complete_after = auto_complete_after
        self._now = now or store.clock.now
        self._dirty: dict[Key, None] = {}
        self._wake = asyncio.Event()
        self._counted: dict[str, set[str]] = {}
        # Pods deleted by others while they ran, per Job uid, until counted as failed.
        self._ghosts: dict[str, dict[str, job_pods.PodView]] = {}
        self._own: set[str] = set()
        # Jobs whose Pods admission refused, and the refusals already recorded as events
        self._blocked: dict[Key, set[str]] = {}
        self._due: list[tuple[float, str, str]] = []
        self._due_wake = asyncio.Event()
        self.background = Background()
        self.syncs = 0

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        self.background.spawn(self._follow(JOBS, self._job_event), "sim-jobs-watch")
        self.background.spawn(self._follow(PODS, self._pod_event), "sim-pods-watch")
        for gvr in ADMISSION_INPUTS:
            self.background.spawn(self._follow(gvr, self._admission_input), "sim-job-retries")
        self.background.spawn(self._work(), "sim-job-controller")
        if self.auto_complete_after is not None:
            self.background.spawn(self._complete_due(), "sim-autocomplete")

    # --- what tests call ----------------------------------------------------------------------

    async def succeed_job(self, namespace: str, name: str) -> JsonObj:
        """Let every Pod of the Job succeed, pass after pass, until the Job is Complete."""
        for _ in range(_HELPER_PASSES):
            job = self._job(namespace, name)
            if _finished(job):
                break
            for pod in self._pods(job):
                if pod.live:
                    self._finish_pod(namespace, pod.name, succeeded=True)
            self._settle((namespace, name))
            await asyncio.sleep(0)
        return self._job(namespace, name)

    async def fail_job(
        self,
        namespace: str,
        name: str,
        *,
        reason: str = JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
        message: str = job_sync.BACKOFF_LIMIT_MESSAGE,
    ) -> JsonObj:
        """Fail the Job with `reason` and `message`: its first Pod fails, the rest are stopped."""
        job = self._job(namespace, name)
        live = sorted((p for p in self._pods(job) if p.live), key=lambda p: (p.index or 0, p.name))
        if live:
            self._finish_pod(namespace, live[0].name, succeeded=False, reason=reason,
                             message=message)
        job = self._job(namespace, name)
        status = job_sync.failure_target_status(job, reason, message, self._now())
        self._write_status(job, status)
        self._settle((namespace, name))
        await asyncio.sleep(0)
        return self._job(namespace, name)

    async def fail_pod(
        self, namespace: str, name: str, *, reason: str | None = None,
        message: str | None = None, exit_code: int = 1, in_place: bool | None = None,
    ) -> JsonObj:
        """A container of the Pod exits with `exit_code`; returns the Pod.

        Under restartPolicy OnFailure the kubelet restarts it in place (the Pod stays Running,
        its restart count grows); otherwise, or with `in_place=False` (an eviction, a lost
        node), the Pod ends in phase Failed with `reason` and `message`.
        """
        pod = self.store.get(PODS, name, namespace)
        on_failure = (pod.get("spec") or {}).get("restartPolicy") == "OnFailure"
        if in_place if in_place is not None else on_failure:
            status = job_pods.restarted_status(pod, self._now(), exit_code=exit_code)
            pod = self.store.update(PODS, {**pod, "status": status}, subresource="status")
        else:
            pod = self._finish_pod(namespace, name, succeeded=False, reason=reason,
                                   message=message, exit_code=exit_code)
        self._settle(_owner_key(pod))
        await asyncio.sleep(0)
        return pod

    async def succeed_pod(self, namespace: str, name: str) -> JsonObj:
        pod = self._finish_pod(namespace, name, succeeded=True)
        self._settle(_owner_key(pod))
        await asyncio.sleep(0)
        return pod

    async def settled(self, *, quiet_rounds: int = 5, max_rounds: int = 10_000) -> None:
        """Return once every change made so far is handled: no Job is dirty and the store has
        not changed for `quiet_rounds` turns of the event loop (everything here is in-process)."""
        quiet, version = 0, self.store.resource_version
        for _ in range(max_rounds):
            await asyncio.sleep(0)
            busy = bool(self._dirty) or self.store.resource_version != version
            quiet, version = (0 if busy else quiet + 1), self.store.resource_version
            if quiet >= quiet_rounds:
                return
        raise TimeoutError(f"the sim Job controller did not settle in {max_rounds} rounds")

    def pods_of(self, namespace: str, name: str) -> list[JsonObj]:
        """The Pods the Job owns, by completion index then name."""
        job = self._job(namespace, name)
        found = [
            pod for view in self._pods(job)
            if (pod := self.store.peek(PODS, namespace, view.name)) is not None
        ]
        return sorted(found, key=lambda p: (job_pods.pod_view(p).index or 0, p["metadata"]["name"]))

    # --- watches: only mark Jobs dirty ----------------------------------------------------------

    async def _follow(self, gvr: GVR, handle: Callable[[str, JsonObj], None]) -> None:
        """Watch `gvr` for as long as the controller runs, resuming if the stream ends."""
        since: str | None = None
        while not self.background.stopping:
            try:
                watch = self.store.watch(gvr, since_rv=since)
            except StatusError:  # 410: history gone; start over with every object as ADDED
                watch = self.store.watch(gvr)
            self.background.track(watch)
            async for kind, obj in watch:
                since = obj.get("metadata", {}).get("resourceVersion") or since
                try:
                    handle(kind, obj)
                except Exception:  # a malformed object must not stop the controller
                    log.exception("sim job controller: cannot handle %s event", kind)
            self.background.forget(watch)

    def _job_event(self, kind: str, job: JsonObj) -> None:
        meta = job["metadata"]
        if kind == "DELETED":
            self._blocked.pop((meta.get("namespace", ""), meta["name"]), None)
            self._counted.pop(meta.get("uid", ""), None)
            self._ghosts.pop(meta.get("uid", ""), None)
            return
        if kind in ("ADDED", "MODIFIED") and not self._mine(meta):
            self._mark((meta.get("namespace", ""), meta["name"]))

    def _pod_event(self, kind: str, pod: JsonObj) -> None:
        if kind not in ("ADDED", "MODIFIED", "DELETED") or self._mine(pod["metadata"]):
            return
        key = _owner_key(pod)
        if key is None:
            return
        if kind == "DELETED":
            self._remember_deleted(pod)
        self._mark(key)

    def _admission_input(self, kind: str, obj: JsonObj) -> None:
        if kind == "ADDED":
            for key in self._blocked:
                self._mark(key)

    def _refused(self, job: JsonObj, message: str) -> None:
        """A Pod the API server refused (403): a FailedCreate Warning on the Job, once per
        distinct message, as the Job controller records it; retried when what admission looked
        up is created."""
        meta = job["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        seen = self._blocked.setdefault(key, set())
        if message in seen:
            return
        seen.add(message)
        events.warn(self.store, job, "FailedCreate", f"Error creating: {message}",
                    component="job-controller")

    def _remember_deleted(self, pod: JsonObj) -> None:
        """A Pod someone else deleted before it finished counts as failed, as in Kubernetes
        ("count deleted Pods as failures"): `kubectl delete pod` can fail a Job."""
        view = job_pods.pod_view(pod)
        owner = next((ref.get("uid", "") for ref in pod["metadata"].get("ownerReferences") or ()
                      if ref.get("controller")), "")
        job = self.store.by_uid(owner) if owner else None
        if not view.terminal and job is not None and not job["metadata"].get("deletionTimestamp"):
            ghost = dataclasses.replace(view, phase=job_pods.FAILED, deleting=False)
            self._ghosts.setdefault(owner, {})[view.uid] = ghost

    def _mine(self, meta: JsonObj) -> bool:
        """True for the echo of a write this controller made (its decision already saw it)."""
        rv = meta.get("resourceVersion", "")
        if rv in self._own:
            self._own.discard(rv)
            return True
        return False

    def _mark(self, key: Key) -> None:
        self._dirty[key] = None
        self._wake.set()

    # --- the worker -----------------------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._dirty:
                batch = list(itertools.islice(self._dirty, BATCH))
                for key in batch:
                    self._dirty.pop(key, None)
                    self._sync_safely(key)
                await asyncio.sleep(0)

    def _sync_safely(self, key: Key) -> None:
        try:
            self._sync(key)
        except StatusError as err:  # e.g. a Job deleted meanwhile: the next event decides
            log.debug("sim job controller: %s/%s: %s", key[0], key[1], err.message)
        except Exception:
            log.exception("sim job controller: sync of %s/%s failed", *key)

    def _settle(self, key: Key | None) -> None:
        """Sync one Job until it has nothing left to do (test helpers, so results are final)."""
        if key is None:
            return
        for _ in range(_HELPER_PASSES):
            if not self._sync(key):
                return

    def _sync(self, key: Key) -> bool:
        """One pass over one Job; returns whether anything was written."""
        job = self.store.peek(JOBS, *key)
        if job is None:
            return False
        self.syncs += 1
        uid = job["metadata"].get("uid", "")
        counted = self._counted.setdefault(uid, set())
        plan = job_sync.sync_job(
            job, self._pods(job), counted=counted, now=self._now(),
            wait_for_binding=self.wait_for_binding,
        )
        if plan.empty:
            return False
        self._apply(job, plan, counted)
        if plan.delete:  # the echoes are ignored, yet Complete/Failed wait for the Pods to go
            self._mark(key)
        return True

    def _pods(self, job: JsonObj) -> list[job_pods.PodView]:
        uid = job["metadata"].get("uid", "")
        views = list(self._ghosts.get(uid, {}).values())
        for gvr, ns, name in tuple(self.store.dependents.get(uid, ())):
            pod = self.store.peek(gvr, ns, name) if gvr == PODS else None
            if pod is not None and _controlled_by(pod, uid):
                views.append(job_pods.pod_view(pod))
        return views

    def _apply(self, job: JsonObj, plan: job_sync.JobSync, counted: set[str]) -> None:
        ns = job["metadata"].get("namespace", "")
        for pod in plan.create:
            try:
                created = self._own_write(self.store.create(PODS, pod, ns))
            except StatusError as err:
                if err.code == 403:  # admission refused it: a missing ServiceAccount, ...
                    self._refused(job, err.message)
                    return
                if err.code != 409:
                    raise
                continue  # a replay of an earlier decision: the Pod is there already
            self._blocked.pop((ns, job["metadata"]["name"]), None)
            if plan.start_created:
                self._start(created)
        for name in plan.start:
            current = self.store.peek(PODS, ns, name)
            if current is not None:
                self._start(current)
        for name in plan.delete:
            with contextlib.suppress(StatusError):
                self._own_write(self.store.delete(PODS, name, ns)[0])
        if plan.status is not None:
            self._write_status(job, plan.status)
            counted.update(plan.counted)
            ghosts = self._ghosts.get(job["metadata"].get("uid", ""), {})
            for pod_uid in plan.counted:
                ghosts.pop(pod_uid, None)

    def _start(self, pod: JsonObj) -> None:
        status = job_pods.running_status(pod, self._now())
        self._own_write(self.store.update(PODS, {**pod, "status": status}, subresource="status"))
        if self.auto_complete_after is not None:
            meta = pod["metadata"]
            due = asyncio.get_running_loop().time() + self.auto_complete_after
            heapq.heappush(self._due, (due, meta.get("namespace", ""), meta["name"]))
            self._due_wake.set()

    def _write_status(self, job: JsonObj, status: JsonObj) -> None:
        self._own_write(self.store.update(JOBS, {**job, "status": status}, subresource="status"))

    def _finish_pod(self, namespace: str, name: str, *, succeeded: bool, **kw: Any) -> JsonObj:
        pod = self.store.get(PODS, name, namespace)
        status = job_pods.finished_status(pod, self._now(), succeeded=succeeded, **kw)
        return self.store.update(PODS, {**pod, "status": status}, subresource="status")

    def _own_write(self, obj: JsonObj) -> JsonObj:
        self._own.add(obj["metadata"].get("resourceVersion", ""))
        return obj

    def _job(self, namespace: str, name: str) -> JsonObj:
        return self.store.get(JOBS, name, namespace)

    # --- auto-complete (demos) ------------------------------------------------------------------

    async def _complete_due(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self._due:
                self._due_wake.clear()
                await self._due_wake.wait()
                continue
            wait = self._due[0][0] - loop.time()
            if wait > 0:
                self._due_wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._due_wake.wait(), wait)
                continue
            _, ns, name = heapq.heappop(self._due)
            pod = self.store.peek(PODS, ns, name)
            if pod is not None and job_pods.pod_view(pod).phase == job_pods.RUNNING:
                with contextlib.suppress(StatusError):
                    self._finish_pod(ns, name, succeeded=True)


def _finished(job: JsonObj) -> bool:
    conditions = (job.get("status") or {}).get("conditions") or []
    return job_sync.is_true(conditions, job_sync.JOB_COMPLETE) or job_sync.is_true(
        conditions, job_sync.JOB_FAILED
    )


def _controlled_by(pod: JsonObj, uid: str) -> bool:
    return any(
        ref.get("uid") == uid and ref.get("controller")
        for ref in pod["metadata"].get("ownerReferences") or ()
    )


def _owner_key(pod: JsonObj) -> Key | None:
    meta = pod["metadata"]
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "Job":
            return meta.get("namespace", ""), ref["name"]
    return None
