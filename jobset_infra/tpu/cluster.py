"""`GkeClusterSpec`: a GKE cluster ready for TPU training, as plain data, and its static rules.

Pure; no I/O. `validate_cluster_spec` enforces reference gke-tpu.md §6 rule 15 (cluster
prerequisites) and the release-channel/version choice of rule 14, raising `SlicePoolsError`-style
errors (`ClusterSpecError`) that name the argument and the fix. The `GkeCluster` component turns a
valid spec into resources; the secure defaults it applies are constants here so tests pin them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from jobset_infra.tpu.spec import Setting, SlicePoolsError, SlicePoolsSpec
from jobset_infra.tpu.validation import at_least_version, release_channel_problem

__all__ = [
    "NODE_OAUTH_SCOPES",
    "NODE_SERVICE_ACCOUNT_ROLES",
    "ClusterSpecError",
    "GkeClusterSpec",
    "pools_in_cluster",
    "region_of",
    "validate_cluster_spec",
    "vcpus_of",
]

# Access scopes of every node we create: the minimal set GKE nodes need for logging, monitoring
# and pulling images. Workloads reach Google APIs through Workload Identity, not node scopes.
NODE_OAUTH_SCOPES: tuple[str, ...] = (
    "https://www.googleapis.com/auth/devstorage.read_only",
    "https://www.googleapis.com/auth/logging.write",
    "https://www.googleapis.com/auth/monitoring",
    "https://www.googleapis.com/auth/service.management.readonly",
    "https://www.googleapis.com/auth/servicecontrol",
    "https://www.googleapis.com/auth/trace.append",
)
# IAM roles of the dedicated node service account: GKE's least-privilege node role, plus image
# pulls from Artifact Registry (GKE "Configure node service accounts"; CIS GKE 5.2.1).
NODE_SERVICE_ACCOUNT_ROLES: tuple[str, ...] = (
    "roles/container.defaultNodeServiceAccount",
    "roles/artifactregistry.reader",
)

_LOCATION = re.compile(r"^(?P<region>[a-z]+-[a-z]+[0-9]+)(?:-[a-z])?$")
_ZONE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
_CLUSTER_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")
_PROJECT = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
_CIDR = re.compile(r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$")
# Shared-core machine types: too small for the JobSet and Kueue controllers (xpk PR #475).
_SHARED_CORE = ("e2-micro", "e2-small", "e2-medium", "f1-micro", "g1-small")
_MIN_SYSTEM_VCPUS = 2


class ClusterSpecError(SlicePoolsError):
    """An invalid cluster argument; the message names the argument and the fix."""


@dataclass(frozen=True)
class GkeClusterSpec:
    """A GKE Standard cluster for TPU training: CPU system pool, TPU pools added separately."""

    project: str
    location: str
    """Region (regional control plane, recommended) or zone."""
    name: str | None = None
    """GKE cluster name; defaults to the component's name."""
    release_channel: str | None = "REGULAR"
    """RAPID, REGULAR, STABLE or EXTENDED; None when ``version`` pins the cluster."""
    version: str | None = None
    """Pinned GKE version (control plane and nodes); requires release_channel=None."""
    network: str = "default"
    subnetwork: str | None = None
    private_nodes: bool = False
    master_ipv4_cidr_block: str = "172.16.0.32/28"
    create_cloud_nat: bool = True
    """With private nodes: create a Cloud Router + NAT so nodes pull registry.k8s.io images."""
    existing_egress: bool = False
    """With private nodes: the network already has NAT, or images come from a mirror."""
    master_authorized_networks: tuple[str, ...] = ()
    workload_identity: bool = True
    dataplane_v2: bool = True
    gcs_fuse_csi_driver: bool = True
    system_pool_machine_type: str = "e2-standard-4"
    system_pool_node_count: int = 1
    """Nodes per zone of the system pool (a regional cluster has three zones)."""
    system_pool_zones: tuple[str, ...] = ()
    """Zones of the system pool; empty = the cluster's default zones."""
    node_service_account: str | None = None
    """Email of an existing node service account; None = create a least-privilege one."""
    deletion_protection: bool = True
    resource_labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def region(self) -> str:
        """Return the region of the cluster's location."""
        return region_of(self.location)

    @property
    def workload_pool(self) -> str:
        """Return the Workload Identity pool, <project>.svc.id.goog."""
        return f"{self.project}.svc.id.goog"

    @property
    def auto_upgrade(self) -> bool:
        """Return whether nodes auto-upgrade: on a channel always, with a pinned version never."""
        return self.release_channel is not None


def pools_in_cluster(spec: SlicePoolsSpec, cluster: GkeClusterSpec) -> SlicePoolsSpec:
    """Return `spec` as its pools are in `cluster`: the cluster's location and release channel,
    and its pinned GKE version unless the pools pin their own. The one place a stack's pools
    meet their cluster: `TpuSlicePoolsArgs.for_cluster` and `StackConfig.slice_pools_plan`
    both plan from it, so preview-time checks and the component see the same version gates."""
    return replace(
        spec,
        cluster_location=cluster.location,
        release_channel=cluster.release_channel,
        gke_version=spec.gke_version or cluster.version,
    )


def region_of(location: str) -> str:
    """Return the region of a region or zone name ("us-west4-a" -> "us-west4")."""
    match = _LOCATION.match(location)
    if not match:
        raise ClusterSpecError(
            "location", f"{location!r} is not a GCP region or zone such as 'us-west4'"
        )
    return match["region"]


def vcpus_of(machine_type: str) -> int:
    """Return the vCPUs of a predefined machine type ("e2-standard-4" -> 4); 0 for shared-core."""
    if machine_type in _SHARED_CORE:
        return 0
    match = re.match(r"^[a-z0-9]+-[a-z]+(?:cpu|mem)?-(\d+)$", machine_type)
    if not match:
        raise ClusterSpecError(
            "system_pool_machine_type",
            f"{machine_type!r} is not a predefined machine type such as 'e2-standard-4'",
        )
    return int(match[1])


def validate_cluster_spec(spec: GkeClusterSpec) -> None:
    """Rules 14-15: identity, version choice, system pool size, private-node egress, add-ons."""
    _check_identity(spec)
    _check_version_choice(spec)
    _check_system_pool(spec)
    _check_private_nodes(spec)
    if spec.gcs_fuse_csi_driver and not spec.workload_identity:
        raise ClusterSpecError(
            "gcs_fuse_csi_driver",
            "the GCS FUSE CSI driver authenticates through Workload Identity; set ",
            Setting("workload_identity", True), " or ", Setting("gcs_fuse_csi_driver", False),
        )


def _check_identity(spec: GkeClusterSpec) -> None:
    if not _PROJECT.match(spec.project):
        raise ClusterSpecError("project", f"{spec.project!r} is not a GCP project id")
    region_of(spec.location)
    if spec.name is not None and not _CLUSTER_NAME.match(spec.name):
        raise ClusterSpecError(
            "name",
            f"{spec.name!r}: cluster names are lowercase letters, digits and hyphens, "
            "start with a letter, at most 40 characters",
        )


def _check_version_choice(spec: GkeClusterSpec) -> None:
    if (spec.release_channel is None) == (spec.version is None):
        raise ClusterSpecError(
            "release_channel",
            "choose exactly one of a release channel (auto-upgraded) or a pinned version; set ",
            Setting("release_channel", None), " when pinning version",
        )
    if (problem := release_channel_problem(spec.release_channel)) is not None:
        raise ClusterSpecError("release_channel", problem)
    if spec.version is not None and not at_least_version(spec.version, "1.28"):
        raise ClusterSpecError(
            "version",
            f"{spec.version} is older than 1.28, below which TPU pods must run privileged; "
            "pin 1.28 or later",
        )


def _check_system_pool(spec: GkeClusterSpec) -> None:
    vcpus = vcpus_of(spec.system_pool_machine_type)
    if vcpus < _MIN_SYSTEM_VCPUS:
        raise ClusterSpecError(
            "system_pool_machine_type",
            f"{spec.system_pool_machine_type} is too small for the JobSet and Kueue controllers "
            f"(they need at least {_MIN_SYSTEM_VCPUS} dedicated vCPUs); use e2-standard-4+",
        )
    if spec.system_pool_node_count < 1:
        raise ClusterSpecError(
            "system_pool_node_count",
            "the default node pool is removed, so the system pool needs at least 1 node "
            "to run the controllers; set system_pool_node_count to 1 or more",
        )
    for zone in spec.system_pool_zones:
        if not _ZONE.match(zone) or region_of(zone) != spec.region:
            raise ClusterSpecError(
                "system_pool_zones", f"{zone!r} is not a zone of the cluster's region {spec.region}"
            )


def _check_private_nodes(spec: GkeClusterSpec) -> None:
    if not spec.private_nodes:
        return
    if not (spec.create_cloud_nat or spec.existing_egress):
        raise ClusterSpecError(
            "create_cloud_nat",
            "private nodes have no route to registry.k8s.io (JobSet, Kueue images); set ",
            Setting("create_cloud_nat", True), ", or ", Setting("existing_egress", True),
            " if the network has NAT or a mirror",
        )
    if not _CIDR.match(spec.master_ipv4_cidr_block) or not spec.master_ipv4_cidr_block.endswith(
        "/28"
    ):
        raise ClusterSpecError(
            "master_ipv4_cidr_block",
            f"{spec.master_ipv4_cidr_block!r}: the control plane range must be a /28 CIDR",
        )
