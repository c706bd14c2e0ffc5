"""What placement reads from Jobs: occupancy views of existing Jobs, requests of new ones (pure).

Occupancy is derived from the Jobs themselves (their pod template's nodeSelector on the topology
key), never from controller memory, so it survives restarts and is the same on every replica.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.placement.nodes import Toleration, tolerations_from_spec
from jobset_infra.placement.scheduling_terms import parse_resources
from jobset_infra.placement.strategy import exclusive_topology

__all__ = [
    "JobPlacementView",
    "PlacementRequest",
    "asks_exclusive_placement",
    "job_view_from_manifest",
    "pod_requests",
    "priority_scope",
    "request_from_job_manifest",
]


@dataclass(frozen=True, slots=True)
class JobPlacementView:
    """One exclusive Job as occupancy sees it.

    `holds_domain` is False once the Job finished, is suspended or is being deleted: upstream
    releases the domain then too (its anti-affinity only sees running pods), and Kueue preemption
    suspends, so a preempted JobSet frees its pools at once.
    """

    key: str  # "<namespace>/<name>"
    uid: str
    owner: str  # "<namespace>/<jobset name>" ("" when not owned by a JobSet)
    topology_key: str
    domain: str | None  # pod template nodeSelector[topology_key]
    scope: str  # priority scope, see priority_scope()
    holds_domain: bool
    resource_version: str = ""
    draining: bool = False  # released, but its pods may still be running there (being deleted)


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """A child Job that needs a domain to itself: its pods and what they require of a node."""

    key: str  # "<namespace>/<name>"
    owner: str  # "<namespace>/<jobset name>"
    topology_key: str
    pods: int
    per_pod: Mapping[str, int] = field(default_factory=dict)  # milli-units, incl. "pods"
    node_selector: Mapping[str, str] = field(default_factory=dict)  # without the topology key
    affinity: Mapping[str, Any] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    scope: str = ""
    pinned: str | None = None  # the user set nodeSelector[topology_key] themselves
    previous: str | None = None  # the domain it had before (resume): preferred when free


def priority_scope(pod_spec: Mapping[str, Any]) -> str:
    """Return the priority level exclusivity is scoped to (upstream: the pod's priority).

    The numeric `priority` is used when the template has one; otherwise the priorityClassName
    (admission resolves it to a number only on pods, which the controller never sees).
    """
    priority = pod_spec.get("priority")
    if isinstance(priority, int) and not isinstance(priority, bool):
        return str(priority)
    name = pod_spec.get("priorityClassName")
    return f"class:{name}" if name else ""


def _finished(status: Mapping[str, Any]) -> bool:
    return any(
        cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True"
        for cond in status.get("conditions") or ()
        if isinstance(cond, Mapping)
    )


def _owner(meta: Mapping[str, Any]) -> str:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") == c.KIND:
            return f"{meta.get('namespace', '')}/{ref.get('name', '')}"
    return ""


def asks_exclusive_placement(job: Mapping[str, Any]) -> bool:
    """Whether `job_view_from_manifest(job)` gives a view (the Job asks for a domain of its
    own), read from its annotations alone."""
    return exclusive_topology((job.get("metadata") or {}).get("annotations") or {}) is not None


def job_view_from_manifest(job: Mapping[str, Any]) -> JobPlacementView | None:
    """Return the occupancy view of a Job, or None when it does not ask for exclusive placement."""
    meta = job.get("metadata") or {}
    topology_key = exclusive_topology(meta.get("annotations") or {})
    if topology_key is None:
        return None
    spec = job.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    domain = (pod.get("nodeSelector") or {}).get(topology_key)
    status = job.get("status") or {}
    finished = _finished(status)
    stopping = bool(meta.get("deletionTimestamp")) or spec.get("suspend") is True
    holds = not (stopping or finished)
    return JobPlacementView(
        key=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        uid=str(meta.get("uid", "")),
        owner=_owner(meta),
        topology_key=str(topology_key),
        domain=str(domain) if domain else None,
        scope=priority_scope(pod),
        holds_domain=holds and bool(domain),
        resource_version=str(meta.get("resourceVersion", "")),
        draining=bool(domain) and stopping and not finished and status.get("active", 0) != 0,
    )


def pod_requests(pod_spec: Mapping[str, Any], field_path: str) -> dict[str, int]:
    """Return one pod's effective requests in milli-units, plus `pods: 1000` (one pod).

    As the scheduler computes it: the sum over containers (a container's limits stand in for
    requests it does not set), and at least the largest init container's.
    """
    total: dict[str, int] = {}
    for i, container in enumerate(pod_spec.get("containers") or ()):
        for name, amount in _container_requests(container, f"{field_path}.containers[{i}]").items():
            total[name] = total.get(name, 0) + amount
    for i, container in enumerate(pod_spec.get("initContainers") or ()):
        path = f"{field_path}.initContainers[{i}]"
        for name, amount in _container_requests(container, path).items():
            total[name] = max(total.get(name, 0), amount)
    total["pods"] = 1000
    return total


def _container_requests(container: Mapping[str, Any], path: str) -> dict[str, int]:
    resources = container.get("resources") or {}
    limits = parse_resources(resources.get("limits"), f"{path}.resources.limits")
    requests = parse_resources(resources.get("requests"), f"{path}.resources.requests")
    return {**limits, **requests}


def _count(value: object) -> int | None:
    # A negative or non-integer count never gets past the API server; treat it as unset.
    if isinstance(value, int) and not isinstance(value, bool):
        return max(0, value)
    return None


def request_from_job_manifest(
    job: Mapping[str, Any], topology_key: str, previous: str | None = None
) -> PlacementRequest:
    """Return the placement request of a Job about to be created or resumed.

    A nodeSelector on the topology key pins the Job to that domain, unless it equals `previous`
    (the domain placement gave the Job before it was suspended), which is only a preference.

    Raises QuantityError (naming the field) when a container's resources are not quantities.
    """
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    pod = (spec.get("template") or {}).get("spec") or {}
    parallelism = _count(spec.get("parallelism"))
    parallelism = 1 if parallelism is None else parallelism  # the API server's default
    completions = _count(spec.get("completions"))
    pods = parallelism if completions is None else min(parallelism, completions)
    selector = dict(pod.get("nodeSelector") or {})
    pinned = selector.pop(topology_key, None)
    if pinned is not None and pinned == previous:
        pinned = None  # our own earlier assignment (resume), not the user's choice
    name = str(meta.get("name", ""))
    return PlacementRequest(
        key=f"{meta.get('namespace', '')}/{name}",
        owner=_owner(meta),
        topology_key=topology_key,
        pods=pods,
        per_pod=pod_requests(pod, f"job {name}: spec.template.spec"),
        node_selector=selector,
        affinity=dict(pod.get("affinity") or {}),
        tolerations=tolerations_from_spec(pod.get("tolerations")),
        scope=priority_scope(pod),
        pinned=str(pinned) if pinned else None,
        previous=previous,
    )
