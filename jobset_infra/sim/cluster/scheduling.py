"""What the simulated scheduler checks, as pure functions over Pod and Node JSON (no I/O).

Quantities, requests, label selectors, node affinity, taints and tolerations, pod (anti-)affinity
terms and a Node's room for a Pod, mirroring the kube-scheduler's filter plugins closely enough for
tests to see where Pods land. `jobset_infra.sim.cluster.scheduler` keeps the state and does the
binding. Quantities, `matchExpressions` and required node affinity are placement's
(`jobset_infra.placement.scheduling_terms`), so the allocator and the scheduler read them alike.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Final

from jobset_infra.placement.scheduling_terms import (
    QuantityError,
    matches_expression,
)
from jobset_infra.placement.scheduling_terms import parse_quantity as parse_strict

__all__ = [
    "BLOCKING_EFFECTS",
    "Ask",
    "Bound",
    "NodeInfo",
    "Term",
    "live",
    "natural_key",
    "parse_quantity",
    "pod_requests",
    "selector_matches",
    "terms",
    "tolerated",
]

JsonObj = dict[str, Any]
DEFAULT_MAX_PODS: Final = 110
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


def parse_quantity(value: object) -> int:
    """Return a Kubernetes quantity in milli-units (0 when it is not a quantity)."""
    try:
        return parse_strict(value)
    except QuantityError:
        return 0


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """Return a Pod's effective requests in milli-units, `pods` included (limits stand in)."""
    total: Counter[str] = Counter({"pods": 1000})
    for container in spec.get("containers") or ():
        res = container.get("resources") or {}
        for name, q in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            total[name] += parse_quantity(q)
    for container in spec.get("initContainers") or ():
        res = container.get("resources") or {}
        for name, q in {**(res.get("limits") or {}), **(res.get("requests") or {})}.items():
            total[name] = max(total[name], parse_quantity(q))
    return dict(total)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    if selector is None:
        return False  # a nil label selector matches nothing in affinity terms
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(matches_expression(e, labels) for e in selector.get("matchExpressions") or ())


def tolerated(taint: Mapping[str, Any], tolerations: Iterable[Mapping[str, Any]]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


@dataclass
class NodeInfo:
    name: str
    labels: dict[str, str]
    taints: list[JsonObj]
    allocatable: dict[str, int] | None  # None: the Node reports none; unlimited
    usable: bool
    used: Counter[str] = field(default_factory=Counter)

    def room_for(self, requests: Mapping[str, int]) -> str:
        """Return "" if the requests fit, else the name of the first resource short."""
        if self.allocatable is None:
            return ""
        for name, amount in requests.items():
            default = DEFAULT_MAX_PODS * 1000 if name == "pods" else 0
            if amount and self.used[name] + amount > self.allocatable.get(name, default):
                return name
        return ""


@dataclass(frozen=True)
class Term:
    """A pod (anti-)affinity term, and which namespaces it looks at (None: all)."""

    selector: Mapping[str, Any] | None
    topology_key: str
    namespaces: frozenset[str] | None

    @staticmethod
    def of(raw: Mapping[str, Any], own_namespace: str) -> Term:
        names = raw.get("namespaces") or []
        scope = (
            None
            if raw.get("namespaceSelector") is not None
            else frozenset(names or [own_namespace])
        )
        return Term(raw.get("labelSelector"), str(raw.get("topologyKey", "")), scope)

    @cached_property
    def id(self) -> str:
        return json.dumps(
            [self.selector, self.topology_key, sorted(self.namespaces or ["*"])], sort_keys=True
        )

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        in_scope = self.namespaces is None or namespace in self.namespaces
        return in_scope and selector_matches(self.selector, labels)


@dataclass
class Bound:
    node: str
    namespace: str
    labels: Mapping[str, str]
    requests: Mapping[str, int]
    anti: tuple[Term, ...]


@dataclass(frozen=True)
class Ask:
    """What one pending Pod needs of a Node."""

    namespace: str
    labels: Mapping[str, str]
    requests: Mapping[str, int]
    tolerations: list[JsonObj]
    affinity: JsonObj
    together: tuple[Term, ...]
    forbidden: list[tuple[str, Counter[str]]]  # (topology key, values it may not join)


def terms(spec: Mapping[str, Any], kind: str, namespace: str) -> tuple[Term, ...]:
    section = (spec.get("affinity") or {}).get(kind) or {}
    raw = section.get("requiredDuringSchedulingIgnoredDuringExecution") or ()
    return tuple(Term.of(t, namespace) for t in raw)


def natural_key(name: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in re.split(r"(\d+)", name) if p)


def live(pod: JsonObj) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")
