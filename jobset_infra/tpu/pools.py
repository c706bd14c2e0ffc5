"""`SlicePoolsPlan`: the node pools N TPU slices become, and what Kueue and JobSets need from them.

`plan_slice_pools(spec)` is pure: it validates the spec (every static rule) and returns a frozen
plan. The `TpuSlicePools` component creates exactly the pools in the plan; the Kueue component reads
its flavor labels, tolerations and chip quota; the JobSet component its replicas, parallelism and
TPU request; the controller its placement domains (one per pool). Nothing here calls a cloud API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from jobset_infra.tpu import constants as c
from jobset_infra.tpu.catalog import SlicePlacement
from jobset_infra.tpu.parse import parse_slice_pools_spec
from jobset_infra.tpu.slice import Taint, TpuSlice
from jobset_infra.tpu.spec import (
    Autoscaling,
    Capacity,
    HostMaintenance,
    SlicePoolsError,
    SlicePoolsSpec,
    slice_pool_name,
    spare_pool_name,
)
from jobset_infra.tpu.validation import validate_spec, zone_region

__all__ = [
    "GROUP_COUNTS",
    "PlacementDomain",
    "SlicePool",
    "SlicePoolsPlan",
    "WorkloadPolicy",
    "check_jobset_fits",
    "check_quota",
    "plan_slice_pools",
    "replacement_fingerprint",
    "replacement_warnings",
]


@dataclass(frozen=True)
class SlicePool:
    """One GKE node pool holding exactly one slice."""

    name: str
    index: int
    node_labels: Mapping[str, str]
    """Labels this package sets on the pool's nodes (GKE adds the accelerator/topology ones)."""
    spare: bool = False
    """A hot spare: not one of the slices (nor in Kueue's quota); its nodes carry
    ``jobset-infra/spare-pool: "true"``, which the controller's placement reads."""

    @property
    def node_selector(self) -> Mapping[str, str]:
        """Return the nodeSelector that pins a pod to this pool."""
        return MappingProxyType({c.GKE_NODEPOOL_LABEL: self.name})


@dataclass(frozen=True)
class PlacementDomain:
    """An exclusive topology domain for the controller: a pool, its size and its slice shape."""

    pool: str
    nodes: int
    slice: TpuSlice


@dataclass(frozen=True)
class WorkloadPolicy:
    """The HIGH_THROUGHPUT workload policy that places multi-host TPU7x slice pools."""

    name: str
    region: str
    """A resource policy lives in a region; GKE requires the node pool's own."""
    accelerator_topology: str
    create: bool
    """True: TpuSlicePools creates it; False: an existing policy the spec named."""


@dataclass(frozen=True)
class SlicePoolsPlan:
    """Everything decided about a group of identical slice pools; plain data, no Pulumi."""

    name: str
    slice: TpuSlice
    pools: tuple[SlicePool, ...]
    """Every node pool: the slices in order, then the hot spares."""
    zone: str
    location: str
    capacity: Capacity
    reservation: str | None
    initial_node_count: int
    autoscaling: Autoscaling | None
    placement: SlicePlacement | None
    """How each pool's VMs are placed together; None for single-host slices."""
    workload_policy: WorkloadPolicy | None
    max_pods_per_node: int
    auto_repair: bool
    auto_upgrade: bool
    preemptible: bool
    host_maintenance_interval: HostMaintenance | None
    max_run_duration_seconds: int | None
    queued_provisioning: bool = False
    """Flex-start pools whose nodes come only through ProvisioningRequests."""

    @property
    def compact_placement(self) -> bool:
        """Return whether the pools carry placementPolicy {COMPACT, tpuTopology}."""
        return self.placement is SlicePlacement.COMPACT

    @property
    def slices(self) -> int:
        """Return the number of slices (= pools but spares = JobSet replicas for one Multislice
        job)."""
        return sum(1 for pool in self.pools if not pool.spare)

    @property
    def spares(self) -> int:
        """Return the number of hot-spare pools (not counted in `slices` nor Kueue's quota)."""
        return sum(1 for pool in self.pools if pool.spare)

    @property
    def pool_names(self) -> tuple[str, ...]:
        """Return the node-pool names: the slices in order, then the spares."""
        return tuple(pool.name for pool in self.pools)

    @property
    def nodes_per_pool(self) -> int:
        """Return the nodes of each pool when scaled up: the slice's hosts."""
        return self.slice.hosts

    @property
    def total_nodes(self) -> int:
        """Return the nodes of all pools (spares too) when scaled up."""
        return len(self.pools) * self.nodes_per_pool

    @property
    def total_chips(self) -> int:
        """Return the chips of the slices, spares left out: the Kueue ``google.com/tpu`` quota
        they back."""
        return self.slices * self.slice.hosts * self.slice.chips_per_host

    @property
    def flavor_node_labels(self) -> Mapping[str, str]:
        """Return the node labels a Kueue ResourceFlavor for these pools should carry."""
        return self.slice.node_labels

    @property
    def capacity_node_labels(self) -> Mapping[str, str]:
        """Return labels the nodes carry because of the capacity kind (Spot, reservation,
        queued provisioning)."""
        if self.queued_provisioning:
            return MappingProxyType({c.QUEUED_LABEL: "true"})
        if self.capacity is Capacity.SPOT:
            return MappingProxyType({c.SPOT_LABEL: "true"})
        if self.capacity is Capacity.RESERVATION and self.reservation:
            return MappingProxyType({c.RESERVATION_NAME_LABEL: self.reservation.split("/")[-1]})
        return MappingProxyType({})

    @property
    def taints(self) -> tuple[Taint, ...]:
        """Return the taints on every node of every pool."""
        return (self.slice.taint,)

    @property
    def tolerations(self) -> tuple[Mapping[str, str], ...]:
        """Return the tolerations pods need to run on these pools (GKE taints queued nodes
        cloud.google.com/gke-queued=true:NoSchedule itself)."""
        if self.queued_provisioning:
            queued = {"key": c.QUEUED_LABEL, "operator": "Equal", "value": "true",
                      "effect": c.K8S_TAINT_EFFECT_NO_SCHEDULE}
            return (self.slice.toleration, MappingProxyType(queued))
        return (self.slice.toleration,)

    @property
    def tpu_request(self) -> int:
        """Return the ``google.com/tpu`` request and limit of each pod."""
        return self.slice.tpu_request

    @property
    def replicas(self) -> int:
        """Return the ReplicatedJob replicas for one job using every slice."""
        return self.slices

    @property
    def parallelism(self) -> int:
        """Return parallelism = completions of each child Job: one pod per host."""
        return self.slice.hosts

    @property
    def placement_domains(self) -> tuple[PlacementDomain, ...]:
        """Return one exclusive placement domain per pool, known even while scaled to zero."""
        return tuple(PlacementDomain(p.name, self.nodes_per_pool, self.slice) for p in self.pools)


def plan_slice_pools(request: SlicePoolsSpec | Mapping[str, Any]) -> SlicePoolsPlan:
    """Validate a spec (or a mapping of its fields) and return the plan of its node pools.

    Pure; raises SlicePoolsError naming the argument.
    """
    spec = parse_slice_pools_spec(request)
    tpu_slice = validate_spec(spec)
    assert spec.cluster_location is not None  # validate_zone requires it
    capacity = Capacity(spec.capacity)
    flex = capacity is Capacity.FLEX_START
    autoscaling = spec.autoscaling or (Autoscaling(0, tpu_slice.hosts) if flex else None)
    return SlicePoolsPlan(
        name=spec.name,
        slice=tpu_slice,
        pools=(*(_pool(spec.name, i) for i in range(spec.slices)),
               *(_spare(spec.name, i) for i in range(spec.spares))),
        zone=spec.zone,
        location=spec.cluster_location,
        capacity=capacity,
        reservation=spec.reservation,
        initial_node_count=autoscaling.min_nodes if autoscaling else tpu_slice.hosts,
        autoscaling=autoscaling,
        placement=tpu_slice.placement,
        workload_policy=_workload_policy(spec, tpu_slice),
        max_pods_per_node=spec.max_pods_per_node,
        auto_repair=not flex if spec.auto_repair is None else spec.auto_repair,
        auto_upgrade=_auto_upgrade(spec),
        preemptible=spec.preemptible,
        host_maintenance_interval=spec.host_maintenance_interval,
        max_run_duration_seconds=spec.max_run_duration_seconds,
        queued_provisioning=spec.queued_provisioning,
    )


def _workload_policy(spec: SlicePoolsSpec, tpu_slice: TpuSlice) -> WorkloadPolicy | None:
    if tpu_slice.placement is not SlicePlacement.WORKLOAD_POLICY:
        return None
    # One policy per slice group: every pool of it has the same accelerator topology.
    return WorkloadPolicy(
        name=spec.workload_policy or f"{spec.name}-wp",
        region=zone_region(spec.zone),
        accelerator_topology=tpu_slice.topology,
        create=spec.workload_policy is None,
    )


def _pool(group: str, index: int) -> SlicePool:
    labels = {c.SLICE_GROUP_LABEL: group, c.SLICE_INDEX_LABEL: str(index)}
    return SlicePool(slice_pool_name(group, index), index, MappingProxyType(labels))


def _spare(group: str, index: int) -> SlicePool:
    # No slice index: a spare stands in for whichever slice's pool was lost.
    labels = {c.SLICE_GROUP_LABEL: group, c.SPARE_POOL_LABEL: "true"}
    return SlicePool(spare_pool_name(group, index), index, MappingProxyType(labels), spare=True)


def _auto_upgrade(spec: SlicePoolsSpec) -> bool:
    # On a release channel GKE forces auto-upgrade; with a pinned version, training pools keep
    # their version until the operator upgrades them (tpu-provisioner does the same).
    if spec.auto_upgrade is not None:
        return spec.auto_upgrade
    return spec.release_channel is not None


def check_quota(plan: SlicePoolsPlan, nominal_quota: int) -> None:
    """Rule 11: a ClusterQueue's ``google.com/tpu`` quota must not exceed the chips that exist."""
    if nominal_quota > plan.total_chips:
        raise SlicePoolsError(
            "nominal_quota",
            f"{nominal_quota} chips exceed the {plan.total_chips} chips of {plan.slices} x "
            f"{plan.slice.describe()}; lower the quota to at most {plan.total_chips}",
        )


def check_jobset_fits(
    plan: SlicePoolsPlan, *, replicas: int, parallelism: int, tpu_request: int
) -> None:
    """Rule 12: a ReplicatedJob targeting these pools uses whole slices, one pod per host."""
    if replicas > plan.slices:
        raise SlicePoolsError(
            "replicas", f"{replicas} replicas need {replicas} slices, only {plan.slices} exist"
        )
    if parallelism != plan.parallelism:
        raise SlicePoolsError(
            "parallelism",
            f"a {plan.slice.topology} slice has {plan.parallelism} hosts; set parallelism and "
            f"completions to {plan.parallelism}",
        )
    if tpu_request != plan.tpu_request:
        raise SlicePoolsError(
            "resources",
            f"each pod must request all {plan.tpu_request} chips of its {plan.slice.vm_type} node "
            f"({c.TPU_RESOURCE}: {plan.tpu_request}), got {tpu_request}",
        )


GROUP_COUNTS: Final = frozenset({"slices", "spares"})
"""Fingerprint keys that count a group's pools: a change adds or deletes pools, it does not
replace the ones that stay."""


def replacement_fingerprint(plan: SlicePoolsPlan) -> Mapping[str, str]:
    """Return the plan's replace-on-change node-pool settings (rule 13), as strings."""
    return MappingProxyType(
        {
            "machine_type": plan.slice.vm_type,
            "topology": plan.slice.topology,
            "placement": _placement_fingerprint(plan),
            "initial_node_count": str(plan.initial_node_count),
            "max_pods_per_node": str(plan.max_pods_per_node),
            "zone": plan.zone,
            "capacity": _capacity_fingerprint(plan),
            "slices": str(plan.slices),
            "spares": str(plan.spares),
        }
    )


def _placement_fingerprint(plan: SlicePoolsPlan) -> str:
    if plan.workload_policy is not None:
        return f"workload policy {plan.workload_policy.name}"
    return "COMPACT" if plan.compact_placement else "none"


def _capacity_fingerprint(plan: SlicePoolsPlan) -> str:
    # spot, preemptible, reservation_affinity and flex_start are replace-on-change node_config
    # fields: switching spot -> reservation recreates every slice as surely as a new topology.
    if plan.capacity is Capacity.RESERVATION:
        return f"{plan.capacity} {plan.reservation}"
    if plan.queued_provisioning:
        return f"{plan.capacity} (queued provisioning)"
    return f"{plan.capacity} (preemptible)" if plan.preemptible else str(plan.capacity)


def replacement_warnings(
    previous: Mapping[str, str] | None, plan: SlicePoolsPlan
) -> tuple[str, ...]:
    """Return one warning per change that recreates or deletes slices (empty if none)."""
    if not previous:
        return ()
    current = dict(replacement_fingerprint(plan))
    warnings = [
        f"changing {key} from {previous[key]!r} to {value!r} replaces all {plan.slices} slice "
        f"pool(s) of {plan.name!r}: running workloads on them are evicted"
        for key, value in current.items()
        if key not in GROUP_COUNTS and key in previous and previous[key] != value
    ]
    for key, now, name in (("slices", plan.slices, slice_pool_name),
                           ("spares", plan.spares, spare_pool_name)):
        before = int(previous.get(key, "0") or 0)
        if before > now:
            gone = ", ".join(name(plan.name, i) for i in range(now, before))
            warnings.append(f"reducing {key} from {before} to {now} deletes pool(s) {gone}: "
                            "running workloads on them are evicted")
    return tuple(warnings)
