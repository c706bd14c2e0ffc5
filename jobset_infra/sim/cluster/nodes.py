"""The sim's Nodes: the node pools of `jobset_infra.tpu.node_pools`, stored in a sim Store."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.tpu.node_pools import PoolSpec, node_manifests

# The resource of core/v1 Nodes.
NODES: Final = GVR("", "v1", "nodes")


async def create_nodes(
    store: Store, pools: Sequence[PoolSpec], now: datetime
) -> list[dict[str, Any]]:
    """Create the Nodes in a sim Store (a Node keeps the status it is created with)."""
    created: list[dict[str, Any]] = []
    for i, node in enumerate(node_manifests(pools, now)):
        created.append(store.create(NODES, node))
        if i % 256 == 255:
            await asyncio.sleep(0)  # thousands of Nodes: let the server answer meanwhile
    return created
