"""Exclusive topology placement: one child Job per domain (node pool), without webhooks.

Pure: the runtime feeds Nodes (as `SlimNode`s), declared domains and occupancy views of Jobs; the
core's `exclusive_placement` step asks `allocate` for domains and pins each Job with a nodeSelector.
"""

from jobset_infra.placement.affinity import exclusive_affinity, with_exclusive_affinity
from jobset_infra.placement.allocate import Assignment, NoFit, allocate, placed_views
from jobset_infra.placement.domains import (
    DeclaredDomain,
    Domain,
    domain_sort_key,
    domains_from_nodes,
)
from jobset_infra.placement.feasibility import placement_problems
from jobset_infra.placement.fit import Fit, fit
from jobset_infra.placement.inputs import (
    PlacementInputs,
    needs_exclusive_placement,
    placement_inputs,
)
from jobset_infra.placement.jobs import (
    JobPlacementView,
    PlacementRequest,
    asks_exclusive_placement,
    job_view_from_manifest,
    priority_scope,
    request_from_job_manifest,
)
from jobset_infra.placement.nodes import (
    SlimNode,
    Taint,
    Toleration,
    slim_node_from_manifest,
)
from jobset_infra.placement.occupancy import Occupancy
from jobset_infra.placement.scheduling_terms import QuantityError, parse_quantity
from jobset_infra.placement.strategy import Strategy, strategy_for

__all__ = [
    "Assignment",
    "DeclaredDomain",
    "Domain",
    "Fit",
    "JobPlacementView",
    "NoFit",
    "Occupancy",
    "PlacementInputs",
    "PlacementRequest",
    "QuantityError",
    "SlimNode",
    "Strategy",
    "Taint",
    "Toleration",
    "allocate",
    "asks_exclusive_placement",
    "domain_sort_key",
    "domains_from_nodes",
    "exclusive_affinity",
    "fit",
    "job_view_from_manifest",
    "needs_exclusive_placement",
    "parse_quantity",
    "placed_views",
    "placement_inputs",
    "placement_problems",
    "priority_scope",
    "request_from_job_manifest",
    "slim_node_from_manifest",
    "strategy_for",
    "with_exclusive_affinity",
]
