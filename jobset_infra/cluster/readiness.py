"""What `start_cluster` waits for once its processes answer their health checks.

kwok's Nodes are created from the pool specs and must turn Ready, the controller-manager must
have made the `default` ServiceAccount (before it, the API server refuses every Pod), and real
nodes' kubelets must report Ready. Each wait polls, and fails at once, naming the log, when a
component of the cluster exits meanwhile instead of running out its timeout.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from jobset_infra.cluster.layout import Layout
from jobset_infra.cluster.processes import ComponentError
from jobset_infra.controller.runtime.kube import ApiError, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import NODES, Resource
from jobset_infra.tpu.node_pools import PoolSpec, kwok_node, node_manifests

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")


class Watched(Protocol):
    """The cluster being waited for (a `local.RunningCluster`): its processes and files."""

    @property
    def layout(self) -> Layout: ...

    def running(self) -> dict[str, bool]: ...


async def kwok_nodes_ready(api: KubeClient, cluster: Watched, pools: Sequence[PoolSpec],
                           timeout: float) -> None:
    await create_nodes(api, pools)
    names = {n for pool in pools for n in pool.node_names()}
    await until(lambda: nodes_ready(api, names), timeout,
                f"{len(names)} Nodes Ready (kwok)", cluster)
    await until(lambda: has_default_account(api), timeout,
                "the default ServiceAccount (controller-manager)", cluster)


async def create_nodes(api: KubeClient, pools: Sequence[PoolSpec]) -> None:
    now = datetime.datetime.now(datetime.UTC)
    manifests = [kwok_node(node) for node in node_manifests(pools, now)]
    for first in range(0, len(manifests), 32):
        await asyncio.gather(*(api.create(NODES, m) for m in manifests[first:first + 32]))


async def nodes_ready(api: KubeClient, names: set[str]) -> bool:
    listed = await api.list(NODES)
    ready = {
        item["metadata"]["name"] for item in listed["items"]
        if any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (item.get("status") or {}).get("conditions") or [])
    }
    return names <= ready


async def has_default_account(api: KubeClient) -> bool:
    try:
        await api.get(SERVICE_ACCOUNTS, "default", "default")
    except NotFoundError:
        return False
    return True


async def until(check: Callable[[], Any], timeout: float, what: str, cluster: Watched) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if await check():
                return
        except ApiError:
            pass
        dead = [name for name, up in cluster.running().items() if not up]
        if dead:
            raise ComponentError(f"{dead[0]} exited while waiting for {what}; see "
                                 f"{cluster.layout.log(dead[0])}")
        await asyncio.sleep(0.25)
    raise ComponentError(f"timed out after {timeout:g} s waiting for {what}; logs are in "
                         f"{cluster.layout.folder / 'logs'}")
