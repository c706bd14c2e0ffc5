"""Nodes for the simulated cluster that look like GKE TPU slice node pools, or plain CPU pools.

A spec string lists pools, comma-separated:

- `v5e-2x4:4`: 4 node pools, each one v5e 2x4 slice. The slice shape comes from `jobset_infra.tpu`
  (`TpuSlice`, `plan_slice_pools`), so pool names, labels, taint and `google.com/tpu` match what
  the `TpuSlicePools` component creates. Without a machine type the multi-host form is used (the
  fewest chips per VM the topology allows: 2 x ct5lp-hightpu-4t for 2x4), as Multislice needs.
- `v5e-2x4@ct5lp-hightpu-8t:2`: the same with an explicit machine type (here single-host).
- `v5e=v5e-2x4@ct5lp-hightpu-4t:4`: pools named `v5e-0..3`, as a stack with `slices.name: v5e`
  names its GKE pools (the grammar is `jobset_infra.tpu.pools_text`'s).
- `cpu:3`: one CPU pool `default-pool` of 3 nodes (untainted, for ordinary pods).

`parse_nodes(text)` returns `PoolSpec`s (pure, errors name the entry and the fix);
`node_manifests(pools, now)` the Node objects; `create_nodes(store, pools, now)` puts them in a
Store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.tpu import TpuSlice
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.pools_text import (
    POOLS_REGION,
    POOLS_ZONE,
    PoolsTextError,
    TpuPoolsEntry,
    parse_pools_text,
)

JsonObj = dict[str, Any]

# Where the simulated pools pretend to live (the zone their plans are made for).
SIM_ZONE: Final = POOLS_ZONE
SIM_REGION: Final = POOLS_REGION
# The kubelet version simulated Nodes report.
SIM_KUBELET_VERSION: Final = "v1.33.5-gke.1000000"
# The GKE name of the default CPU pool and the machine type the simulated one pretends to be.
CPU_POOL: Final = "default-pool"
CPU_MACHINE_TYPE: Final = "e2-standard-8"
# vCPUs and GB of RAM per VM by chips per VM, for v5e (gke-tpu.md §1.1); other families reuse it.
_TPU_VM_SIZE: Final = {1: (24, 48), 4: (112, 192), 8: (224, 384)}
_CPU_VM_SIZE: Final = (8, 32)
_CPU_MAX_PODS: Final = 110


class NodeSpecError(ValueError):
    """A `--nodes` spec that cannot be simulated; the message names the entry and the fix."""


@dataclass(frozen=True)
class PoolSpec:
    """One simulated node pool: its name, size and what every node of it looks like."""

    name: str
    nodes: int
    machine_type: str
    labels: Mapping[str, str]
    taints: tuple[Mapping[str, str], ...] = ()
    allocatable: Mapping[str, str] = field(default_factory=dict)
    slice: TpuSlice | None = None

    def node_names(self) -> list[str]:
        return [f"gke-sim-{self.name}-node-{i}" for i in range(self.nodes)]


def parse_nodes(text: str) -> tuple[PoolSpec, ...]:
    """Parse a spec such as "v5e-2x4:4,cpu:3" into pools; pure, raises NodeSpecError.

    The grammar (and the planning of TPU pools) is `jobset_infra.tpu.pools_text`'s, which the
    local stack's `jobset-infra:nodes` shares.
    """
    try:
        entries = parse_pools_text(text)
    except PoolsTextError as err:
        raise NodeSpecError(f"--nodes {err}") from None
    pools: list[PoolSpec] = []
    for entry in entries:
        pools.extend(_tpu_pools(entry) if isinstance(entry, TpuPoolsEntry)
                     else [_cpu_pool(entry.nodes)])
    return tuple(pools)


def _cpu_pool(nodes: int) -> PoolSpec:
    cpus, gb = _CPU_VM_SIZE
    return PoolSpec(
        name=CPU_POOL,
        nodes=nodes,
        machine_type=CPU_MACHINE_TYPE,
        labels={tpu.GKE_NODEPOOL_LABEL: CPU_POOL},
        allocatable=_allocatable(cpus, gb, _CPU_MAX_PODS),
    )


def _tpu_pools(entry: TpuPoolsEntry) -> list[PoolSpec]:
    tpu_slice, plan = entry.slice, entry.plan
    cpus, gb = _TPU_VM_SIZE.get(tpu_slice.chips_per_host, _TPU_VM_SIZE[4])
    taint = {"key": tpu_slice.taint.key, "value": tpu_slice.taint.value,
             "effect": tpu_slice.taint.effect}
    return [
        PoolSpec(
            name=pool.name,
            nodes=plan.nodes_per_pool,
            machine_type=tpu_slice.vm_type,
            labels={
                tpu.GKE_NODEPOOL_LABEL: pool.name, **tpu_slice.node_labels, **pool.node_labels
            },
            taints=(taint,),
            allocatable={
                **_allocatable(cpus, gb, plan.max_pods_per_node),
                tpu.TPU_RESOURCE: str(tpu_slice.tpu_request),
            },
            slice=tpu_slice,
        )
        for pool in plan.pools
    ]


def _allocatable(cpus: int, gb: int, pods: int) -> dict[str, str]:
    return {"cpu": str(cpus), "memory": f"{gb}Gi", "pods": str(pods),
            "ephemeral-storage": "100Gi"}


# --- Node objects ----------------------------------------------------------------------------


def node_manifests(pools: Sequence[PoolSpec], now: datetime) -> list[JsonObj]:
    """Every Node of `pools`, Ready, with GKE's labels, taints and allocatable resources."""
    at = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out: list[JsonObj] = []
    address = 0
    for pool in pools:
        for name in pool.node_names():
            address += 1
            out.append(_node(pool, name, at, f"10.0.{address // 250}.{address % 250 + 2}"))
    return out


def _node(pool: PoolSpec, name: str, at: str, ip: str) -> JsonObj:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": pool.machine_type,
        "topology.kubernetes.io/zone": SIM_ZONE,
        "topology.kubernetes.io/region": SIM_REGION,
        **pool.labels,
    }
    spec: JsonObj = {"providerID": f"gce://sim/{SIM_ZONE}/{name}"}
    if pool.taints:
        spec["taints"] = [dict(t) for t in pool.taints]
    ready = {
        "type": "Ready", "status": "True", "reason": "KubeletReady",
        "message": "kubelet is posting ready status", "lastHeartbeatTime": at,
        "lastTransitionTime": at,
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": {
            "capacity": dict(pool.allocatable),
            "allocatable": dict(pool.allocatable),
            "conditions": [ready],
            "addresses": [{"type": "InternalIP", "address": ip},
                          {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "kubeletVersion": SIM_KUBELET_VERSION, "operatingSystem": "linux",
                "architecture": "amd64", "containerRuntimeVersion": "containerd://sim",
            },
        },
    }


async def create_nodes(store: Store, pools: Sequence[PoolSpec], now: datetime) -> list[JsonObj]:
    """Create the Nodes in a sim Store (a Node keeps the status it is created with)."""
    created: list[JsonObj] = []
    for i, node in enumerate(node_manifests(pools, now)):
        created.append(store.create(NODES, node))
        if i % 256 == 255:
            await asyncio.sleep(0)  # thousands of Nodes: let the server answer meanwhile
    return created


# The resource of core/v1 Nodes.
NODES: Final = GVR("", "v1", "nodes")
