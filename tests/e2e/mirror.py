"""A read-only mirror of a real cluster's objects, kept by list+watch, for the e2e World.

The sim's Store answers `list`/`get` synchronously, and the e2e cases poll such reads inside
`until(...)`. On the real cluster the same reads come from this mirror: one informer per
resource type (all namespaces), relisting on 410 and after a dropped watch, so the cases read
as they do on the sim and wait on conditions rather than sleeps.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.controller.runtime.kube import ApiError, GoneError, KubeClient
from jobset_infra.controller.runtime.resources import Resource
from jobset_infra.sim.apiserver.errors import NotFoundError
from jobset_infra.sim.apiserver.resources import GVR


@dataclass
class Listed:
    items: list[dict[str, Any]]


@dataclass
class _Informer:
    res: Resource
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    synced: asyncio.Event = field(default_factory=asyncio.Event)


class Mirror:
    def __init__(self, api: KubeClient, resources: Iterable[Resource]) -> None:
        self.api = api
        self.informers = {self._gvr(r): _Informer(r) for r in resources}
        self.tasks: list[asyncio.Task[None]] = []

    @staticmethod
    def _gvr(res: Resource) -> GVR:
        return GVR(res.group, res.version, res.plural)

    async def start(self) -> None:
        self.tasks = [asyncio.create_task(self._run(i)) for i in self.informers.values()]
        await asyncio.gather(*(i.synced.wait() for i in self.informers.values()))

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self, informer: _Informer) -> None:
        while True:
            try:
                listed = await self.api.list(informer.res)
                informer.objects = {_key(o): o for o in listed["items"]}
                informer.synced.set()
                version = listed["metadata"].get("resourceVersion", "0")
                async for event in self.api.watch(informer.res, None, version):
                    obj = event.get("object") or {}
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    if event["type"] == "DELETED":
                        informer.objects.pop(_key(obj), None)
                    elif event["type"] in ("ADDED", "MODIFIED"):
                        informer.objects[_key(obj)] = obj
            except GoneError:
                continue
            except ApiError:
                await asyncio.sleep(0.2)

    def _informer(self, gvr: GVR) -> _Informer:
        return self.informers[gvr]

    def list(self, gvr: GVR, namespace: str | None = None) -> Listed:
        objects = self._informer(gvr).objects
        items = [o for (ns, _), o in sorted(objects.items())
                 if namespace is None or ns == namespace]
        return Listed(items)

    def get(self, gvr: GVR, name: str, namespace: str | None = None) -> dict[str, Any]:
        obj = self._informer(gvr).objects.get((namespace or "", name))
        if obj is None:
            raise NotFoundError(404, "NotFound", f'{gvr.group_resource} "{name}" not found')
        return obj


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""
