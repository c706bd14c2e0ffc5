"""Node pools as GKE makes them, and their Nodes: TPU slice pools and the plain CPU pool. Pure.

The shapes of the Nodes `jobset-infra cluster up` (kwok) and the sim create: a GKE node pool's
machine type, VM size (`VM_SIZES`, vCPUs and memory per TPU machine type), labels, taint and
allocatable resources. A spec string lists pools, comma-separated:

- `v5e-2x4:4`: 4 node pools, each one v5e 2x4 slice. The slice shape comes from `jobset_infra.tpu`
  (`TpuSlice`, `plan_slice_pools`), so pool names, labels, taint and `google.com/tpu` match what
  the `TpuSlicePools` component creates. Without a machine type the multi-host form is used (the
  fewest chips per VM the topology allows: 2 x ct5lp-hightpu-4t for 2x4), as Multislice needs.
- `v5e-2x4@ct5lp-hightpu-8t:2`: the same with an explicit machine type (here single-host).
- `v5e=v5e-2x4@ct5lp-hightpu-4t:4`: pools named `v5e-0..3`, as a stack with `slices.name: v5e`
  names its GKE pools (the grammar is `jobset_infra.tpu.pools_text`'s).
- `cpu:3`: one CPU pool `default-pool` of 3 nodes (untainted, for ordinary pods).

`parse_nodes(text)` returns `PoolSpec`s (errors name the entry and the fix);
`node_manifests(pools, now)` the Node objects (the sim's `create_nodes` stores them, the local
cluster hands them to kwok).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.pools_text import (
    POOLS_REGION,
    POOLS_ZONE,
    PoolsTextError,
    TpuPoolsEntry,
    parse_pools_text,
)
from jobset_infra.tpu.slice import TpuSlice

__all__ = [
    "CPU_MACHINE_TYPE",
    "CPU_POOL",
    "KWOK_NODE_ANNOTATION",
    "KWOK_NODE_VALUE",
    "SIM_KUBELET_VERSION",
    "SIM_REGION",
    "SIM_ZONE",
    "VM_SIZES",
    "NodeSpecError",
    "PoolSpec",
    "VmSize",
    "kwok_node",
    "node_manifests",
    "parse_nodes",
    "vm_size",
]

_JsonObj = dict[str, Any]

# Where the pools pretend to live (the zone their plans are made for).
SIM_ZONE: Final = POOLS_ZONE
SIM_REGION: Final = POOLS_REGION
# The kubelet version the Nodes report.
SIM_KUBELET_VERSION: Final = "v1.33.5-gke.1000000"
# The GKE name of the default CPU pool and the machine type it pretends to be.
CPU_POOL: Final = "default-pool"
CPU_MACHINE_TYPE: Final = "e2-standard-8"
_CPU_MAX_PODS: Final = 110
# kwok manages only the Nodes that carry this annotation (the local cluster and a local stack's
# own pools create them), never a real one.
KWOK_NODE_ANNOTATION: Final = "kwok.x-k8s.io/node"
KWOK_NODE_VALUE: Final = "fake"


@dataclass(frozen=True)
class VmSize:
    """What one VM of a machine type has: vCPUs and memory (GB or GiB as GKE lists it)."""

    vcpus: int
    memory_gb: int


# vCPUs and memory per VM of each TPU machine type (GKE "Plan TPUs", checked 2026-12-02; the
# table in docs/tpu.md), and the CPU pool's e2-standard-8.
VM_SIZES: Final[Mapping[str, VmSize]] = {
    "ct5lp-hightpu-1t": VmSize(24, 48),
    "ct5lp-hightpu-4t": VmSize(112, 192),
    "ct5lp-hightpu-8t": VmSize(224, 384),
    "ct6e-standard-1t": VmSize(44, 448),
    "ct6e-standard-4t": VmSize(180, 720),
    "ct6e-standard-8t": VmSize(180, 1440),
    "ct5p-hightpu-4t": VmSize(208, 448),
    "tpu7x-standard-4t": VmSize(224, 960),
    CPU_MACHINE_TYPE: VmSize(8, 32),
}
# Machine types GKE lists without a size (v4, the v5e serving devices): the v5e VM with as many
# chips stands in.
_BY_CHIPS: Final[Mapping[int, VmSize]] = {
    1: VM_SIZES["ct5lp-hightpu-1t"], 4: VM_SIZES["ct5lp-hightpu-4t"],
    8: VM_SIZES["ct5lp-hightpu-8t"],
}


def vm_size(machine_type: str, chips_per_vm: int = 4) -> VmSize:
    """Return the VM size of `machine_type` (a v5e VM with as many chips when GKE lists none)."""
    return VM_SIZES.get(machine_type) or _BY_CHIPS.get(chips_per_vm, _BY_CHIPS[4])


class NodeSpecError(ValueError):
    """A `--nodes` spec that cannot be made; the message names the entry and the fix."""


@dataclass(frozen=True)
class PoolSpec:
    """One node pool: its name, size and what every node of it looks like."""

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
    return PoolSpec(
        name=CPU_POOL,
        nodes=nodes,
        machine_type=CPU_MACHINE_TYPE,
        labels={tpu.GKE_NODEPOOL_LABEL: CPU_POOL},
        allocatable=_allocatable(vm_size(CPU_MACHINE_TYPE), _CPU_MAX_PODS),
    )


def _tpu_pools(entry: TpuPoolsEntry) -> list[PoolSpec]:
    tpu_slice, plan = entry.slice, entry.plan
    size = vm_size(tpu_slice.vm_type, tpu_slice.chips_per_host)
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
                **_allocatable(size, plan.max_pods_per_node),
                tpu.TPU_RESOURCE: str(tpu_slice.tpu_request),
            },
            slice=tpu_slice,
        )
        for pool in plan.pools
    ]


def _allocatable(size: VmSize, pods: int) -> dict[str, str]:
    return {"cpu": str(size.vcpus), "memory": f"{size.memory_gb}Gi", "pods": str(pods),
            "ephemeral-storage": "100Gi"}


# --- Node objects ----------------------------------------------------------------------------


def node_manifests(pools: Sequence[PoolSpec], now: datetime) -> list[_JsonObj]:
    """Every Node of `pools`, Ready, with GKE's labels, taints and allocatable resources."""
    at = now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    out: list[_JsonObj] = []
    address = 0
    for pool in pools:
        for name in pool.node_names():
            address += 1
            out.append(_node(pool, name, at, f"10.0.{address // 250}.{address % 250 + 2}"))
    return out


def _node(pool: PoolSpec, name: str, at: str, ip: str) -> _JsonObj:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        tpu.INSTANCE_TYPE_LABEL: pool.machine_type,
        tpu.ZONE_LABEL: SIM_ZONE,
        "topology.kubernetes.io/region": SIM_REGION,
        **pool.labels,
    }
    spec: _JsonObj = {"providerID": f"gce://sim/{SIM_ZONE}/{name}"}
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


def kwok_node(node: _JsonObj) -> _JsonObj:
    """A Node of `node_manifests` made for kwok: its annotation, and no conditions (kwok reports
    readiness)."""
    metadata = {**node["metadata"],
                "annotations": {KWOK_NODE_ANNOTATION: KWOK_NODE_VALUE}}
    status = {k: v for k, v in node["status"].items() if k != "conditions"}
    return {**node, "metadata": metadata, "status": status}
