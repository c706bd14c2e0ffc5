"""`SlicePoolsSpec`: what a user asks for when they ask for N TPU slices, as plain data.

The spec is what the `TpuSlicePools` component's arguments become once Pulumi-specific inputs (the
cluster name) are set aside. It is validated by `jobset_infra.tpu.validation` and turned into a
`SlicePoolsPlan` by `jobset_infra.tpu.pools`. Fields left as None are derived from the slice shape;
setting them explicitly to something GKE would reject is an error, never silently corrected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, astuple, dataclass, is_dataclass
from enum import StrEnum

__all__ = [
    "Autoscaling",
    "Capacity",
    "HostMaintenance",
    "Setting",
    "SlicePoolsError",
    "SlicePoolsSpec",
    "slice_pool_name",
    "spare_pool_name",
]


def slice_pool_name(group: str, index: int) -> str:
    """The GKE node pool of slice `index` of `group` (the one home of the formula)."""
    return f"{group}-{index}"


def spare_pool_name(group: str, index: int) -> str:
    """The GKE node pool of hot spare `index` of `group`."""
    return f"{group}-spare-{index}"


@dataclass(frozen=True)
class Setting:
    """A value a fix tells the user to give a field, worded for where they write it.

    The same rule fires for a Python program (`TpuSlicePools(..., multislice=False)`) and for a
    stack file (`multislice: false` under `jobset-infra:slices`), so a message holds the setting,
    not its spelling: `python()` and `yaml(key)` spell it.
    """

    field: str
    value: object

    def python(self) -> str:
        return f"{self.field}={_python(self.value)}"

    def yaml(self, key: str) -> str:
        return f"{key}.{self.field}: {_yaml(self.value)}"


def _python(value: object) -> str:
    if is_dataclass(value) and not isinstance(value, type):
        return f"{type(value).__name__}({', '.join(map(_python, astuple(value)))})"
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _yaml(value: object) -> str:
    if is_dataclass(value) and not isinstance(value, type):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in asdict(value).items()) + "}"
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


class SlicePoolsError(ValueError):
    """An invalid slice-pools argument; the message names the argument and says how to fix it.

    The message is text and `Setting`s: `str()` spells the settings as Python arguments (the
    components' surface); `for_stack(key)` spells them as keys of a stack file.
    """

    def __init__(self, field: str, *message: str | Setting) -> None:
        self.field = field
        self.parts = message
        super().__init__(f"{field}: {self._text(lambda s: s.python())}")

    def for_stack(self, key: str) -> str:
        """The message as a stack user reads it: `<key>.<field>: ...`, settings as YAML keys."""
        return f"{key}.{self.field}: {self._text(lambda s: s.yaml(key))}"

    def _text(self, spell: Callable[[Setting], str]) -> str:
        return "".join(p if isinstance(p, str) else spell(p) for p in self.parts)


class Capacity(StrEnum):
    """Where the VMs come from; exactly one per slice group (XPK's capacity types)."""

    ON_DEMAND = "on-demand"
    SPOT = "spot"
    RESERVATION = "reservation"
    FLEX_START = "flex-start"


class HostMaintenance(StrEnum):
    """node_config.host_maintenance_policy.maintenance_interval values."""

    AS_NEEDED = "AS_NEEDED"
    PERIODIC = "PERIODIC"


@dataclass(frozen=True)
class Autoscaling:
    """Per-pool autoscaling bounds; a TPU slice pool scales atomically, so only 0-or-N is valid."""

    min_nodes: int
    max_nodes: int


@dataclass(frozen=True)
class SlicePoolsSpec:
    """N identical TPU slices, one GKE node pool each, in one zone of the cluster's location."""

    name: str
    """Prefix of the node-pool names: pools are ``<name>-0`` ... ``<name>-<slices-1>``."""
    accelerator: str
    """Accelerator label or alias: "v5e", "tpu-v5-lite-podslice", "v6e", "v5p", "v4"."""
    topology: str
    """Slice topology, "AxB" (v5e, v6e) or "AxBxC" (v4, v5p)."""
    zone: str
    """The one zone of every pool; it must lie in the cluster's region."""
    cluster_location: str | None = None
    """The cluster's location (region, or zone for a zonal cluster); filled by for_cluster."""
    machine_type: str | None = None
    """TPU VM type; defaults to the family's VM with the most chips the topology allows."""
    slices: int = 1
    spares: int = 0
    """Hot-spare slice pools beside the slices, named ``<name>-spare-0`` ...: the same shape,
    labelled ``jobset-infra/spare-pool: "true"``, not counted in Kueue's quota. The controller's
    placement takes a spare only when a slice pool was lost (kept out after an infrastructure
    failure, or with nodes not ready), so a restart need not wait for the bad pool."""
    capacity: Capacity = Capacity.ON_DEMAND
    reservation: str | None = None
    """Reservation name (or projects/P/reservations/R) when capacity is "reservation"."""
    max_run_duration_seconds: int | None = None
    """Flex-start only: how long the VMs may run, at most 7 days."""
    autoscaling: Autoscaling | None = None
    """None: fixed size (flex-start: 0 to the slice's hosts). Else min 0 or hosts, max hosts."""
    node_count: int | None = None
    """Nodes per pool; derived (= hosts of the slice). Set only to assert it."""
    compact_placement: bool | None = None
    """Derived: multi-host slices of v4/v5e/v5p/v6e get COMPACT placement with tpu_topology,
    single-host slices none (TPU7x multi-host slices take a workload policy instead)."""
    workload_policy: str | None = None
    """Multi-host TPU7x only: an existing HIGH_THROUGHPUT workload policy (same project and
    region, accelerator topology = the slice's) to place the pools with; None = TpuSlicePools
    creates one."""
    max_pods_per_node: int = 15
    host_maintenance_interval: HostMaintenance | None = None
    queued_provisioning: bool = False
    """Flex-start only, TPU v6e and TPU7x: nodes come only through ProvisioningRequests (GKE
    queued provisioning), which the Kueue component's admission check creates for each admitted
    workload; without it a flex-start pool scales up for pending pods and Kueue uses no check."""
    preemptible: bool = False
    """Legacy preemptible VMs; prefer capacity="spot". Never together with spot."""
    auto_repair: bool | None = None
    """Derived: True, except flex-start (False)."""
    auto_upgrade: bool | None = None
    """Derived: True when the cluster is on a release channel, else False."""
    release_channel: str | None = None
    """The cluster's release channel (RAPID, REGULAR, STABLE, EXTENDED), None when pinned."""
    gke_version: str | None = None
    """The cluster's pinned GKE version, when known, for the version gates."""
    multislice: bool | None = None
    """Whether the slices form one Multislice job; derived as slices > 1."""
