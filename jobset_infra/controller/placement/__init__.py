"""Exclusive topology placement: one child Job per domain (node pool), without webhooks.

Pure: the runtime feeds Nodes (as `SlimNode`s), declared domains and occupancy views of Jobs; the
core's `exclusive_placement` step asks `allocate` for domains and pins each Job with a nodeSelector.
"""

from jobset_infra.controller.placement.allocate import Assignment, NoFit, allocate, placed_views
from jobset_infra.controller.placement.domains import (
    DeclaredDomain,
    Domain,
    domain_sort_key,
    domains_from_nodes,
)
from jobset_infra.controller.placement.fit import Fit, fit
from jobset_infra.controller.placement.jobs import (
    JobPlacementView,
    PlacementRequest,
    job_view_from_manifest,
    priority_scope,
    request_from_job_manifest,
)
from jobset_infra.controller.placement.nodes import (
    SlimNode,
    Taint,
    Toleration,
    slim_node_from_manifest,
)
from jobset_infra.controller.placement.occupancy import Occupancy
from jobset_infra.controller.placement.quantity import QuantityError, parse_quantity

__all__ = [
    "Assignment",
    "DeclaredDomain",
    "Domain",
    "Fit",
    "JobPlacementView",
    "NoFit",
    "Occupancy",
    "PlacementRequest",
    "QuantityError",
    "SlimNode",
    "Taint",
    "Toleration",
    "allocate",
    "domain_sort_key",
    "domains_from_nodes",
    "fit",
    "job_view_from_manifest",
    "parse_quantity",
    "placed_views",
    "priority_scope",
    "request_from_job_manifest",
    "slim_node_from_manifest",
]
