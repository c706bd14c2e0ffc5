"""`TpuSlicePools`: N identical TPU slices, one GKE node pool per slice, in one zone.

The shell around `jobset_infra.tpu.pools`: `plan_slice_pools` validates every static rule of
reference gke-tpu.md §6 and decides the pools (pure, raises at preview); this component creates
exactly those pools, and for multi-host TPU7x slices the HIGH_THROUGHPUT workload policy that
places them (GKE "About Ironwood": it replaces tpu_topology), and exposes the plan, so Kueue
flavors, JobSets and the controller's placement domains are derived from the same value that
built the node pools.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from jobset_infra.components.gke_cluster import GkeCluster
from jobset_infra.components.providers import explicit_dependencies
from jobset_infra.tpu import constants as c
from jobset_infra.tpu.cluster import NODE_OAUTH_SCOPES, pools_in_cluster
from jobset_infra.tpu.parse import parse_slice_pools_spec
from jobset_infra.tpu.pools import (
    SlicePool,
    SlicePoolsPlan,
    WorkloadPolicy,
    plan_slice_pools,
    replacement_fingerprint,
    replacement_warnings,
)
from jobset_infra.tpu.slice import TpuSlice
from jobset_infra.tpu.spec import Capacity, SlicePoolsSpec

__all__ = ["TpuSlicePools", "TpuSlicePoolsArgs"]

TYPE_TOKEN = "jobset-infra:index:TpuSlicePools"


@dataclass(frozen=True)
class TpuSlicePoolsArgs:
    """The cluster to add pools to, and the slices (`SlicePoolsSpec`) to add."""

    cluster: pulumi.Input[str]
    """Name of the GKE cluster (e.g. ``GkeCluster.name``)."""
    spec: SlicePoolsSpec | Mapping[str, Any]
    """The slices; a mapping (e.g. a Pulumi config object) is parsed into a SlicePoolsSpec."""
    project: pulumi.Input[str] | None = None
    """GCP project (plain or another resource's output); None = the provider's."""
    service_account: pulumi.Input[str] | None = None
    """Node service account email; None = the project's default (avoid: use for_cluster)."""
    workload_identity: bool = True
    previous_fingerprint: Mapping[str, str] | None = None
    """The ``fingerprint`` output of the last deployment; changes that replace slices are warned."""

    @classmethod
    def for_cluster(
        cls, cluster: GkeCluster, spec: SlicePoolsSpec | Mapping[str, Any]
    ) -> "TpuSlicePoolsArgs":
        """Return args for ``cluster``: its location, channel, version and node identity."""
        cluster_spec = cluster.spec
        return cls(
            cluster=cluster.name,
            spec=pools_in_cluster(parse_slice_pools_spec(spec), cluster_spec),
            project=cluster.wired.project,
            service_account=cluster.node_service_account,
            workload_identity=cluster_spec.workload_identity,
        )


class TpuSlicePools(pulumi.ComponentResource):
    """One node pool per TPU slice; ``plan`` says what Kueue, JobSets and placement need."""

    # Only Output attributes are annotated in the class body: they are the component's outputs,
    # and Pulumi's analyzer reads the package schema from them (jobset_infra.components.package).
    pool_names: pulumi.Output[list[str]]
    total_chips: pulumi.Output[int]
    fingerprint: pulumi.Output[dict[str, str]]
    """Replace-on-change settings; feed back as ``previous_fingerprint`` to get warnings."""

    def __init__(
        self, name: str, args: TpuSlicePoolsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        spec = parse_slice_pools_spec(args.spec)
        plan = plan_slice_pools(spec)  # every §6 rule, before anything is registered
        super().__init__(TYPE_TOKEN, name, None, opts)
        self.plan: SlicePoolsPlan = plan  # the validated pure plan the pools come from
        self.slice: TpuSlice = plan.slice
        for warning in replacement_warnings(args.previous_fingerprint, plan):
            pulumi.log.warn(warning, resource=self)
        child = pulumi.ResourceOptions(parent=self, depends_on=explicit_dependencies(opts))
        # The workload policy this component created (multi-host TPU7x), else None.
        self.workload_policy: gcp.compute.ResourcePolicy | None = _workload_policy(
            plan, args, child)
        policy_name = _policy_name(plan, self.workload_policy)
        self.pools: list[gcp.container.NodePool] = [
            gcp.container.NodePool(
                pool.name, opts=child, **_pool_inputs(plan, pool, spec, args, policy_name)
            )
            for pool in plan.pools
        ]
        self.pool_names = pulumi.Output.all(*[p.name for p in self.pools])
        self.total_chips = pulumi.Output.from_input(plan.total_chips)
        self.fingerprint = pulumi.Output.from_input(dict(replacement_fingerprint(plan)))
        self.register_outputs(
            {
                "pool_names": self.pool_names,
                "total_chips": self.total_chips,
                "fingerprint": self.fingerprint,
            }
        )


def _workload_policy(
    plan: SlicePoolsPlan, args: TpuSlicePoolsArgs, opts: pulumi.ResourceOptions
) -> "gcp.compute.ResourcePolicy | None":
    """Return the workload policy the plan asks this component to create, if any."""
    policy: WorkloadPolicy | None = plan.workload_policy
    if policy is None or not policy.create:
        return None
    return gcp.compute.ResourcePolicy(
        policy.name,
        name=policy.name,
        project=args.project,
        region=policy.region,
        workload_policy={
            "type": c.WORKLOAD_POLICY_HIGH_THROUGHPUT,
            "accelerator_topology": policy.accelerator_topology,
        },
        opts=opts,
    )


def _policy_name(
    plan: SlicePoolsPlan, created: "gcp.compute.ResourcePolicy | None"
) -> pulumi.Input[str] | None:
    """The policy pools name: the created one's output (so pools wait for it), or the given."""
    if created is not None:
        return created.name
    return plan.workload_policy.name if plan.workload_policy is not None else None


def _pool_inputs(
    plan: SlicePoolsPlan,
    pool: SlicePool,
    spec: SlicePoolsSpec,
    args: TpuSlicePoolsArgs,
    policy_name: pulumi.Input[str] | None,
) -> dict[str, Any]:
    """Return the gcp.container.NodePool arguments of one slice pool."""
    pinned = spec.release_channel is None and spec.gke_version is not None
    inputs: dict[str, Any] = {
        "name": pool.name,
        "cluster": args.cluster,
        "project": args.project,
        "location": plan.location,
        "node_locations": [plan.zone],
        "max_pods_per_node": plan.max_pods_per_node,
        "management": {"auto_repair": plan.auto_repair, "auto_upgrade": plan.auto_upgrade},
        "version": spec.gke_version if pinned else None,
        "node_config": _node_config(plan, pool, args),
    }
    if plan.queued_provisioning:
        # Nodes only through ProvisioningRequests (GKE `--enable-queued-provisioning`).
        inputs["queued_provisioning"] = {"enabled": True}
    if plan.autoscaling is None:
        # node_count (not initial_node_count) keeps a fixed slice at full size without forcing
        # replacement if someone resizes it by hand.
        inputs["node_count"] = plan.nodes_per_pool
    else:
        inputs["initial_node_count"] = plan.initial_node_count
        inputs["autoscaling"] = _autoscaling(plan)
    if plan.compact_placement:
        inputs["placement_policy"] = {
            "type": c.PLACEMENT_COMPACT,
            "tpu_topology": plan.slice.topology,
        }
    elif policy_name is not None:
        # The policy carries the accelerator topology; GKE refuses tpu_topology beside it.
        # `type` is required by the node-pool schema.
        inputs["placement_policy"] = {"type": c.PLACEMENT_COMPACT, "policy_name": policy_name}
    return inputs


def _autoscaling(plan: SlicePoolsPlan) -> dict[str, Any]:
    assert plan.autoscaling is not None
    bounds: dict[str, Any] = {
        "min_node_count": plan.autoscaling.min_nodes,
        "max_node_count": plan.autoscaling.max_nodes,
    }
    if plan.capacity is Capacity.FLEX_START:
        bounds["location_policy"] = "ANY"
    return bounds


def _node_config(plan: SlicePoolsPlan, pool: SlicePool, args: TpuSlicePoolsArgs) -> dict[str, Any]:
    """Return the node_config: machine type, capacity, labels, taint and node identity."""
    config: dict[str, Any] = {
        "machine_type": plan.slice.vm_type,
        # GKE taints queued-provisioning nodes itself; the label is set here so that pods (and
        # Kueue's flavor) can select them, as Google's cluster-toolkit does.
        "labels": {**pool.node_labels, **(plan.capacity_node_labels
                                          if plan.queued_provisioning else {})},
        "taints": [{"key": t.key, "value": t.value, "effect": t.gke_effect} for t in plan.taints],
        "service_account": args.service_account,
        "oauth_scopes": list(NODE_OAUTH_SCOPES),
        "gvnic": {"enabled": True},
    }
    config.update(_capacity_settings(plan))
    if args.workload_identity:
        config["workload_metadata_config"] = {"mode": "GKE_METADATA"}
    if plan.host_maintenance_interval is not None:
        config["host_maintenance_policy"] = {
            "maintenance_interval": str(plan.host_maintenance_interval)
        }
    if plan.max_run_duration_seconds is not None:
        config["max_run_duration"] = f"{plan.max_run_duration_seconds}s"
    return config


def _capacity_settings(plan: SlicePoolsPlan) -> dict[str, Any]:
    """Return the node_config fields of the plan's one capacity kind."""
    if plan.capacity is Capacity.SPOT:
        return {"spot": True}
    if plan.capacity is Capacity.RESERVATION:
        return {
            "reservation_affinity": {
                "consume_reservation_type": c.RESERVATION_AFFINITY_SPECIFIC,
                "key": c.RESERVATION_NAME_KEY,
                "values": [plan.reservation],
            }
        }
    if plan.capacity is Capacity.FLEX_START:
        return {
            "flex_start": True,
            "reservation_affinity": {"consume_reservation_type": c.RESERVATION_AFFINITY_NONE},
        }
    return {"preemptible": True} if plan.preemptible else {}
