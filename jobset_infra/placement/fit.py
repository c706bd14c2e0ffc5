"""Whether a request's pods fit a domain, and if not, why (pure).

A domain fits when its usable nodes that match the pods' nodeSelector and required node affinity
and whose taints the pods tolerate have room for all the Job's pods. The reasons are sentences,
because they end up in a JobSet condition a person reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobset_infra.placement.domains import Domain
from jobset_infra.placement.jobs import PlacementRequest
from jobset_infra.placement.nodes import SlimNode, matches_node_selector, pods_that_fit, tolerates
from jobset_infra.placement.scheduling_terms import matches_node_affinity

__all__ = ["Fit", "fit"]


@dataclass(frozen=True, slots=True)
class Fit:
    """How many of the request's pods the domain can hold; `problem` is empty when all fit."""

    room: int
    problem: str = ""

    @property
    def ok(self) -> bool:
        """Return True when the domain can hold every pod of the request."""
        return not self.problem


def _mismatch(request: PlacementRequest, node: SlimNode) -> str:
    for key, want in sorted(request.node_selector.items()):
        have = node.labels.get(key)
        if have != want:
            return f"nodeSelector {key}={want} but its nodes have {have or 'no such label'}"
    if not matches_node_affinity(request.affinity, node.labels):
        return "its nodes do not satisfy the required node affinity"
    for taint in node.taints:
        if not tolerates(request.tolerations, (taint,)):
            return f"taint {taint.key}={taint.value}:{taint.effect} is not tolerated"
    return ""


def _matches(request: PlacementRequest, node: SlimNode) -> bool:
    return (
        matches_node_selector(request.node_selector, node.labels)
        and matches_node_affinity(request.affinity, node.labels)
        and tolerates(request.tolerations, node.taints)
    )


def fit(request: PlacementRequest, domain: Domain) -> Fit:
    """Return how well `request` fits `domain` (ignoring who else holds it)."""
    if request.pinned is not None and request.pinned != domain.name:
        return Fit(0, f"the Job is pinned to {request.pinned}")
    if not domain.nodes:
        return Fit(0, "it has no nodes")
    matching = [n for n in domain.nodes if _matches(request, n)]
    if not matching:
        return Fit(0, _mismatch(request, domain.nodes[0]))
    usable = [n for n in matching if n.usable]
    room = sum(pods_that_fit(n.allocatable, request.per_pod, n.placeholder) for n in usable)
    if room >= request.pods:
        return Fit(room)
    not_ready = len(matching) - len(usable)
    if not_ready:
        return Fit(room, f"{not_ready} of its {len(matching)} nodes are not ready")
    short = _short_resource(request, usable[0]) if usable and room == 0 else ""
    return Fit(room, f"room for {room} of the {request.pods} pods{short}")


def _short_resource(request: PlacementRequest, node: SlimNode) -> str:
    """Return which resource one pod asks more of than a node has, as a clause ("" if none)."""
    if node.allocatable is None:
        return ""
    for name, amount in sorted(request.per_pod.items()):
        if name == "pods" or (node.placeholder and name not in node.allocatable):
            continue
        have = node.allocatable.get(name, 0)
        if amount > have:
            return f" (a pod asks {_amount(amount)} {name}, a node has {_amount(have)})"
    return ""


def _amount(milli: int) -> str:
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"
