"""Kubernetes' scheduling terms over plain JSON: resource quantities and node requirements (pure).

Declared once for both readers of them: the placement allocator (which pool can hold a Job) and
the sim's scheduler (`jobset_infra.sim.cluster.scheduling`, where a Pod lands). Fit checks
compare a pod's requests with a node's allocatable; both are quantities such as `500m`, `16Gi`
or `4`, kept as integers in milli-units (cpu stays exact, memory in bytes fits). A
`matchExpressions` requirement and required node affinity are matched as the kube-scheduler's
NodeAffinity filter matches them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from jobset_infra.api.quantity import parse_quantity_text

__all__ = [
    "QuantityError",
    "add_resources",
    "matches_expression",
    "matches_node_affinity",
    "parse_quantity",
    "parse_resources",
]

class QuantityError(ValueError):
    """A resource quantity that Kubernetes would not accept."""


def parse_quantity(value: object, field: str = "quantity") -> int:
    """Return `value` in milli-units, rounded up (as the API server rounds requests).

    Raises QuantityError naming `field` when the value is not a Kubernetes quantity.
    """
    amount = parse_quantity_text(value.strip() if isinstance(value, str) else value)
    if amount is None:
        raise QuantityError(f"{field}: {value!r} is not a quantity; use e.g. 4, 500m or 16Gi")
    return math.ceil(amount * 1000)


def parse_resources(resources: Mapping[str, object] | None, field: str) -> dict[str, int]:
    """Return a resource list (name -> quantity) in milli-units; `field` names it in errors."""
    if not resources:
        return {}
    return {name: parse_quantity(q, f"{field}.{name}") for name, q in resources.items()}


def add_resources(total: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    """Return `total + more`, resource by resource (a new dict)."""
    out = dict(total)
    for name, amount in more.items():
        out[name] = out.get(name, 0) + amount
    return out


def matches_expression(expr: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Return True if `labels` satisfy one `matchExpressions` requirement.

    In, NotIn, Exists and DoesNotExist as in label selectors; Gt and Lt compare integers, as in
    node selector requirements. An unknown operator matches nothing.
    """
    key, op = str(expr.get("key", "")), str(expr.get("operator", ""))
    values = [str(v) for v in expr.get("values") or ()]
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def matches_node_affinity(affinity: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Return True if `labels` satisfy the required node affinity (terms are ORed)."""
    required = ((affinity or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(
        all(matches_expression(e, labels) for e in term.get("matchExpressions") or ())
        for term in terms
    )
