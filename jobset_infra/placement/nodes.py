"""Slim Nodes and the node-level predicates placement needs (pure; no I/O).

The runtime's Node informer keeps only a `SlimNode` per Node: labels, taints, allocatable and
whether new pods may land there. The predicates mirror the kube-scheduler's filters that matter
for choosing a domain: nodeSelector, taints/tolerations and resources (required node
affinity is in `scheduling_terms`, shared with the sim's scheduler).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.placement.scheduling_terms import QuantityError, parse_resources

__all__ = [
    "SlimNode",
    "Taint",
    "Toleration",
    "matches_node_selector",
    "node_problems",
    "pods_that_fit",
    "slim_node_from_manifest",
    "tolerates",
    "tolerations_from_spec",
]

# Only these effects keep a pod off a node; PreferNoSchedule is a hint the scheduler may ignore.
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
# The kubelet's own node conditions; any other condition that is True is a problem report
# (node-problem-detector and GKE's node problem detector use True for "the problem is there").
_KUBELET_CONDITIONS = frozenset(
    {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"}
)


@dataclass(frozen=True, slots=True)
class Taint:
    """A node taint."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration; operator is Equal or Exists, empty effect matches every effect."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Return True if this toleration lets a pod ignore `taint`."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass(frozen=True, slots=True)
class SlimNode:
    """What placement keeps of a Node. `allocatable` is in milli-units (see scheduling_terms.py).

    `allocatable=None` marks a node placement only knows from configuration (a declared pool
    scaled to zero): its capacity is unknown.
    """

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable: Mapping[str, int] | None = field(default_factory=dict)
    ready: bool = True
    unschedulable: bool = False
    placeholder: bool = False  # stands for a Node of a declared pool that does not exist yet
    problems: tuple[str, ...] = ()
    """Device or hardware problems the Node reports (see `node_problems`)."""

    @property
    def usable(self) -> bool:
        """Return True if new pods can be scheduled here (Ready and not cordoned)."""
        return self.ready and not self.unschedulable


def slim_node_from_manifest(node: Mapping[str, Any]) -> SlimNode:
    """Return the slim view of a Node manifest; malformed quantities count as zero."""
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    taints = tuple(
        Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
        for t in spec.get("taints") or ()
    )
    try:
        allocatable = parse_resources(status.get("allocatable"), "status.allocatable")
    except QuantityError:
        allocatable = {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    if not status.get("conditions"):
        # A Node without conditions has not reported yet; the sim and fresh fakes create such
        # Nodes, and the scheduler would place pods there, so treat it as ready.
        ready = True
    return SlimNode(
        name=str(meta.get("name", "")),
        labels=dict(meta.get("labels") or {}),
        taints=taints,
        allocatable=allocatable,
        ready=ready,
        unschedulable=bool(spec.get("unschedulable", False)),
        problems=node_problems(status),
    )


def node_problems(status: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the problems a Node's status reports, in words.

    Unhealthy devices: a device plugin (GKE's TPU plugin, a GPU one) takes a device it finds
    unhealthy out of the Node's allocatable, so an extended resource (`vendor/name`) with less
    allocatable than capacity means devices went bad. And any condition the kubelet does not
    own whose status is True (a node problem detector's report).
    """
    problems = [*_lost_devices(status)]
    for cond in status.get("conditions") or ():
        if not isinstance(cond, Mapping) or cond.get("status") != "True":
            continue
        kind = str(cond.get("type", ""))
        if kind and kind not in _KUBELET_CONDITIONS:
            reason = cond.get("reason")
            problems.append(f"condition {kind}" + (f" ({reason})" if reason else ""))
    return tuple(problems)


def _lost_devices(status: Mapping[str, Any]) -> list[str]:
    try:
        have = parse_resources(status.get("capacity"), "status.capacity")
        usable = parse_resources(status.get("allocatable"), "status.allocatable")
    except QuantityError:
        return []
    return [
        f"{(count - usable[name]) // 1000} of its {count // 1000} {name} devices are unhealthy"
        for name, count in sorted(have.items())
        if "/" in name and name in usable and usable[name] < count
    ]


def tolerations_from_spec(
    tolerations: Sequence[Mapping[str, Any]] | None,
) -> tuple[Toleration, ...]:
    """Return tolerations parsed from a pod spec's `tolerations` list."""
    return tuple(
        Toleration(
            key=str(t.get("key", "") or ""),
            operator=str(t.get("operator", "Equal") or "Equal"),
            value=str(t.get("value", "") or ""),
            effect=str(t.get("effect", "") or ""),
        )
        for t in tolerations or ()
    )


def tolerates(tolerations: Sequence[Toleration], taints: Sequence[Taint]) -> bool:
    """Return True if every blocking taint is tolerated by some toleration."""
    return all(
        any(tol.tolerates(taint) for tol in tolerations)
        for taint in taints
        if taint.effect in _BLOCKING_EFFECTS
    )


def matches_node_selector(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Return True if `labels` carry every key=value of a pod's nodeSelector."""
    return all(labels.get(k) == v for k, v in selector.items())


def pods_that_fit(
    allocatable: Mapping[str, int] | None, per_pod: Mapping[str, int], placeholder: bool = False
) -> int:
    """Return how many pods with requests `per_pod` one node can hold.

    `allocatable=None` means unknown (a declared pool whose Nodes do not exist yet and whose
    allocatable was not declared): count one pod per node, the TPU slice convention (each host
    runs one pod that takes all its chips). A node that does not list a requested resource has
    none of it, except on a placeholder, where only the declared resources are known.
    """
    if allocatable is None:
        return 1
    limits = [allocatable.get("pods", 110_000) // max(per_pod.get("pods", 1000), 1)]
    for name, amount in per_pod.items():
        if name == "pods" or amount <= 0 or (placeholder and name not in allocatable):
            continue
        limits.append(allocatable.get(name, 0) // amount)
    return max(0, min(limits))
