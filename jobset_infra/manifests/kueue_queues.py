"""Kueue queue objects (v1beta2) derived from the TPU slice pools Pulumi creates.

`plan_flavors` groups pools by what a pod can select them by (slice-shape node labels, capacity
labels) into ResourceFlavors whose `google.com/tpu` capacity is the chips those pools hold;
`queue_objects` turns that into ResourceFlavors, one ClusterQueue, LocalQueues, priority classes
and, for pools with GKE queued provisioning (flex-start whose nodes come only through
ProvisioningRequests), a ProvisioningRequest admission check on their flavors; flex-start pools
without it get no check (the autoscaler scales them up for pending pods). When Kueue's
Topology-Aware Scheduling places the slices (`Placer.KUEUE_TAS`), it also makes the Topology
whose levels are GKE's node-pool and host labels, and every flavor names it (`topologyName`).
Pure; a quota above the chips that exist, or one for a flavor that does not exist, is an error
naming the flavor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jobset_infra.api import constants as k
from jobset_infra.manifests.kueue_spec import QueueSpec
from jobset_infra.manifests.meta import Manifest, common_labels, object_meta
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import TAS_LEVELS, Placer
from jobset_infra.tpu.pools import SlicePoolsPlan
from jobset_infra.tpu.spec import Capacity

__all__ = [
    "Flavor",
    "QueueError",
    "QueueObjects",
    "namespace_manifest",
    "plan_flavors",
    "queue_objects",
    "topology",
]

_LABELS = common_labels("kueue-queues", "queues")


class QueueError(ValueError):
    """Queue arguments that do not fit the pools; the message names the field and the fix."""


@dataclass(frozen=True)
class Flavor:
    """One ResourceFlavor: pools a pod cannot tell apart by node labels, and their chips."""

    name: str
    node_labels: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]
    chips: int
    queued_provisioning: bool
    """Its nodes come only through ProvisioningRequests: admission waits for the check."""
    pools: tuple[str, ...]


def _flavor_name(plan: SlicePoolsPlan) -> str:
    shape = f"{plan.slice.accelerator}-{plan.slice.topology}"
    if plan.capacity is Capacity.ON_DEMAND:
        return shape
    if plan.capacity is Capacity.RESERVATION and plan.reservation:
        return f"{shape}-{plan.reservation.split('/')[-1]}"
    if plan.queued_provisioning:
        return f"{shape}-queued"
    return f"{shape}-{plan.capacity.value}"


def plan_flavors(plans: Sequence[SlicePoolsPlan]) -> tuple[Flavor, ...]:
    """Return one Flavor per distinct (node labels, capacity) of `plans`, in first-seen order."""
    if not plans:
        raise QueueError("pools: give at least one SlicePoolsPlan; a queue needs TPU capacity")
    grouped: dict[str, list[SlicePoolsPlan]] = {}
    for plan in plans:
        grouped.setdefault(_flavor_name(plan), []).append(plan)
    return tuple(_merge(name, group) for name, group in grouped.items())


def _merge(name: str, group: list[SlicePoolsPlan]) -> Flavor:
    first = group[0]
    tolerations = tuple(dict.fromkeys(t for p in group for t in _frozen_tolerations(p)))
    return Flavor(
        name=name,
        node_labels={**first.flavor_node_labels, **first.capacity_node_labels},
        tolerations=tuple(dict(t) for t in tolerations),
        chips=sum(plan.total_chips for plan in group),
        queued_provisioning=first.queued_provisioning,
        pools=tuple(pool for plan in group for pool in plan.pool_names),
    )


def _frozen_tolerations(plan: SlicePoolsPlan) -> list[tuple[tuple[str, str], ...]]:
    return [tuple(sorted(t.items())) for t in plan.tolerations]


def _quotas(flavors: Sequence[Flavor], spec: QueueSpec) -> dict[str, int]:
    """Return flavor -> google.com/tpu quota: the chips, or a smaller quota the spec asks for."""
    capacity = {flavor.name: flavor.chips for flavor in flavors}
    unknown = sorted(set(spec.tpu_quota) - set(capacity))
    if unknown:
        raise QueueError(
            f"tpu_quota: no flavor named {', '.join(unknown)}; the pools make flavors "
            f"{', '.join(sorted(capacity))}"
        )
    for name, quota in spec.tpu_quota.items():
        if quota > capacity[name]:
            raise QueueError(
                f"tpu_quota[{name}]: {quota} chips exceed the {capacity[name]} chips its pools "
                f"hold; lower it to at most {capacity[name]}"
            )
    return {name: spec.tpu_quota.get(name, chips) for name, chips in capacity.items()}


def resource_flavor(flavor: Flavor, topology_name: str | None = None) -> Manifest:
    """Return the ResourceFlavor: its node labels become the admitted pods' nodeSelector; with a
    topology, Kueue places the pods on the flavor's nodes itself (TAS)."""
    spec: Manifest = {
        "nodeLabels": dict(flavor.node_labels),
        # Added to admitted pods, so workloads need not spell out the TPU taint themselves.
        "tolerations": [dict(t) for t in flavor.tolerations],
    }
    if topology_name is not None:
        spec["topologyName"] = topology_name
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": object_meta(flavor.name, _LABELS),
        "spec": spec,
    }


def topology(spec: QueueSpec) -> Manifest:
    """Return the Topology of TPU slice pools: GKE's node-pool label, then the host."""
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "Topology",
        "metadata": object_meta(spec.topology_name, _LABELS),
        "spec": {"levels": [{"nodeLabel": label} for label in TAS_LEVELS]},
    }


def cluster_queue(spec: QueueSpec, flavors: Sequence[Flavor]) -> Manifest:
    """Return the ClusterQueue holding every flavor's google.com/tpu quota."""
    quotas = _quotas(flavors, spec)
    body: Manifest = {
        # nil would admit from no namespace at all; list exactly the LocalQueues' namespaces.
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "In",
                    "values": list(spec.namespaces),
                }
            ]
        },
        "queueingStrategy": spec.queueing_strategy,
        "resourceGroups": [
            {
                "coveredResources": [tpu.TPU_RESOURCE],
                "flavors": [
                    {
                        "name": f.name,
                        "resources": [{"name": tpu.TPU_RESOURCE,
                                       # as the API server stores a quantity: "32", not 32
                                       "nominalQuota": str(quotas[f.name])}],
                    }
                    for f in flavors
                ],
            }
        ],
        "preemption": {"withinClusterQueue": spec.preemption_within_cluster_queue},
    }
    if spec.cohort:
        body["cohortName"] = spec.cohort
    queued = [f.name for f in flavors if f.queued_provisioning]
    if queued:
        body["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": spec.admission_check_name, "onFlavors": queued}]
        }
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": object_meta(spec.cluster_queue_name, _LABELS),
        "spec": body,
    }


def local_queue(spec: QueueSpec, namespace: str) -> Manifest:
    """Return the LocalQueue JobSets in `namespace` name with `kueue.x-k8s.io/queue-name`."""
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": object_meta(spec.local_queue_name, _LABELS, namespace),
        "spec": {"clusterQueue": spec.cluster_queue_name},
    }


def namespace_manifest(name: str) -> Manifest:
    """Return a Namespace for a team's LocalQueue (when the platform owns team namespaces)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": object_meta(name, _LABELS)}


def priority_class(name: str, value: int) -> Manifest:
    """Return a WorkloadPriorityClass (value and description sit at the top level, no spec)."""
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": object_meta(name, _LABELS),
        "value": value,
        "description": f"jobset-infra priority {name!r}; set label {k.KUEUE_PRIORITY_CLASS_LABEL}",
    }


def provisioning_request_config(spec: QueueSpec) -> Manifest:
    """Return the ProvisioningRequestConfig of GKE queued provisioning (flex-start pools with
    `queued_provisioning`)."""
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "ProvisioningRequestConfig",
        "metadata": object_meta(spec.admission_check_name, _LABELS),
        "spec": {
            "provisioningClassName": k.GKE_QUEUED_PROVISIONING_CLASS,
            "managedResources": [tpu.TPU_RESOURCE],
            # Pin each admitted pod set to the nodes GKE provisioned for its request.
            "podSetUpdates": {
                "nodeSelector": [
                    {
                        "key": k.GKE_PROVISIONING_REQUEST_LABEL,
                        "valueFromProvisioningClassDetail": k.GKE_RESIZE_REQUEST_NAME_DETAIL,
                    }
                ]
            },
        },
    }


def admission_check(spec: QueueSpec) -> Manifest:
    """Return the AdmissionCheck that holds queued-provisioning workloads until GKE provisions
    their nodes (through a ProvisioningRequest per admitted workload)."""
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "AdmissionCheck",
        "metadata": object_meta(spec.admission_check_name, _LABELS),
        "spec": {
            "controllerName": k.KUEUE_PROVISIONING_REQUEST_CONTROLLER,
            "parameters": {
                "apiGroup": k.KUEUE_GROUP,
                "kind": "ProvisioningRequestConfig",
                "name": spec.admission_check_name,
            },
        },
    }


@dataclass(frozen=True)
class QueueObjects:
    """Every Kueue object for the pools, by role."""

    flavors: tuple[Flavor, ...]
    topologies: tuple[Manifest, ...]
    """The TAS Topology the flavors name; empty when the controller places slices."""
    resource_flavors: tuple[Manifest, ...]
    priority_classes: tuple[Manifest, ...]
    provisioning: tuple[Manifest, ...]
    """ProvisioningRequestConfig then AdmissionCheck; empty without queued-provisioning pools."""
    cluster_queue: Manifest
    local_queues: tuple[Manifest, ...]

    def in_apply_order(self) -> list[Manifest]:
        """Return the objects so that everything a ClusterQueue names exists before it."""
        return [
            *self.topologies,
            *self.resource_flavors,
            *self.priority_classes,
            *self.provisioning,
            self.cluster_queue,
            *self.local_queues,
        ]


def queue_objects(
    spec: QueueSpec, plans: Sequence[SlicePoolsPlan], placer: Placer = Placer.CONTROLLER
) -> QueueObjects:
    """Return the Kueue objects for `plans` as `spec` asks (pure; raises QueueError)."""
    flavors = plan_flavors(plans)
    has_queued = any(flavor.queued_provisioning for flavor in flavors)
    tas = Placer(placer) is Placer.KUEUE_TAS
    topology_name = spec.topology_name if tas else None
    return QueueObjects(
        flavors=flavors,
        topologies=(topology(spec),) if tas else (),
        resource_flavors=tuple(resource_flavor(flavor, topology_name) for flavor in flavors),
        priority_classes=tuple(
            priority_class(name, value) for name, value in spec.priority_classes.items()
        ),
        provisioning=(
            (provisioning_request_config(spec), admission_check(spec)) if has_queued else ()
        ),
        cluster_queue=cluster_queue(spec, flavors),
        local_queues=tuple(local_queue(spec, ns) for ns in spec.namespaces),
    )
