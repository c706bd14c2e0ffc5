"""Small fluent builders for placement tests: TPU-like Nodes and exclusive child Job manifests."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.placement import (
    SlimNode,
    Taint,
    slim_node_from_manifest,
)

POOL_KEY = "cloud.google.com/gke-nodepool"
ACCEL_KEY = "cloud.google.com/gke-tpu-accelerator"
TOPO_KEY = "cloud.google.com/gke-tpu-topology"
TPU = "google.com/tpu"
TPU_TAINT = Taint(TPU, "present", "NoSchedule")


def tpu_node(
    name: str,
    pool: str,
    *,
    chips: int = 4,
    topology: str = "2x4",
    ready: bool = True,
    unschedulable: bool = False,
    taints: tuple[Taint, ...] = (TPU_TAINT,),
) -> SlimNode:
    """A v5e host of `pool`: 4 chips, the TPU taint, Ready."""
    labels = {POOL_KEY: pool, ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: topology}
    allocatable = {TPU: chips * 1000, "cpu": 112_000, "memory": 192 * 2**30 * 1000, "pods": 110_000}
    return SlimNode(name, labels, taints, allocatable, ready, unschedulable)


def tpu_pools(count: int, nodes_per_pool: int = 2, topology: str = "2x4") -> list[SlimNode]:
    """`count` pools named pool-0.. with `nodes_per_pool` hosts each."""
    return [
        tpu_node(f"pool-{p}-node-{n}", f"pool-{p}", topology=topology)
        for p in range(count)
        for n in range(nodes_per_pool)
    ]


def node_manifest(name: str, pool: str, *, ready: bool = True, chips: int = 4) -> dict[str, Any]:
    """A Node manifest as the API server returns it."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {POOL_KEY: pool, TOPO_KEY: "2x4"}},
        "spec": {"taints": [{"key": TPU, "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {TPU: str(chips), "cpu": "111500m", "memory": "180Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


@dataclass
class JobBuilder:
    """Fluent builder of an exclusive child Job manifest: make_job("js-w-0").pods(2).obj()."""

    name: str
    namespace: str = "default"
    jobset: str = "js"
    _obj: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._obj = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "uid": f"uid-{self.name}",
                "annotations": {c.EXCLUSIVE_KEY: POOL_KEY},
                "ownerReferences": [
                    {
                        "apiVersion": c.API_VERSION,
                        "kind": c.KIND,
                        "name": self.jobset,
                        "uid": f"uid-{self.jobset}",
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "parallelism": 2,
                "completions": 2,
                "completionMode": "Indexed",
                "template": {
                    "spec": {
                        "containers": [{"name": "main", "resources": {"limits": {TPU: "4"}}}],
                        "tolerations": [{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
                        "nodeSelector": {ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: "2x4"},
                    }
                },
            },
        }

    @property
    def _pod(self) -> dict[str, Any]:
        return self._obj["spec"]["template"]["spec"]  # type: ignore[no-any-return]

    def pods(self, n: int) -> JobBuilder:
        self._obj["spec"]["parallelism"] = n
        self._obj["spec"]["completions"] = n
        return self

    def chips(self, n: int) -> JobBuilder:
        self._pod["containers"][0]["resources"] = {"limits": {TPU: str(n)}}
        return self

    def on(self, domain: str) -> JobBuilder:
        self._pod.setdefault("nodeSelector", {})[POOL_KEY] = domain
        return self

    def select(self, key: str, value: str) -> JobBuilder:
        self._pod.setdefault("nodeSelector", {})[key] = value
        return self

    def no_tolerations(self) -> JobBuilder:
        self._pod.pop("tolerations", None)
        return self

    def priority_class(self, name: str) -> JobBuilder:
        self._pod["priorityClassName"] = name
        return self

    def suspended(self) -> JobBuilder:
        self._obj["spec"]["suspend"] = True
        return self

    def finished(self, kind: str = "Complete") -> JobBuilder:
        self._obj["status"] = {"conditions": [{"type": kind, "status": "True"}]}
        return self

    def active(self, pods: int) -> JobBuilder:
        self._obj.setdefault("status", {})["active"] = pods
        return self

    def deleting(self) -> JobBuilder:
        self._obj["metadata"]["deletionTimestamp"] = "2026-11-29T10:00:00Z"
        return self

    def not_exclusive(self) -> JobBuilder:
        self._obj["metadata"]["annotations"].pop(c.EXCLUSIVE_KEY)
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)


def make_job(name: str, jobset: str = "js", namespace: str = "default") -> JobBuilder:
    """Start building an exclusive child Job of JobSet `jobset`."""
    return JobBuilder(name, namespace, jobset)


__all__ = [
    "ACCEL_KEY",
    "POOL_KEY",
    "TOPO_KEY",
    "TPU",
    "TPU_TAINT",
    "JobBuilder",
    "make_job",
    "node_manifest",
    "slim_node_from_manifest",
    "tpu_node",
    "tpu_pools",
]
