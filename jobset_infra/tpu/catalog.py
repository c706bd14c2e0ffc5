"""The Cloud TPU accelerators GKE offers: machine types, chips per VM, labels and valid topologies.

Pure data plus lookups; no I/O. Every entry carries the public pages its facts were checked
against (`Accelerator.sources`, checked 2026-12-02; docs/tpu.md tabulates them): GKE's "Plan TPUs"
machine-type table, the Cloud TPU page of each generation (topologies, hosts, TensorCores per
chip) and, where a page lists only "the most common" shapes, XPK's generator of the shapes GKE
accepts. v5e (``tpu-v5-lite-podslice``), v6e, v5p and TPU7x (Ironwood) are deployable; v4 and the
single-host v5e serving devices are kept for completeness. Multi-host slices of all generations
but TPU7x are placed with COMPACT + ``tpu_topology``; TPU7x with a workload policy
(`SlicePlacement`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from itertools import combinations_with_replacement
from math import prod
from types import MappingProxyType

__all__ = [
    "ACCELERATORS",
    "TPU7X",
    "V4",
    "V5E",
    "V5E_DEVICE",
    "V5P",
    "V6E",
    "Accelerator",
    "SlicePlacement",
    "TpuShapeError",
    "accelerator_for_machine_type",
    "parse_topology",
    "resolve_accelerator",
]


class TpuShapeError(ValueError):
    """A TPU accelerator, machine type or topology that does not exist; the message lists them."""


class SlicePlacement(StrEnum):
    """How GKE places the VMs of one multi-host slice (single-host slices get no placement)."""

    COMPACT = "compact"
    """placementPolicy {type: COMPACT, tpuTopology: <topology>} (v4, v5e, v5p, v6e)."""
    WORKLOAD_POLICY = "workload-policy"
    """A HIGH_THROUGHPUT workload policy with the slice's accelerator topology, named in
    placementPolicy.policyName; it replaces tpuTopology (TPU7x, GKE "About Ironwood")."""


@dataclass(frozen=True)
class Accelerator:
    """One GKE TPU accelerator family (the value of ``cloud.google.com/gke-tpu-accelerator``)."""

    label: str
    generation: str
    aliases: tuple[str, ...]
    # machine type -> chips per VM
    machine_types: Mapping[str, int]
    # topology -> chips-per-VM values a slice of that topology may be built from
    topologies: Mapping[str, frozenset[int]]
    dimensions: int
    tensorcores_per_chip: int
    # prefix of the TPU-API accelerator type, e.g. "v5litepod" in "v5litepod-16"
    tpu_api_prefix: str
    multi_host: bool = True
    multi_host_placement: SlicePlacement = SlicePlacement.COMPACT
    min_gke_version: str | None = None
    """The oldest GKE Standard version that runs this generation, when GKE documents one."""
    topology_rule: str = ""
    """The rule behind `topologies` in words, for errors that cannot list them all."""
    queued_provisioning: bool = False
    """Whether GKE runs flex-start pools of this family with queued provisioning (nodes only
    through ProvisioningRequests): Google's own tooling does for v6e and TPU7x (cluster-toolkit,
    2026-02), and gcloud refused it for TPUs before (XPK PR 900, 2025-12)."""
    sources: tuple[str, ...] = ()
    """The public pages the facts above were checked against (docs/tpu.md lists them)."""

    def machine_type_for(self, chips_per_vm: int) -> str:
        """Return the machine type of this family with ``chips_per_vm`` chips."""
        for name, chips in self.machine_types.items():
            if chips == chips_per_vm:
                return name
        raise TpuShapeError(f"{self.label} has no machine type with {chips_per_vm} chips per VM")


def parse_topology(topology: str, dimensions: int) -> tuple[int, ...]:
    """Return the dimensions of a topology string such as "2x4"; raise if it is malformed."""
    form = "x".join("ABC"[:dimensions])
    parts = topology.split("x")
    if len(parts) != dimensions or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise TpuShapeError(
            f"topology {topology!r} is malformed: this accelerator uses {dimensions}-D topologies "
            f"written {form} with positive integers, e.g. {'2x4' if dimensions == 2 else '2x2x2'}"
        )
    return tuple(int(p) for p in parts)


def _two_d(single_host: Mapping[str, frozenset[int]]) -> Mapping[str, frozenset[int]]:
    # v5e and v6e: 1x1, 2x2 and 2x4 may be single-host; 4x4 and larger are 4 chips per VM only.
    shapes = dict(single_host)
    shapes.update({t: frozenset({4}) for t in ("4x4", "4x8", "8x8", "8x16", "16x16")})
    return MappingProxyType(shapes)


def _three_d(max_chips: int, max_dim: int) -> Mapping[str, frozenset[int]]:
    """v4/v5p/TPU7x: 2x2x1; dims in {2,4} non-decreasing up to 4x4x4; beyond 64 chips (one
    4x4x4 cube) non-decreasing multiples of 4, at most `max_chips` chips and `max_dim` a side."""
    shapes = {"2x2x1": frozenset({4})}
    for dims in combinations_with_replacement((2, 4), 3):
        shapes["x".join(map(str, dims))] = frozenset({4})
    multiples = range(4, max_dim + 1, 4)
    for dims in combinations_with_replacement(multiples, 3):
        if 64 < prod(dims) <= max_chips:
            shapes["x".join(map(str, dims))] = frozenset({4})
    return MappingProxyType(dict(sorted(shapes.items(), key=lambda kv: _topology_key(kv[0]))))


def _three_d_rule(max_chips: int, max_dim: int) -> str:
    return (f"2x2x1, then AxBxC with A<=B<=C: sides 2 or 4 up to 4x4x4, beyond that multiples "
            f"of 4 up to {max_dim} a side and {max_chips:,} chips")


def _topology_key(topology: str) -> tuple[int, tuple[int, ...]]:
    dims = tuple(int(d) for d in topology.split("x"))
    return prod(dims), dims


# Pages cited below (each checked 2026-12-02).
_GKE_PLAN = "https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus"
_XPK = "https://github.com/AI-Hypercomputer/xpk/blob/main/src/xpk/core/system_characteristics.py"
_QUEUED_TPUS = "https://github.com/GoogleCloudPlatform/cluster-toolkit/pull/5218"

V5E = Accelerator(
    label="tpu-v5-lite-podslice",
    generation="v5e",
    aliases=("v5e", "v5litepod", "v5lite", "v5-lite-podslice"),
    machine_types=MappingProxyType(
        {"ct5lp-hightpu-1t": 1, "ct5lp-hightpu-4t": 4, "ct5lp-hightpu-8t": 8}
    ),
    topologies=_two_d({"1x1": frozenset({1}), "2x2": frozenset({4}), "2x4": frozenset({4, 8})}),
    dimensions=2,
    tensorcores_per_chip=1,
    tpu_api_prefix="v5litepod",
    sources=("https://cloud.google.com/tpu/docs/v5e", _GKE_PLAN, _XPK),
)
# Single-host v5e serving VMs; never multi-host (gke-tpu.md §1.1).
V5E_DEVICE = Accelerator(
    label="tpu-v5-lite-device",
    generation="v5e",
    aliases=("v5e-device", "v5-lite-device"),
    machine_types=MappingProxyType(
        {"ct5l-hightpu-1t": 1, "ct5l-hightpu-4t": 4, "ct5l-hightpu-8t": 8}
    ),
    topologies=MappingProxyType(
        {"1x1": frozenset({1}), "2x2": frozenset({4}), "2x4": frozenset({8})}
    ),
    dimensions=2,
    tensorcores_per_chip=1,
    tpu_api_prefix="v5litepod",
    multi_host=False,
    sources=("https://cloud.google.com/tpu/docs/v5e", _GKE_PLAN),
)
V6E = Accelerator(
    label="tpu-v6e-slice",
    generation="v6e",
    aliases=("v6e", "trillium", "v6e-slice"),
    machine_types=MappingProxyType(
        {"ct6e-standard-1t": 1, "ct6e-standard-4t": 4, "ct6e-standard-8t": 8}
    ),
    topologies=_two_d({"1x1": frozenset({1}), "2x2": frozenset({4}), "2x4": frozenset({4, 8})}),
    dimensions=2,
    tensorcores_per_chip=1,
    tpu_api_prefix="v6e",
    queued_provisioning=True,
    sources=("https://cloud.google.com/tpu/docs/v6e", _GKE_PLAN, _XPK, _QUEUED_TPUS),
)
V4 = Accelerator(
    label="tpu-v4-podslice",
    generation="v4",
    aliases=("v4", "v4-podslice"),
    machine_types=MappingProxyType({"ct4p-hightpu-4t": 4}),
    topologies=_three_d(max_chips=4096, max_dim=16),
    topology_rule=_three_d_rule(max_chips=4096, max_dim=16),
    dimensions=3,
    tensorcores_per_chip=2,
    tpu_api_prefix="v4",
    sources=("https://cloud.google.com/tpu/docs/v4", _GKE_PLAN),
)
# v5p: a pod holds 8,960 chips, but the largest slice is 96 cubes, 16x16x24 (Cloud TPU v5p).
V5P = Accelerator(
    label="tpu-v5p-slice",
    generation="v5p",
    aliases=("v5p", "v5p-slice"),
    machine_types=MappingProxyType({"ct5p-hightpu-4t": 4}),
    topologies=_three_d(max_chips=6144, max_dim=24),
    topology_rule=_three_d_rule(max_chips=6144, max_dim=24),
    dimensions=3,
    tensorcores_per_chip=2,
    tpu_api_prefix="v5p",
    sources=("https://cloud.google.com/tpu/docs/v5p", _GKE_PLAN, _XPK),
)
# TPU7x (Ironwood): 4-chip VMs only in GKE's machine-type table; 9,216 chips (144 cubes) a pod;
# multi-host slices take a workload policy instead of tpu_topology (GKE "About Ironwood").
TPU7X = Accelerator(
    label="tpu7x",
    generation="TPU7x",
    aliases=("tpu7x", "ironwood", "v7x", "7x"),
    machine_types=MappingProxyType({"tpu7x-standard-4t": 4}),
    topologies=_three_d(max_chips=144 * 64, max_dim=256),
    topology_rule=_three_d_rule(max_chips=144 * 64, max_dim=256),
    dimensions=3,
    tensorcores_per_chip=2,
    tpu_api_prefix="tpu7x",
    multi_host_placement=SlicePlacement.WORKLOAD_POLICY,
    min_gke_version="1.34.0-gke.2201000",
    queued_provisioning=True,
    sources=(
        "https://cloud.google.com/tpu/docs/tpu7x",
        "https://cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood",
        _GKE_PLAN,
        "https://cloud.google.com/sdk/gcloud/reference/compute/resource-policies/create/"
        "workload-policy",
        _XPK,
        _QUEUED_TPUS,
    ),
)

ACCELERATORS: Mapping[str, Accelerator] = MappingProxyType(
    {a.label: a for a in (V5E, V5E_DEVICE, V6E, V4, V5P, TPU7X)}
)

# Machine-type prefixes of TPU families the catalog does not build, so the error can say so.
_UNSUPPORTED_PREFIXES = {"ct4l-": "tpu-v4-lite-device"}


def _known_names() -> str:
    names = [f"{a.label} ({', '.join(a.aliases)})" for a in ACCELERATORS.values()]
    return "; ".join(names)


def resolve_accelerator(name: str) -> Accelerator:
    """Return the accelerator for a label value or a friendly alias ("v5e", "v5litepod")."""
    key = name.strip().lower()
    for accelerator in ACCELERATORS.values():
        if key == accelerator.label or key in accelerator.aliases:
            return accelerator
    raise TpuShapeError(f"unknown TPU accelerator {name!r}; choose one of: {_known_names()}")


def accelerator_for_machine_type(machine_type: str) -> Accelerator:
    """Return the accelerator family a TPU machine type belongs to; raise if it is not a TPU VM."""
    for accelerator in ACCELERATORS.values():
        if machine_type in accelerator.machine_types:
            return accelerator
    for prefix, family in _UNSUPPORTED_PREFIXES.items():
        if machine_type.startswith(prefix):
            raise TpuShapeError(
                f"machine type {machine_type!r} is a {family} VM, which is not supported yet"
            )
    raise TpuShapeError(
        f"machine type {machine_type!r} is not a known TPU VM type; choose one of: "
        f"{', '.join(_all_machine_types())}"
    )


def _all_machine_types() -> Iterable[str]:
    for accelerator in ACCELERATORS.values():
        yield from accelerator.machine_types
