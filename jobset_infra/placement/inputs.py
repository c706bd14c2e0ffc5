"""What the runtime hands the core for exclusive placement (pure data).

The runtime builds one `PlacementInputs` per reconcile of an exclusive JobSet, under its
placement lock: the Nodes it caches (None when it may not list them), the domains declared in its
configuration, the occupancy views of every exclusive Job (cache overlaid by in-flight writes) and
its placement mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api.controller_config import PlacementMode
from jobset_infra.placement.domains import DeclaredDomain, Domain, domains_from_nodes
from jobset_infra.placement.jobs import JobPlacementView
from jobset_infra.placement.nodes import SlimNode
from jobset_infra.placement.occupancy import Occupancy
from jobset_infra.placement.pool_health import KeptOut
from jobset_infra.placement.strategy import child_job_annotations, exclusive_topology

__all__ = [
    "DEFAULT_RETRY_SECONDS",
    "PlacementInputs",
    "needs_exclusive_placement",
    "placement_inputs",
]

# How long a JobSet waiting for a domain waits before it is looked at again. The runtime also
# re-queues it on Node and Job changes, so this is only a safety net.
DEFAULT_RETRY_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class PlacementInputs:
    """Nodes, declared domains, occupancy and mode for one reconcile."""

    nodes: tuple[SlimNode, ...] | None = None  # None: the controller may not list Nodes
    declared: tuple[DeclaredDomain, ...] = ()
    occupancy: Occupancy = field(default_factory=Occupancy)
    mode: PlacementMode = PlacementMode.AUTO
    retry_seconds: float = DEFAULT_RETRY_SECONDS
    kept_out: Mapping[tuple[str, str], KeptOut] = field(default_factory=dict)
    """Domains that failed recently for an infrastructure cause, by (topology key, domain):
    an assignment uses them only when no healthy domain fits (`pool_health.kept_out`)."""

    @property
    def domains_known(self) -> bool:
        """Return True when the controller can tell which domains exist."""
        return self.nodes is not None or bool(self.declared)

    def domains(self, topology_key: str) -> tuple[Domain, ...]:
        """Return the domains of `topology_key` (from Nodes and declarations)."""
        return domains_from_nodes(self.nodes, topology_key, self.declared)


def placement_inputs(
    nodes: Iterable[SlimNode] | None,
    declared: Iterable[DeclaredDomain],
    views: Iterable[JobPlacementView],
    mode: PlacementMode | str = PlacementMode.AUTO,
    kept_out: Mapping[tuple[str, str], KeptOut] | None = None,
) -> PlacementInputs:
    """Return placement inputs; `views` are the cache's views followed by in-flight ones."""
    return PlacementInputs(
        nodes=None if nodes is None else tuple(nodes),
        declared=tuple(declared),
        occupancy=Occupancy.from_views(views),
        mode=PlacementMode(mode),
        kept_out=dict(kept_out or {}),
    )


def needs_exclusive_placement(jobset: Mapping[str, Any]) -> bool:
    """Return True if a JobSet manifest asks for exclusive topology anywhere (JobSet or rjob).

    The runtime serializes reconciles of such JobSets under one lock.
    """
    jobset_annotations = _mapping(_mapping(jobset.get("metadata")).get("annotations"))
    if exclusive_topology(jobset_annotations) is not None:
        return True
    rjobs = _mapping(jobset.get("spec")).get("replicatedJobs")
    for rjob in rjobs if isinstance(rjobs, list) else ():
        template_meta = _mapping(_mapping(_mapping(rjob).get("template")).get("metadata"))
        inherited = child_job_annotations(
            jobset_annotations, _mapping(template_meta.get("annotations"))
        )
        if exclusive_topology(inherited) is not None:
            return True
    return False


def _mapping(value: object) -> Mapping[str, Any]:
    """`value` if it is a mapping, else empty: a JobSet that bypassed the CRD may have any shape,
    and the controller must still reach the step that reports it as invalid."""
    return value if isinstance(value, Mapping) else {}
