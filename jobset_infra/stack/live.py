"""The stack program's reads and writes of the live cluster around a pool change (the shell).

`stack.pool_guard` decides; this module talks to the API server with the controller's client,
from the kubeconfig the stack deploys with (the local file, or the GKE cluster's output):

* `read_live`: the JobSets, Jobs and Kueue Workloads of every namespace, the Nodes, and the pool
  record;
* `drain`: cordon the Nodes of the pools that change (so nothing is placed there again), then
  suspend each JobSet at risk (Kueue's Workload `spec.active: false` when queued, else the
  JobSet's `spec.suspend`), marking it with `DRAINED_ANNOTATION`, and wait until its child Jobs
  are suspended and their Pods gone;
* `resume`: every JobSet carrying the annotation is resumed the way it was drained and the
  annotation removed. The controller then places its Jobs on free pools: the new ones, as the
  changed pools' Nodes are cordoned or gone.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.controller.runtime import auth
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.kube_errors import ForbiddenError, NotFoundError
from jobset_infra.controller.runtime.resources import (
    CONFIGMAPS,
    JOBS,
    JOBSETS,
    NODES,
    WORKLOADS,
    Resource,
)
from jobset_infra.placement.drain import (
    DRAINED_ANNOTATION,
    AtRiskJobSet,
    Drain,
    DrainVia,
    drain_from_annotation,
)
from jobset_infra.stack.pool_guard import POOL_RECORD, LiveView
from jobset_infra.tpu.constants import GKE_NODEPOOL_LABEL

__all__ = ["DRAIN_TIMEOUT", "drain", "read_live", "resume"]

DRAIN_TIMEOUT: Final = 300.0
"""Seconds a drained JobSet's Jobs may take to stop before the update fails."""
_POLL: Final = 1.0


@asynccontextmanager
async def _client(kubeconfig: str, context: str | None) -> AsyncIterator[KubeClient]:
    # The kubeconfig is the one the stack's provider gets (text); the client reads a file.
    with tempfile.TemporaryDirectory(prefix="jobset-infra-stack-") as folder:
        path = os.path.join(folder, "kubeconfig")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(kubeconfig)
        access = await auth.from_kubeconfig(path, context)
    async with KubeClient(access, enforce_permissions=False, max_retries=2) as api:
        yield api


async def _items(api: KubeClient, res: Resource) -> list[dict[str, Any]]:
    try:
        items: list[dict[str, Any]] = (await api.list(res))["items"]
    except NotFoundError:  # the API is not served (no JobSet CRD, no Kueue yet)
        return []
    return items


async def read_live(kubeconfig: str, context: str | None, namespace: str) -> LiveView:
    """Return the JobSets, Jobs, Workloads, Nodes and the pool record in `namespace`, over
    the kubeconfig text the stack deploys with."""
    async with _client(kubeconfig, context) as api:
        return await _read(api, namespace)


async def _read(api: KubeClient, namespace: str) -> LiveView:
    jobsets, jobs, workloads, nodes = await asyncio.gather(
        _items(api, JOBSETS), _items(api, JOBS), _items(api, WORKLOADS), _items(api, NODES))
    try:
        record = (await api.get(CONFIGMAPS, POOL_RECORD, namespace)).get("data") or {}
    except (NotFoundError, ForbiddenError):
        record = None
    return LiveView(jobsets, jobs, workloads, record, nodes)


async def drain(kubeconfig: str, context: str | None, pools: Sequence[str],
                at_risk: Sequence[AtRiskJobSet], timeout: float = DRAIN_TIMEOUT) -> None:
    """Cordon `pools`' Nodes, suspend `at_risk` and wait until their Jobs stopped."""
    async with _client(kubeconfig, context) as api:
        await _cordon(api, pools)
        for risk in at_risk:
            await _mark(api, risk)
            await _set_running(api, risk.drain, running=False)
        await _stopped(api, at_risk, timeout)


async def resume(kubeconfig: str, context: str | None) -> list[str]:
    """Resume every JobSet a drain marked; return their namespace/name."""
    resumed = []
    async with _client(kubeconfig, context) as api:
        for jobset in await _items(api, JOBSETS):
            meta = jobset["metadata"]
            value = (meta.get("annotations") or {}).get(DRAINED_ANNOTATION)
            how = drain_from_annotation(meta["namespace"], value) if value else None
            if how is None:
                continue
            await _set_running(api, how, running=True)
            await api.patch(JOBSETS, meta["name"], namespace=meta["namespace"],
                            patch={"metadata": {"annotations": {DRAINED_ANNOTATION: None}}})
            resumed.append(f"{meta['namespace']}/{meta['name']}")
    return resumed


async def _cordon(api: KubeClient, pools: Sequence[str]) -> None:
    if not pools:
        return
    selector = f"{GKE_NODEPOOL_LABEL} in ({','.join(sorted(pools))})"
    nodes = (await api.list(NODES, label_selector=selector))["items"]
    await asyncio.gather(*(api.patch(NODES, n["metadata"]["name"],
                                     patch={"spec": {"unschedulable": True}}) for n in nodes))


async def _mark(api: KubeClient, risk: AtRiskJobSet) -> None:
    annotations = {DRAINED_ANNOTATION: risk.drain.annotation()}
    await api.patch(JOBSETS, risk.name, namespace=risk.namespace,
                    patch={"metadata": {"annotations": annotations}})


async def _set_running(api: KubeClient, how: Drain, *, running: bool) -> None:
    if how.via is DrainVia.KUEUE:
        await api.patch(WORKLOADS, how.name, namespace=how.namespace,
                        patch={"spec": {"active": running}})
    else:
        await api.patch(JOBSETS, how.name, namespace=how.namespace,
                        patch={"spec": {"suspend": not running}})


async def _stopped(api: KubeClient, at_risk: Sequence[AtRiskJobSet], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    waiting = [risk.key for risk in at_risk]
    while waiting:
        jobs = await _items(api, JOBS)
        waiting = [key for key in waiting if not _all_stopped(jobs, key)]
        if not waiting:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"drained JobSet(s) {', '.join(waiting)} still have running Jobs after "
                f"{timeout:.0f} s; the pools were not changed. See `jobset-infra explain`")
        await asyncio.sleep(_POLL)


def _all_stopped(jobs: Sequence[Mapping[str, Any]], key: str) -> bool:
    namespace, _, name = key.partition("/")
    for job in jobs:
        meta = job.get("metadata") or {}
        if meta.get("namespace") != namespace or \
                (meta.get("labels") or {}).get(c.JOBSET_NAME_KEY) != name:
            continue
        if (job.get("status") or {}).get("active"):  # Pods still running (or terminating)
            return False
    return True
