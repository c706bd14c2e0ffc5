"""What the benchmark sees happen in a namespace: Jobs, Pods and JobSets through watches.

One `Observer` per scenario follows the namespaces it is given (list, then watch from that
resourceVersion; a watch that ends is resumed from the last version seen, a 410 relists). It
keeps, per restart attempt (`jobset.sigs.k8s.io/restart-attempt`, on Jobs and on their Pods):
which Jobs were created, when each Pod was first seen, bound to a Node and Running, and whether
it carries inter-pod affinity; and the last status of each JobSet. Milestones ("all N Jobs of
attempt 1 exist", "all P Pods of attempt 0 Running") are stamped with `time.time()` in the
watch handler, the moment the event that completes them arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.controller.runtime.kube import ApiError, GoneError, KubeClient
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, Resource

PODS: Final = Resource("", "v1", "pods", "Pod")
JsonObj = dict[str, Any]


def attempt_of(obj: Mapping[str, Any]) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(c.RESTARTS_KEY, ""))


def has_affinity(pod: Mapping[str, Any]) -> bool:
    """Inter-pod affinity or anti-affinity: what makes kube-scheduler slow (upstream #174)."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    return bool(affinity.get("podAffinity") or affinity.get("podAntiAffinity"))


@dataclass
class PodSeen:
    attempt: str
    created: float
    bound: float | None = None
    running: float | None = None
    affinity: bool = False
    gone: bool = False


@dataclass
class Attempt:
    """One restart attempt's Jobs and Pods."""

    jobs: set[str] = field(default_factory=set)
    pods: dict[str, PodSeen] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)

    def bind_times(self) -> list[float]:
        return sorted(p.bound for p in self.pods.values() if p.bound is not None)

    def first_created(self) -> float | None:
        return min((p.created for p in self.pods.values()), default=None)

    def affinity_pods(self) -> int:
        return sum(p.affinity for p in self.pods.values())


class Observer:
    def __init__(self, api: KubeClient, namespaces: Sequence[str]) -> None:
        self.api = api
        self.namespaces = list(namespaces)
        self.attempts: dict[str, Attempt] = {}
        self.jobsets: dict[tuple[str, str], JsonObj] = {}
        self.when: dict[str, float] = {}
        self._targets: dict[str, tuple[str, str, int]] = {}  # key -> (kind, attempt, count)
        self._events: dict[str, asyncio.Event] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self.errors: list[str] = []

    # --- following ---------------------------------------------------------------------------

    async def start(self) -> None:
        for namespace in self.namespaces:
            for res, handle in ((JOBS, self._job), (PODS, self._pod), (JOBSETS, self._jobset)):
                version = await self._list(res, namespace, handle)
                self._tasks.append(asyncio.create_task(
                    self._follow(res, namespace, version, handle)))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _list(self, res: Resource, namespace: str, handle: Any) -> str:
        listed = await self.api.list(res, namespace)
        for item in listed["items"]:
            handle("ADDED", item)
        return str(listed["metadata"].get("resourceVersion", ""))

    async def _follow(self, res: Resource, namespace: str, version: str, handle: Any) -> None:
        while True:
            try:
                async for event in self.api.watch(res, namespace, version):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") != "BOOKMARK":
                        self._handle(handle, event, res)
            except GoneError:
                version = await self._list(res, namespace, handle)
            except ApiError as err:
                self.errors.append(f"watch {res.plural} in {namespace}: {err}")
                await asyncio.sleep(0.2)

    def _handle(self, handle: Any, event: JsonObj, res: Resource) -> None:
        """One event; a malformed one is recorded, never the end of the watch."""
        try:
            handle(event["type"], event.get("object") or {})
        except (KeyError, TypeError, ValueError) as err:
            self.errors.append(f"{res.plural} event {event.get('type')}: {err!r}")

    # --- handlers ----------------------------------------------------------------------------

    def attempt(self, name: str) -> Attempt:
        return self.attempts.setdefault(name, Attempt())

    def _job(self, kind: str, job: JsonObj) -> None:
        if kind == "ADDED":  # names repeat across namespaces (every footprint JobSet is "ms")
            meta = job["metadata"]
            self.attempt(attempt_of(job)).jobs.add(f"{meta.get('namespace')}/{meta['name']}")
            self._check()

    def _pod(self, kind: str, pod: JsonObj) -> None:
        now = time.time()
        name = f"{pod['metadata'].get('namespace')}/{pod['metadata']['name']}"
        attempt = self.attempt(attempt_of(pod))
        seen = attempt.pods.get(name)
        if seen is None:
            seen = attempt.pods[name] = PodSeen(attempt_of(pod), now, affinity=has_affinity(pod))
        if seen.bound is None and (pod.get("spec") or {}).get("nodeName"):
            seen.bound = now
        terminating = kind == "DELETED" or bool(pod["metadata"].get("deletionTimestamp"))
        running = (pod.get("status") or {}).get("phase") == "Running" and not terminating
        if running and seen.running is None:
            seen.running = now
        seen.gone = seen.gone or terminating
        if running:
            attempt.running.add(name)
        else:
            attempt.running.discard(name)
        self._check()

    def _jobset(self, kind: str, jobset: JsonObj) -> None:
        key = (jobset["metadata"].get("namespace", ""), jobset["metadata"]["name"])
        if kind == "DELETED":
            self.jobsets.pop(key, None)
        else:
            self.jobsets[key] = jobset
        self._check()

    # --- milestones --------------------------------------------------------------------------

    def expect(self, key: str, kind: str, attempt: str, count: int) -> asyncio.Event:
        """Stamp `self.when[key]` once `count` Jobs exist / Pods run / Jobs are ready (status)
        for `attempt`; the returned event is set then."""
        self._targets[key] = (kind, attempt, count)
        event = self._events.setdefault(key, asyncio.Event())
        self._check()
        return event

    def count(self, kind: str, attempt: str) -> int:
        if kind == "jobs":
            return len(self.attempt(attempt).jobs)
        if kind == "running":
            return len(self.attempt(attempt).running)
        if kind in ("ready", "suspended"):  # the JobSets' status, summed over every JobSet
            return sum(
                r.get(kind, 0)
                for js in self.jobsets.values()
                if str((js.get("status") or {}).get("restarts", 0)) == (attempt or "0")
                for r in (js.get("status") or {}).get("replicatedJobsStatus") or []
            )
        raise ValueError(f"unknown milestone kind {kind!r}")

    def _check(self) -> None:
        for key, (kind, attempt, count) in self._targets.items():
            if key not in self.when and self.count(kind, attempt) >= count:
                self.when[key] = time.time()
                self._events[key].set()

    async def wait(self, key: str, timeout: float) -> float:
        kind, attempt, count = self._targets[key]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._events[key].wait(), timeout)
        if key not in self.when:
            raise TimeoutError(
                f"{key}: {self.count(kind, attempt)} of {count} {kind} for attempt "
                f"{attempt!r} after {timeout:.0f} s" + (f"; {self.errors[-1]}"
                                                        if self.errors else ""))
        return self.when[key]
