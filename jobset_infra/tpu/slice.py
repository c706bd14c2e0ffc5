"""`TpuSlice`: one TPU slice shape (accelerator, topology, machine type) and the numbers it implies.

Pure and frozen. Constructing a slice validates it against the catalog (reference gke-tpu.md §6
rules 1-4), so an impossible shape never exists as a value; the error lists the valid choices.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from types import MappingProxyType

from jobset_infra.tpu import constants as c
from jobset_infra.tpu.catalog import (
    Accelerator,
    SlicePlacement,
    TpuShapeError,
    accelerator_for_machine_type,
    parse_topology,
    resolve_accelerator,
)

__all__ = ["TPU_TAINT", "Taint", "TpuSlice"]


@dataclass(frozen=True)
class Taint:
    """A node taint; ``effect`` in Kubernetes spelling, ``gke_effect`` in the node-pool API's."""

    key: str
    value: str
    effect: str

    @property
    def gke_effect(self) -> str:
        """Return the effect as the GKE API spells it (NoSchedule -> NO_SCHEDULE)."""
        return {c.K8S_TAINT_EFFECT_NO_SCHEDULE: c.GKE_TAINT_EFFECT_NO_SCHEDULE}[self.effect]


TPU_TAINT = Taint(c.TPU_TAINT_KEY, c.TPU_TAINT_VALUE, c.K8S_TAINT_EFFECT_NO_SCHEDULE)


@dataclass(frozen=True)
class TpuSlice:
    """A valid TPU slice. ``accelerator`` may be a label value or an alias; it is normalised.

    ``machine_type`` defaults to the family's VM with the most chips the topology allows (the
    fewest hosts): v5e 2x4 becomes one ``ct5lp-hightpu-8t``; pass ``ct5lp-hightpu-4t`` for the
    two-host form that Multislice needs.
    """

    accelerator: str
    topology: str
    machine_type: str | None = None

    def __post_init__(self) -> None:
        family = resolve_accelerator(self.accelerator)
        dims = parse_topology(self.topology, family.dimensions)
        allowed = _allowed_chips_per_vm(family, self.topology)
        machine_type = self.machine_type or family.machine_type_for(max(allowed))
        _check_machine_type(family, machine_type, self.topology, allowed)
        chips_per_vm = family.machine_types[machine_type]
        if prod(dims) % chips_per_vm:  # rule 4; unreachable for catalog shapes, kept as a guard
            raise TpuShapeError(
                f"topology {self.topology} ({prod(dims)} chips) is not a whole number of "
                f"{machine_type} VMs ({chips_per_vm} chips each)"
            )
        object.__setattr__(self, "accelerator", family.label)
        object.__setattr__(self, "machine_type", machine_type)

    @property
    def family(self) -> Accelerator:
        """Return the catalog entry of this slice's accelerator."""
        return resolve_accelerator(self.accelerator)

    @property
    def dims(self) -> tuple[int, ...]:
        """Return the topology dimensions, e.g. (2, 4)."""
        return parse_topology(self.topology, self.family.dimensions)

    @property
    def vm_type(self) -> str:
        """Return the machine type (never None once constructed)."""
        assert self.machine_type is not None  # set in __post_init__
        return self.machine_type

    @property
    def chips(self) -> int:
        """Return the number of TPU chips in the slice."""
        return prod(self.dims)

    @property
    def chips_per_host(self) -> int:
        """Return the chips of one VM (= node), the ``-Nt`` suffix of the machine type."""
        return self.family.machine_types[self.vm_type]

    @property
    def hosts(self) -> int:
        """Return the number of VMs, which is the number of GKE nodes in the slice's node pool."""
        return self.chips // self.chips_per_host

    @property
    def is_multi_host(self) -> bool:
        """Return True when the slice spans more than one VM (COMPACT placement, atomic pool)."""
        return self.hosts > 1

    @property
    def placement(self) -> SlicePlacement | None:
        """Return how GKE places the slice's VMs together; None for a single-host slice."""
        return self.family.multi_host_placement if self.is_multi_host else None

    @property
    def tpu_request(self) -> int:
        """Return the ``google.com/tpu`` request of each pod: all chips of its node."""
        return self.chips_per_host

    @property
    def tpu_api_type(self) -> str:
        """Return the TPU-API accelerator type name, e.g. "v5litepod-16" or "v5p-16"."""
        return f"{self.family.tpu_api_prefix}-{self.chips * self.family.tensorcores_per_chip}"

    @property
    def node_labels(self) -> Mapping[str, str]:
        """Return the labels GKE puts on every node of the slice (accelerator and topology)."""
        return MappingProxyType(
            {c.ACCELERATOR_LABEL: self.accelerator, c.TOPOLOGY_LABEL: self.topology}
        )

    @property
    def taint(self) -> Taint:
        """Return the taint on TPU nodes (google.com/tpu=present:NoSchedule)."""
        return TPU_TAINT

    @property
    def toleration(self) -> Mapping[str, str]:
        """Return the pod toleration for ``taint``, as a Kubernetes object."""
        return MappingProxyType(
            {"key": c.TPU_TAINT_KEY, "operator": "Exists", "effect": TPU_TAINT.effect}
        )

    def describe(self) -> str:
        """Return a one-line human description, e.g. "tpu-v5-lite-podslice 2x4 (2 x ...)"."""
        return (
            f"{self.accelerator} {self.topology} ({self.hosts} x {self.vm_type}, "
            f"{self.chips} chips)"
        )


def _allowed_chips_per_vm(family: Accelerator, topology: str) -> frozenset[int]:
    """Rule 3: the topology must be one the family offers; return its allowed chips per VM."""
    allowed = family.topologies.get(topology)
    if allowed is None:
        rule = f" ({family.topology_rule})" if family.topology_rule else ""
        raise TpuShapeError(
            f"topology {topology!r} does not exist for {family.label}; valid topologies{rule}: "
            f"{_abbreviated(list(family.topologies))}"
        )
    return allowed


def _check_machine_type(
    family: Accelerator, machine_type: str, topology: str, allowed: frozenset[int]
) -> None:
    """Rules 1-3: the machine type belongs to the family and fits the topology."""
    if machine_type not in family.machine_types:
        owner = accelerator_for_machine_type(machine_type)  # raises for unknown types
        hint = ""
        if owner.label == "tpu-v5-lite-device":
            hint = " (ct5l-* VMs are single-host serving devices and cannot form multi-host slices)"
        raise TpuShapeError(
            f"machine type {machine_type!r} belongs to accelerator {owner.label}, not "
            f"{family.label}{hint}; for {family.label} use one of: "
            f"{', '.join(family.machine_types)}"
        )
    if family.machine_types[machine_type] not in allowed:
        fits = [m for m, chips in family.machine_types.items() if chips in allowed]
        per_vm = family.machine_types[machine_type]
        raise TpuShapeError(
            f"machine type {machine_type!r} ({per_vm} chip{'s' if per_vm > 1 else ''} per VM) "
            f"cannot build a {family.label} {topology} slice; use one of: {', '.join(fits)}"
        )


def _abbreviated(items: list[str], limit: int = 24) -> str:
    shown = ", ".join(items[:limit])
    return shown if len(items) <= limit else f"{shown}, ... ({len(items)} in all)"
