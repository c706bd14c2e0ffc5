"""Static validation of a `SlicePoolsSpec`: reference gke-tpu.md §6 rules 1-14, one function each.

Pure; no I/O. Each ``validate_*`` raises `SlicePoolsError` naming the argument and the fix, so a bad
slice request fails at ``pulumi preview``. `validate_spec` runs them all and returns the slice.
Rule 15 (cluster prerequisites) lives with the cluster arguments in `jobset_infra.tpu.cluster`.
"""

from __future__ import annotations

import re

from jobset_infra.tpu import constants as c
from jobset_infra.tpu.catalog import (
    ACCELERATORS,
    SlicePlacement,
    TpuShapeError,
    resolve_accelerator,
)
from jobset_infra.tpu.slice import TpuSlice
from jobset_infra.tpu.spec import (
    Autoscaling,
    Capacity,
    HostMaintenance,
    Setting,
    SlicePoolsError,
    SlicePoolsSpec,
    slice_pool_name,
    spare_pool_name,
)

__all__ = [
    "RELEASE_CHANNELS",
    "at_least_version",
    "release_channel_problem",
    "validate_capacity",
    "validate_host_maintenance",
    "validate_max_pods",
    "validate_name",
    "validate_node_count",
    "validate_placement",
    "validate_shape",
    "validate_slices",
    "validate_spec",
    "validate_versions",
    "validate_zone",
    "zone_region",
]

RELEASE_CHANNELS = ("RAPID", "REGULAR", "STABLE", "EXTENDED")
# GKE node-pool names: lowercase letters, digits and hyphens, start with a letter, <= 40 chars.
_POOL_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_POOL_NAME_MAX = 40
_ZONE = re.compile(r"^(?P<region>[a-z]+-[a-z]+[0-9]+)-[a-z]$")
_REGION = re.compile(r"^[a-z]+-[a-z]+[0-9]+$")
# Compute Engine resource names (RFC 1035): resource policies among them.
_RESOURCE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:-gke\.(\d+))?$")
# GKE accepts 8-256 pods per node on Standard node pools.
_MAX_PODS_RANGE = (8, 256)


def validate_spec(spec: SlicePoolsSpec) -> TpuSlice:
    """Run every static rule over ``spec``; return its slice. Raise on the first violation.

    ``spec`` must be type-checked already (`jobset_infra.tpu.parse.parse_slice_pools_spec`).
    """
    tpu_slice = validate_shape(spec)
    validate_name(spec)
    validate_slices(spec, tpu_slice)
    validate_zone(spec)
    validate_placement(spec, tpu_slice)
    validate_node_count(spec, tpu_slice)
    validate_capacity(spec, tpu_slice)
    validate_host_maintenance(spec)
    validate_max_pods(spec)
    validate_versions(spec, tpu_slice)
    return tpu_slice


def validate_shape(spec: SlicePoolsSpec) -> TpuSlice:
    """Rules 1-4: accelerator, topology and machine type form a slice that exists."""
    try:
        return TpuSlice(spec.accelerator, spec.topology, spec.machine_type)
    except TpuShapeError as error:
        raise SlicePoolsError(_shape_field(spec), str(error)) from None


def _shape_field(spec: SlicePoolsSpec) -> str:
    """Return which of accelerator/topology/machine_type made the shape impossible."""
    try:
        resolve_accelerator(spec.accelerator)
    except TpuShapeError:
        return "accelerator"
    try:
        TpuSlice(spec.accelerator, spec.topology)
    except TpuShapeError:
        return "topology"
    return "machine_type"


def validate_name(spec: SlicePoolsSpec) -> None:
    """Every generated pool name ``<name>-<index>`` (``<name>-spare-<index>``) is a valid GKE
    node-pool name."""
    longest = slice_pool_name(spec.name, max(spec.slices - 1, 0))
    if spec.spares > 0:
        longest = spare_pool_name(spec.name, spec.spares - 1)
    if not _POOL_NAME.match(spec.name) or len(longest) > _POOL_NAME_MAX:
        raise SlicePoolsError(
            "name",
            f"pool names such as {longest!r} must be lowercase letters, digits and hyphens, "
            f"start with a letter and be at most {_POOL_NAME_MAX} characters; "
            "choose a shorter lowercase name",
        )


def validate_slices(spec: SlicePoolsSpec, tpu_slice: TpuSlice) -> None:
    """Rule 11: 1 slice up to a cluster's node limit; a Multislice is of multi-host slices."""
    if spec.slices < 1:
        raise SlicePoolsError("slices", f"must be at least 1, got {spec.slices}")
    if spec.spares < 0:
        raise SlicePoolsError("spares", f"must be 0 or more, got {spec.spares}")
    nodes = (spec.slices + spec.spares) * tpu_slice.hosts
    if nodes > c.GKE_MAX_NODES_PER_CLUSTER:
        field = "spares" if spec.slices * tpu_slice.hosts <= c.GKE_MAX_NODES_PER_CLUSTER \
            else "slices"
        spares = f" and {spec.spares} spares" if spec.spares else ""
        raise SlicePoolsError(
            field,
            f"{spec.slices} slices{spares} of {tpu_slice.hosts} node(s) are {nodes} nodes, more "
            f"than a GKE cluster's {c.GKE_MAX_NODES_PER_CLUSTER}; use at most "
            f"{c.GKE_MAX_NODES_PER_CLUSTER // tpu_slice.hosts} slices{' and spares' * bool(spares)}"
            f"{' together' * bool(spares)}",
        )
    multislice = spec.multislice if spec.multislice is not None else spec.slices > 1
    if multislice and not tpu_slice.is_multi_host:
        fix = _multi_host_alternative(tpu_slice)
        raise SlicePoolsError(
            "slices",
            f"{spec.slices} slices of single-host {tpu_slice.describe()} cannot form a Multislice "
            f"(GKE Multislice needs multi-host slices); {fix}, or set ",
            Setting("multislice", False), " for independent single-host pools",
        )


def _multi_host_alternative(tpu_slice: TpuSlice) -> str:
    family = tpu_slice.family
    multi = [
        f"{t} on {family.machine_type_for(min(chips))}"
        for t, chips in family.topologies.items()
        if TpuSlice(family.label, t, family.machine_type_for(min(chips))).hosts > 1
    ]
    if not (family.multi_host and multi):
        return f"{family.label} has no multi-host slices, use tpu-v5-lite-podslice"
    return f"use a multi-host shape such as {multi[0]}"


def validate_zone(spec: SlicePoolsSpec) -> None:
    """Rule 8: one zone, inside the cluster's region (or equal to a zonal cluster's zone)."""
    match = _ZONE.match(spec.zone)
    if not match:
        raise SlicePoolsError(
            "zone", f"{spec.zone!r} is not a single GCP zone such as 'us-west4-a'; give one zone"
        )
    location = spec.cluster_location
    if location is None:
        raise SlicePoolsError(
            "cluster_location",
            "unknown, so the zone cannot be checked against the cluster's region; pass the "
            "cluster's location (or build the args with TpuSlicePoolsArgs.for_cluster)",
        )
    if _REGION.match(location):
        if match["region"] != location:
            raise SlicePoolsError(
                "zone",
                f"{spec.zone!r} is not in the cluster's region {location!r}; "
                f"choose a zone {location}-<letter> that offers {spec.accelerator}",
            )
    elif spec.zone != location:
        raise SlicePoolsError(
            "zone", f"the cluster is zonal in {location!r}; TPU pools must use zone {location!r}"
        )


def validate_placement(spec: SlicePoolsSpec, tpu_slice: TpuSlice) -> None:
    """Rules 5-6: multi-host gets COMPACT + tpu_topology (TPU7x: a workload policy instead);
    single-host gets no placement at all."""
    placement = tpu_slice.placement
    if spec.workload_policy is not None:
        _check_workload_policy(spec.workload_policy, tpu_slice)
    if spec.compact_placement is not None and placement is SlicePlacement.WORKLOAD_POLICY:
        raise SlicePoolsError(
            "compact_placement",
            f"multi-host {tpu_slice.describe()} is placed by a workload policy with accelerator "
            f"topology {tpu_slice.topology}, not COMPACT with tpu_topology; leave "
            "compact_placement unset",
        )
    if spec.compact_placement is False and placement is SlicePlacement.COMPACT:
        raise SlicePoolsError(
            "compact_placement",
            f"multi-host {tpu_slice.describe()} needs COMPACT placement with "
            f"tpu_topology={tpu_slice.topology}; leave compact_placement unset",
        )
    if spec.compact_placement is True and placement is None:
        raise SlicePoolsError(
            "compact_placement",
            f"single-host {tpu_slice.describe()} must not carry a placement policy or "
            "tpu_topology; leave compact_placement unset",
        )


def _check_workload_policy(name: str, tpu_slice: TpuSlice) -> None:
    if tpu_slice.placement is not SlicePlacement.WORKLOAD_POLICY:
        why = (
            "is single-host and takes no placement policy"
            if tpu_slice.placement is None
            else "is placed with COMPACT placement and tpu_topology, never a workload policy "
            "(that is for multi-host TPU7x slices)"
        )
        raise SlicePoolsError(
            "workload_policy", f"{tpu_slice.describe()} {why}; remove workload_policy"
        )
    if not _RESOURCE_NAME.match(name):
        raise SlicePoolsError(
            "workload_policy",
            f"{name!r} is not a resource policy name: 1-63 lowercase letters, digits and "
            "hyphens, starting with a letter; give the name of the policy in the cluster's region",
        )


def zone_region(zone: str) -> str:
    """Return the region of a zone ("us-central1-c" -> "us-central1"); the zone must be valid."""
    match = _ZONE.match(zone)
    if not match:
        raise SlicePoolsError(
            "zone", f"{zone!r} is not a single GCP zone such as 'us-west4-a'; give one zone"
        )
    return match["region"]


def validate_node_count(spec: SlicePoolsSpec, tpu_slice: TpuSlice) -> None:
    """Rule 7: a pool holds exactly one slice; autoscaling is 0-or-N."""
    hosts = tpu_slice.hosts
    if spec.node_count is not None and spec.node_count != hosts:
        raise SlicePoolsError(
            "node_count",
            f"{tpu_slice.describe()} has {hosts} node(s) per pool, got {spec.node_count}; "
            "set ", Setting("node_count", hosts), " or leave it unset",
        )
    bounds = spec.autoscaling
    if bounds is not None and (bounds.max_nodes != hosts or bounds.min_nodes not in {0, hosts}):
        raise SlicePoolsError(
            "autoscaling",
            f"a {tpu_slice.topology} slice scales atomically between 0 and {hosts} nodes, got "
            f"min {bounds.min_nodes} max {bounds.max_nodes}; set ",
            Setting("autoscaling", Autoscaling(0, hosts)), " or ",
            Setting("autoscaling", Autoscaling(hosts, hosts)), ", and add slices for more capacity",
        )


def validate_capacity(spec: SlicePoolsSpec, tpu_slice: TpuSlice) -> None:
    """Rule 9: exactly one capacity kind, with the settings it requires."""
    capacity = Capacity(spec.capacity)
    if capacity is Capacity.RESERVATION and not (spec.reservation or "").strip():
        raise SlicePoolsError(
            "reservation", 'capacity "reservation" needs the reservation name; set ',
            Setting("reservation", "<reservation name>"),
        )
    if capacity is not Capacity.RESERVATION and spec.reservation is not None:
        raise SlicePoolsError(
            "reservation",
            f'capacity is "{capacity}" but a reservation is set; use exactly one capacity: '
            "set ", Setting("capacity", Capacity.RESERVATION.value), " or remove reservation",
        )
    if spec.preemptible and capacity is not Capacity.ON_DEMAND:
        raise SlicePoolsError(
            "preemptible",
            f'preemptible VMs are a capacity of their own, not combinable with "{capacity}"; '
            "remove preemptible (GKE recommends ", Setting("capacity", Capacity.SPOT.value), ")",
        )
    if spec.queued_provisioning:
        _check_queued_provisioning(capacity, tpu_slice)
    if spec.max_run_duration_seconds is not None:
        _check_max_run_duration(spec, capacity)
    if capacity is Capacity.FLEX_START:
        _check_flex_start(spec, tpu_slice)


def _check_queued_provisioning(capacity: Capacity, tpu_slice: TpuSlice) -> None:
    """GKE queues provisioning only for flex-start pools (`--flex-start
    --enable-queued-provisioning`), and for TPUs only of the families that support it."""
    if capacity is not Capacity.FLEX_START:
        raise SlicePoolsError(
            "queued_provisioning",
            f'GKE queues provisioning only for flex-start node pools, capacity is "{capacity}"; '
            "set ", Setting("capacity", Capacity.FLEX_START.value), " or remove "
            "queued_provisioning",
        )
    family = tpu_slice.family
    if not family.queued_provisioning:
        able = [f"{a.generation} ({a.label})" for a in ACCELERATORS.values()
                if a.queued_provisioning]
        raise SlicePoolsError(
            "queued_provisioning",
            f"GKE runs flex-start with queued provisioning for TPU {', '.join(able)}, not "
            f"{family.label}; remove queued_provisioning (flex-start alone: the autoscaler "
            "scales a pool up for its pending pods, and Kueue admits on quota)",
        )


def _check_max_run_duration(spec: SlicePoolsSpec, capacity: Capacity) -> None:
    seconds = spec.max_run_duration_seconds or 0
    if seconds <= 0:
        raise SlicePoolsError("max_run_duration_seconds", f"must be positive, got {seconds}")
    if capacity is Capacity.FLEX_START and seconds > c.FLEX_START_MAX_RUN_SECONDS:
        raise SlicePoolsError(
            "max_run_duration_seconds",
            f"flex-start VMs run at most 7 days ({c.FLEX_START_MAX_RUN_SECONDS} s), got {seconds}; "
            "lower it",
        )


def _check_flex_start(spec: SlicePoolsSpec, tpu_slice: TpuSlice) -> None:
    if spec.autoscaling is not None and spec.autoscaling.min_nodes != 0:
        raise SlicePoolsError(
            "autoscaling",
            f"flex-start pools start empty and scale 0 to {tpu_slice.hosts}; set ",
            Setting("autoscaling", Autoscaling(0, tpu_slice.hosts)), " or leave autoscaling unset",
        )
    if spec.auto_repair:
        raise SlicePoolsError(
            "auto_repair", "flex-start pools must have auto-repair off; leave auto_repair unset"
        )


def validate_host_maintenance(spec: SlicePoolsSpec) -> None:
    """Rule 10: PERIODIC host maintenance only for (PERIODIC) reservations."""
    interval = spec.host_maintenance_interval
    periodic = interval is not None and HostMaintenance(interval) is HostMaintenance.PERIODIC
    if periodic and Capacity(spec.capacity) is not Capacity.RESERVATION:
        raise SlicePoolsError(
            "host_maintenance_interval",
            "PERIODIC applies only to VMs from a reservation created with PERIODIC "
            "maintenance; use AS_NEEDED or leave it unset",
        )


def validate_max_pods(spec: SlicePoolsSpec) -> None:
    """Rule 13: max pods per node within GKE's range; TPU nodes run one workload pod."""
    low, high = _MAX_PODS_RANGE
    if not low <= spec.max_pods_per_node <= high:
        raise SlicePoolsError(
            "max_pods_per_node",
            f"must be between {low} and {high}, got {spec.max_pods_per_node}; "
            "15 fits one TPU pod plus system pods",
        )


def validate_versions(spec: SlicePoolsSpec, tpu_slice: TpuSlice) -> None:
    """Rule 14: release channel and auto-upgrade agree; the pinned version is new enough."""
    channel = spec.release_channel
    if (problem := release_channel_problem(channel)) is not None:
        raise SlicePoolsError("release_channel", problem)
    if channel is not None and spec.auto_upgrade is False:
        raise SlicePoolsError(
            "auto_upgrade",
            f"the cluster is on the {channel} release channel, where node auto-upgrade cannot be "
            "turned off; pin a GKE version instead of a channel, or unset auto_upgrade",
        )
    if spec.gke_version is None:
        return
    family = tpu_slice.family
    if family.min_gke_version is not None:
        _require_version(spec.gke_version, family.min_gke_version,
                         f"{family.generation} ({family.label})")
    multislice = spec.multislice if spec.multislice is not None else spec.slices > 1
    if multislice and tpu_slice.is_multi_host:
        _require_version(spec.gke_version, c.MIN_GKE_VERSION_MULTISLICE, "Multislice")
    if Capacity(spec.capacity) is Capacity.FLEX_START:
        _require_version(spec.gke_version, c.MIN_GKE_VERSION_FLEX_START_TPU, "flex-start TPUs")


def release_channel_problem(channel: str | None) -> str | None:
    """Return why `channel` is not a GKE release channel, or None when it is one (or unset)."""
    if channel is None or channel in RELEASE_CHANNELS:
        return None
    return f"{channel!r} is not one of {', '.join(RELEASE_CHANNELS)}"


def _require_version(version: str, minimum: str, feature: str) -> None:
    if not at_least_version(version, minimum):
        raise SlicePoolsError(
            "gke_version",
            f"{feature} needs GKE {minimum} or later, got {version}; upgrade the cluster",
        )


def at_least_version(version: str, minimum: str) -> bool:
    """Return whether GKE ``version`` is >= ``minimum``; a prefix such as "1.33" matches its line.

    Raise `SlicePoolsError` for a malformed version. Only the parts both strings give are compared:
    whether "1.33" resolves to a new enough patch is for the live version check to decide.
    """
    got, want = _version_parts(version), _version_parts(minimum)
    common = min(len(got), len(want))
    return got[:common] >= want[:common]


def _version_parts(version: str) -> tuple[int, ...]:
    match = _VERSION.match(version.strip())
    if not match:
        raise SlicePoolsError(
            "gke_version",
            f"{version!r} is not a GKE version such as '1.33.5-gke.1080000' or '1.33'",
        )
    return tuple(int(part) for part in match.groups() if part is not None)
