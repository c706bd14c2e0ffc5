"""Kueue queue objects (v1beta2) derived from the TPU slice pools Pulumi creates.

`plan_flavors` groups pools by what a pod can select them by (slice-shape node labels, capacity
labels) into ResourceFlavors whose `google.com/tpu` capacity is the chips those pools hold;
`queue_objects` turns that into ResourceFlavors, one ClusterQueue, LocalQueues, priority classes
and, when flex-start pools exist, a ProvisioningRequest admission check. Pure; a quota above the
chips that exist, or one for a flavor that does not exist, is an error naming the flavor.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from jobset_infra.api import constants as k
from jobset_infra.manifests.kueue_spec import QueueSpec
from jobset_infra.manifests.meta import Manifest, common_labels, object_meta
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.pools import SlicePoolsPlan
from jobset_infra.tpu.spec import Capacity

__all__ = [
    "Flavor",
    "QueueError",
    "QueueObjects",
    "namespace_manifest",
    "plan_flavors",
    "queue_objects",
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
    flex_start: bool
    pools: tuple[str, ...]


def _flavor_name(plan: SlicePoolsPlan) -> str:
    shape = f"{plan.slice.accelerator}-{plan.slice.topology}"
    if plan.capacity is Capacity.ON_DEMAND:
        return shape
    if plan.capacity is Capacity.RESERVATION and plan.reservation:
        return f"{shape}-{plan.reservation.split('/')[-1]}"
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
        flex_start=first.capacity is Capacity.FLEX_START,
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


def resource_flavor(flavor: Flavor) -> Manifest:
    """Return the ResourceFlavor: its node labels become the admitted pods' nodeSelector."""
    return {
        "apiVersion": k.KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": object_meta(flavor.name, _LABELS),
        "spec": {
            "nodeLabels": dict(flavor.node_labels),
            # Added to admitted pods, so workloads need not spell out the TPU taint themselves.
            "tolerations": [dict(t) for t in flavor.tolerations],
        },
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
    flex = [f.name for f in flavors if f.flex_start]
    if flex:
        body["admissionChecksStrategy"] = {
            "admissionChecks": [{"name": spec.admission_check_name, "onFlavors": flex}]
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
    """Return the ProvisioningRequestConfig of GKE queued provisioning for TPU flex-start pools."""
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
    """Return the AdmissionCheck that holds flex-start workloads until GKE provisions nodes."""
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
    resource_flavors: tuple[Manifest, ...]
    priority_classes: tuple[Manifest, ...]
    provisioning: tuple[Manifest, ...]
    """ProvisioningRequestConfig then AdmissionCheck; empty without flex-start pools."""
    cluster_queue: Manifest
    local_queues: tuple[Manifest, ...]

    def in_apply_order(self) -> list[Manifest]:
        """Return the objects so that everything a ClusterQueue names exists before it."""
        return [
            *self.resource_flavors,
            *self.priority_classes,
            *self.provisioning,
            self.cluster_queue,
            *self.local_queues,
        ]


def queue_objects(spec: QueueSpec, plans: Sequence[SlicePoolsPlan]) -> QueueObjects:
    """Return the Kueue objects for `plans` as `spec` asks (pure; raises QueueError)."""
    flavors = plan_flavors(plans)
    has_flex = any(flavor.flex_start for flavor in flavors)
    return QueueObjects(
        flavors=flavors,
        resource_flavors=tuple(resource_flavor(flavor) for flavor in flavors),
        priority_classes=tuple(
            priority_class(name, value) for name, value in spec.priority_classes.items()
        ),
        provisioning=(
            (provisioning_request_config(spec), admission_check(spec)) if has_flex else ()
        ),
        cluster_queue=cluster_queue(spec, flavors),
        local_queues=tuple(local_queue(spec, ns) for ns in spec.namespaces),
    )
