"""Exact GKE and Cloud TPU strings: node labels, the TPU taint, the extended resource.

Every string here is what GKE itself puts on TPU nodes or what its APIs accept; other modules import
them from here so a typo cannot hide in a second copy (reference: gke-tpu.md §1.4, §2.3, §3.2).
`tpu` depends on nothing else of ours, so these live here rather than in `api/constants.py`.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ACCELERATOR_LABEL",
    "FLEX_START_MAX_RUN_SECONDS",
    "GKE_MAX_NODES_PER_CLUSTER",
    "GKE_NODEPOOL_LABEL",
    "GKE_TAINT_EFFECT_NO_SCHEDULE",
    "HOSTNAME_LABEL",
    "INSTANCE_TYPE_LABEL",
    "K8S_TAINT_EFFECT_NO_SCHEDULE",
    "MIN_GKE_VERSION_FLEX_START_TPU",
    "MIN_GKE_VERSION_MULTISLICE",
    "MIN_GKE_VERSION_UNPRIVILEGED_TPU",
    "PLACEMENT_COMPACT",
    "QUEUED_LABEL",
    "RESERVATION_AFFINITY_NONE",
    "RESERVATION_AFFINITY_SPECIFIC",
    "RESERVATION_NAME_KEY",
    "RESERVATION_NAME_LABEL",
    "SLICE_GROUP_LABEL",
    "SLICE_INDEX_LABEL",
    "SPARE_POOL_LABEL",
    "SPOT_LABEL",
    "SYSTEM_POOL_LABEL",
    "SYSTEM_POOL_VALUE",
    "TOPOLOGY_LABEL",
    "TPU_MEGASCALE_PORT",
    "TPU_METRICS_PORT",
    "TPU_RESOURCE",
    "TPU_RUNTIME_PORT",
    "TPU_TAINT_KEY",
    "TPU_TAINT_VALUE",
    "WORKLOAD_POLICY_HIGH_THROUGHPUT",
    "ZONE_LABEL",
]

# Node label every node carries (the kubelet sets it): the node's name; Kueue TAS's finest level.
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
# Node labels the kubelet sets from its cloud provider: the VM's machine type and its zone.
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
# Node label GKE sets on every TPU node: the accelerator family, e.g. "tpu-v5-lite-podslice".
ACCELERATOR_LABEL: Final = "cloud.google.com/gke-tpu-accelerator"
# Node label GKE sets on every TPU node: the slice topology, e.g. "2x4" or "2x2x2".
TOPOLOGY_LABEL: Final = "cloud.google.com/gke-tpu-topology"
# Node label GKE sets to the node pool name; JobSet's exclusive-topology key (1 slice = 1 pool).
GKE_NODEPOOL_LABEL: Final = "cloud.google.com/gke-nodepool"
# Node label GKE sets to "true" on Spot VMs.
SPOT_LABEL: Final = "cloud.google.com/gke-spot"
# Node label naming the reservation a node was created from.
RESERVATION_NAME_LABEL: Final = "cloud.google.com/reservation-name"

# Extended resource a TPU pod requests; the request equals the chips of its VM (1 pod per TPU node).
TPU_RESOURCE: Final = "google.com/tpu"
# Container ports of TPU workloads (gke-tpu.md §1.5): 8471 TPU VM communication, 8080 the
# megascale (Multislice DCN) port XPK opens, 8431 TPU runtime metrics.
TPU_RUNTIME_PORT: Final = 8471
TPU_MEGASCALE_PORT: Final = 8080
TPU_METRICS_PORT: Final = 8431
# Taint on TPU nodes: google.com/tpu=present:NoSchedule.
TPU_TAINT_KEY: Final = "google.com/tpu"
TPU_TAINT_VALUE: Final = "present"
# The same effect in its two spellings: Kubernetes objects vs the GKE node-pool API.
K8S_TAINT_EFFECT_NO_SCHEDULE: Final = "NoSchedule"
GKE_TAINT_EFFECT_NO_SCHEDULE: Final = "NO_SCHEDULE"

# NodePool.placementPolicy.type for multi-host slices (with tpuTopology, or policyName for TPU7x).
PLACEMENT_COMPACT: Final = "COMPACT"
# ResourcePolicy.workloadPolicy.type that colocates TPU7x VMs of one multi-host slice.
WORKLOAD_POLICY_HIGH_THROUGHPUT: Final = "HIGH_THROUGHPUT"
# NodeConfig.reservationAffinity for a named reservation.
RESERVATION_AFFINITY_SPECIFIC: Final = "SPECIFIC_RESERVATION"
# Flex-start VMs never come from a reservation.
RESERVATION_AFFINITY_NONE: Final = "NO_RESERVATION"
RESERVATION_NAME_KEY: Final = "compute.googleapis.com/reservation-name"

# Node label of nodes from a queued-provisioning pool; GKE taints them with the same key, value
# "true", effect NoSchedule (GKE "flex-start with queued provisioning"; cluster-toolkit sets the
# label on TPU pools and tolerates the taint).
QUEUED_LABEL: Final = "cloud.google.com/gke-queued"
# Flex-start (DWS) VMs run at most 7 days (GKE provisioning-model docs).
FLEX_START_MAX_RUN_SECONDS: Final = 7 * 24 * 3600
# GKE Standard clusters hold at most 15,000 nodes: more slices than that can never exist, and
# planning them would hang `pulumi preview` instead of failing it.
GKE_MAX_NODES_PER_CLUSTER: Final = 15_000

# Version gates (gke-tpu.md §2.6).
MIN_GKE_VERSION_MULTISLICE: Final = "1.27.4-gke.900"
MIN_GKE_VERSION_UNPRIVILEGED_TPU: Final = "1.28"
MIN_GKE_VERSION_FLEX_START_TPU: Final = "1.33.0-gke.1712000"

# Our own node labels on every slice pool: which pool group and which slice index it is.
SLICE_GROUP_LABEL: Final = "jobset-infra/slice-group"
SLICE_INDEX_LABEL: Final = "jobset-infra/slice-index"
# Our node label on a hot-spare slice pool ("true"); the controller reads the same string from
# api/resilience.py (api and tpu import nothing of each other; a test holds them equal).
SPARE_POOL_LABEL: Final = "jobset-infra/spare-pool"
# Label on the CPU system pool's nodes; controllers may select it (TPU nodes are tainted anyway).
SYSTEM_POOL_LABEL: Final = "jobset-infra/pool"
SYSTEM_POOL_VALUE: Final = "system"
