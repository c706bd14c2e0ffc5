"""What must hold whatever the chaos did, watched from outside (list+watch of every Job and JobSet
with the admin client, each event stamped with the time it arrived):

- no two Jobs ever existed with the same name and restart attempt (two UIDs for one pair: a
  restart not counted, or a create repeated after a crash);
- a JobSet's `status.restarts` never goes down, and goes up by exactly one at a time (steps seen
  across a re-list of the recorder itself are not judged: it may have missed versions);
- the restart attempts of a JobSet's Jobs are exactly 0..restarts when it finishes;
- no hot loop: `writes(namespace, since)` counts JobSet and Job changes, so a test can require
  none in a window after everything finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.controller.core.job_view import key_int_of
from jobset_infra.controller.runtime.kube import ApiError, GoneError, KubeClient
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, Resource


def attempt_of(job: Mapping[str, Any]) -> int | None:
    """The Job's restart attempt as the controller reads it (label, else annotation)."""
    return key_int_of(job.get("metadata") or {}, c.RESTARTS_KEY)


def owner_of(job: Mapping[str, Any]) -> str | None:
    for ref in (job.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == c.KIND:
            return str(ref.get("name"))
    return None


@dataclass
class Recorder:
    api: KubeClient
    uids: dict[tuple[str, str, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    attempts: dict[tuple[str, str], set[int]] = field(default_factory=lambda: defaultdict(set))
    restarts: dict[tuple[str, str], list[int | None]] = field(
        default_factory=lambda: defaultdict(list))  # None marks a re-list of ours
    events: list[tuple[float, str, str]] = field(default_factory=list)  # (time, ns, kind)
    relists: int = 0
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self) -> None:
        ready = [asyncio.Event(), asyncio.Event()]
        self._tasks = [asyncio.create_task(self._run(JOBS, self._job, ready[0])),
                       asyncio.create_task(self._run(JOBSETS, self._jobset, ready[1]))]
        await asyncio.gather(*(r.wait() for r in ready))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _run(self, res: Resource, seen: Any, ready: asyncio.Event) -> None:
        while True:
            try:
                listed = await self.api.list(res)
                self.relists += 1
                for key in list(self.restarts):
                    self.restarts[key].append(None)
                for obj in listed["items"]:
                    seen(obj, count=False)
                ready.set()
                version = listed["metadata"].get("resourceVersion", "")
                while True:
                    async for event in self.api.watch(res, None, version):
                        obj = event.get("object") or {}
                        version = (obj.get("metadata") or {}).get("resourceVersion", version)
                        if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                            seen(obj, count=True)
            except GoneError:
                continue
            except ApiError:  # the API server is away (a chaos step): list again
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(0.5)

    def _job(self, job: Mapping[str, Any], count: bool) -> None:
        meta = job.get("metadata") or {}
        owner, attempt = owner_of(job), attempt_of(job)
        if count:
            self.events.append((time.monotonic(), str(meta.get("namespace")), "Job"))
        if owner is None or attempt is None:
            return
        namespace = str(meta.get("namespace"))
        self.uids[(namespace, str(meta.get("name")), attempt)].add(str(meta.get("uid")))
        self.attempts[(namespace, owner)].add(attempt)

    def _jobset(self, js: Mapping[str, Any], count: bool) -> None:
        meta = js.get("metadata") or {}
        key = (str(meta.get("namespace")), str(meta.get("name")))
        if count:
            self.events.append((time.monotonic(), key[0], "JobSet"))
        restarts = (js.get("status") or {}).get("restarts")
        history = self.restarts[key]
        if restarts is not None and (not history or history[-1] != restarts):
            history.append(int(restarts))

    def writes(self, namespace: str, since: float) -> int:
        return sum(1 for t, ns, _ in self.events if ns == namespace and t >= since)

    def violations(self) -> list[str]:
        found = [f"{ns}/{name} attempt {attempt} existed as {len(uids)} Jobs: {sorted(uids)}"
                 for (ns, name, attempt), uids in self.uids.items() if len(uids) > 1]
        for (ns, name), history in self.restarts.items():
            values = [v for v in history if v is not None]
            if values != sorted(values):
                found.append(f"{ns}/{name} status.restarts went down: {history}")
            for before, after in itertools.pairwise(history):
                if before is not None and after is not None and after - before != 1:
                    found.append(f"{ns}/{name} status.restarts jumped {before} -> {after}")
        return found

    def attempts_match(self, namespace: str, name: str, restarts: int) -> bool:
        return self.attempts[(namespace, name)] == set(range(restarts + 1))
