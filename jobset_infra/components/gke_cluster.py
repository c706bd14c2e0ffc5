"""`GkeCluster`: a GKE Standard cluster ready for TPU training, and a Kubernetes provider for it.

The shell around `jobset_infra.tpu.cluster`: validate the spec (pure, raises at preview), then
create the node service account, the cluster (default pool removed), a CPU system pool for the
controllers, optional Cloud NAT for private nodes, and a `pulumi_kubernetes.Provider` whose
kubeconfig uses the gke-gcloud-auth-plugin exec credential. TPU pools come from `TpuSlicePools`.
"""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from jobset_infra.components.inputs import checked, split_inputs
from jobset_infra.tpu import constants as c
from jobset_infra.tpu.cluster import (
    NODE_OAUTH_SCOPES,
    NODE_SERVICE_ACCOUNT_ROLES,
    GkeClusterSpec,
    validate_cluster_spec,
)
from jobset_infra.tpu.kubeconfig import context_name, render_kubeconfig
from jobset_infra.tpu.parse import parse_cluster_spec

__all__ = ["GkeCluster", "GkeClusterArgs"]

TYPE_TOKEN = "jobset-infra:index:GkeCluster"
GkeClusterArgs = GkeClusterSpec

# The arguments a program may wire in from other resources (a VPC's self link, a service
# account's email, a project from a project resource), and what stands in for them while the
# plain arguments are checked; each is checked once it resolves (components.inputs).
WIRED_STAND_INS: Mapping[str, Any] = {
    "project": "stand-in-project",
    "network": "default",
    "subnetwork": "default",
    "node_service_account": "stand-in@stand-in-project.iam.gserviceaccount.com",
}


@dataclass(frozen=True)
class Wired:
    """The wired-in arguments as the children get them: plain, or checked Outputs."""

    project: pulumi.Input[str]
    network: pulumi.Input[str]
    subnetwork: pulumi.Input[str] | None
    node_service_account: pulumi.Input[str] | None

    @property
    def workload_pool(self) -> pulumi.Input[str]:
        """The Workload Identity pool, <project>.svc.id.goog."""
        return pulumi.Output.concat(self.project, ".svc.id.goog")


def parse_wired(args: GkeClusterSpec | Mapping[str, Any]) -> tuple[GkeClusterSpec, Wired]:
    """The spec, checked now with stand-ins for wired-in Outputs, and those Outputs, each
    checked with the rest of the spec when it resolves; raise ClusterSpecError naming a field."""
    given = ({f.name: getattr(args, f.name) for f in dataclasses.fields(args)}
             if isinstance(args, GkeClusterSpec) else dict(args))
    plain, deferred = split_inputs(given, WIRED_STAND_INS)
    spec = parse_cluster_spec(plain)  # a mapping (e.g. Pulumi config) is parsed and checked
    validate_cluster_spec(spec)  # before anything is registered: a bad spec fails preview

    def wired(name: str) -> Any:
        if name not in deferred:
            return getattr(spec, name)
        return checked(deferred.get(name, None),
                       lambda value: validate_cluster_spec(parse_cluster_spec({**plain,
                                                                               name: value})))

    return spec, Wired(*(wired(name) for name in WIRED_STAND_INS))


class GkeCluster(pulumi.ComponentResource):
    """A GKE cluster with Workload Identity, Dataplane V2, a CPU system pool and a provider."""

    name: pulumi.Output[str]
    """The GKE cluster name."""
    endpoint: pulumi.Output[str]
    """The control plane's IP address."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig (secret) authenticating with gke-gcloud-auth-plugin."""
    provider: k8s.Provider
    """Kubernetes provider for resources inside the cluster."""
    node_service_account: pulumi.Output[str]
    """Email of the node service account (TPU pools use it too)."""

    def __init__(
        self,
        name: str,
        args: GkeClusterArgs | Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        spec, wired = parse_wired(args)
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.spec = spec
        self.wired = wired
        cluster_name = spec.name or name
        child = pulumi.ResourceOptions(parent=self)
        self.node_service_account = self._service_account(name, spec, wired, child)
        if spec.private_nodes and spec.create_cloud_nat:
            self._cloud_nat(name, spec, wired, child)
        cluster = gcp.container.Cluster(
            name, opts=child,
            **_cluster_inputs(cluster_name, spec, wired, self.node_service_account)
        )
        self.system_pool = gcp.container.NodePool(
            f"{name}-system",
            opts=child,
            **_system_pool_inputs(cluster.name, spec, wired, self.node_service_account),
        )
        self.cluster = cluster
        self.name = cluster.name
        self.endpoint = cluster.endpoint
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(
                cluster.name, cluster.endpoint, cluster.master_auth.cluster_ca_certificate,
                wired.project,
            ).apply(
                lambda v: render_kubeconfig(
                    context=context_name(v[3], spec.location, v[0]),
                    endpoint=v[1],
                    ca_certificate=v[2],
                )
            )
        )
        # The provider waits for the system pool: controllers need a node to schedule on.
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.kubeconfig,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_pool]),
        )
        self.register_outputs(
            {
                "name": self.name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "node_service_account": self.node_service_account,
            }
        )

    @staticmethod
    def _service_account(
        name: str, spec: GkeClusterSpec, wired: Wired, child: pulumi.ResourceOptions
    ) -> pulumi.Output[str]:
        """Return the node service account email, creating a least-privilege one if none given."""
        if wired.node_service_account is not None:
            return pulumi.Output.from_input(wired.node_service_account)
        account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            project=wired.project,
            account_id=_account_id(spec.name or name),
            display_name=f"GKE nodes of {spec.name or name}",
            opts=child,
        )
        for role in NODE_SERVICE_ACCOUNT_ROLES:
            gcp.projects.IAMMember(
                f"{name}-nodes-{role.split('/')[-1]}",
                project=wired.project,
                role=role,
                member=pulumi.Output.concat("serviceAccount:", account.email),
                opts=child,
            )
        return account.email

    @staticmethod
    def _cloud_nat(
        name: str, spec: GkeClusterSpec, wired: Wired, child: pulumi.ResourceOptions
    ) -> None:
        """Give private nodes egress (registry.k8s.io images) through a Cloud Router NAT."""
        router = gcp.compute.Router(
            f"{name}-router",
            project=wired.project,
            region=spec.region,
            network=wired.network,
            opts=child,
        )
        gcp.compute.RouterNat(
            f"{name}-nat",
            project=wired.project,
            region=spec.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            opts=child,
        )


def _account_id(cluster_name: str) -> str:
    # Service account ids are 6-30 characters; keep the cluster name's head and a fixed suffix.
    return f"{cluster_name[:24].rstrip('-')}-nodes"


def _node_config(spec: GkeClusterSpec, service_account: pulumi.Input[str]) -> dict[str, Any]:
    """Return the secure node settings shared by the (removed) default pool and the system pool."""
    config: dict[str, Any] = {
        "machine_type": spec.system_pool_machine_type,
        "service_account": service_account,
        "oauth_scopes": list(NODE_OAUTH_SCOPES),
        "shielded_instance_config": {
            "enable_secure_boot": True,
            "enable_integrity_monitoring": True,
        },
        "labels": {c.SYSTEM_POOL_LABEL: c.SYSTEM_POOL_VALUE},
    }
    if spec.workload_identity:
        config["workload_metadata_config"] = {"mode": "GKE_METADATA"}
    return config


def _cluster_inputs(
    cluster_name: str, spec: GkeClusterSpec, wired: Wired, service_account: pulumi.Input[str]
) -> dict[str, Any]:
    """Return the gcp.container.Cluster arguments for a valid spec."""
    inputs: dict[str, Any] = {
        "name": cluster_name,
        "project": wired.project,
        "location": spec.location,
        "network": wired.network,
        "subnetwork": wired.subnetwork,
        # The default pool cannot be configured well; GKE needs one node to create the cluster.
        "remove_default_node_pool": True,
        "initial_node_count": 1,
        "node_config": _node_config(spec, service_account),
        "release_channel": {"channel": spec.release_channel or "UNSPECIFIED"},
        "min_master_version": spec.version,
        "networking_mode": "VPC_NATIVE",
        "ip_allocation_policy": {},
        "datapath_provider": "ADVANCED_DATAPATH" if spec.dataplane_v2 else None,
        "addons_config": {
            "gcs_fuse_csi_driver_config": {"enabled": spec.gcs_fuse_csi_driver},
            "gce_persistent_disk_csi_driver_config": {"enabled": True},
        },
        # Secure defaults: no client certificates, no legacy ABAC, Shielded GKE nodes.
        "master_auth": {"client_certificate_config": {"issue_client_certificate": False}},
        "enable_legacy_abac": False,
        "enable_shielded_nodes": True,
        "deletion_protection": spec.deletion_protection,
        "resource_labels": dict(spec.resource_labels) or None,
    }
    if spec.workload_identity:
        inputs["workload_identity_config"] = {"workload_pool": wired.workload_pool}
    if spec.private_nodes:
        inputs["private_cluster_config"] = {
            "enable_private_nodes": True,
            "enable_private_endpoint": False,
            "master_ipv4_cidr_block": spec.master_ipv4_cidr_block,
        }
    if spec.master_authorized_networks:
        inputs["master_authorized_networks_config"] = {
            "cidr_blocks": [
                {"cidr_block": cidr, "display_name": f"authorized-{i}"}
                for i, cidr in enumerate(spec.master_authorized_networks)
            ]
        }
    return inputs


def _system_pool_inputs(
    cluster: pulumi.Input[str], spec: GkeClusterSpec, wired: Wired,
    service_account: pulumi.Input[str]
) -> dict[str, Any]:
    """Return the gcp.container.NodePool arguments of the CPU system pool."""
    return {
        "name": "system",
        "project": wired.project,
        "cluster": cluster,
        "location": spec.location,
        "node_locations": list(spec.system_pool_zones) or None,
        "node_count": spec.system_pool_node_count,
        "version": spec.version,
        "management": {"auto_repair": True, "auto_upgrade": spec.auto_upgrade},
        "node_config": _node_config(spec, service_account),
    }
