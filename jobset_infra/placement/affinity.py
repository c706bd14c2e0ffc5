"""The affinity strategy: pod affinity and anti-affinity on a Job's pod template (pure).

Upstream v0.2 put these terms on every pod of an exclusive Job: pods of the same Job (same
job-key label) attract each other within the topology domain, and repel pods of other exclusive
Jobs. The scheduler then keeps a Job alone in its domain, at a cost: upstream measured 58 pods/s
with these terms versus 266 pods/s without (jobset #174). We use it only where the controller
cannot know the domains (no Node access, nothing declared).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jobset_infra.api import constants as c

__all__ = ["exclusive_affinity", "with_exclusive_affinity"]


def exclusive_affinity(job_key: str, topology_key: str) -> dict[str, Any]:
    """Return the affinity and anti-affinity terms keeping one Job alone in a domain."""
    together = {
        "labelSelector": {
            "matchExpressions": [{"key": c.JOB_KEY, "operator": "In", "values": [job_key]}]
        },
        "topologyKey": topology_key,
        "namespaceSelector": {},  # all namespaces: exclusivity is cluster-wide
    }
    apart = {
        "labelSelector": {
            "matchExpressions": [
                {"key": c.JOB_KEY, "operator": "Exists"},
                {"key": c.JOB_KEY, "operator": "NotIn", "values": [job_key]},
            ]
        },
        "topologyKey": topology_key,
        "namespaceSelector": {},
    }
    return {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [together]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [apart]},
    }


def _append_terms(affinity: dict[str, Any], kind: str, terms: list[Any]) -> None:
    section = affinity.setdefault(kind, {})
    existing = section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
    for term in terms:
        if term not in existing:
            existing.append(term)


def with_exclusive_affinity(job: Mapping[str, Any], topology_key: str) -> dict[str, Any]:
    """Return a copy of the Job manifest with the exclusive terms added to its pod template.

    The terms are appended to any the user wrote, and not added twice (idempotent). The job-key
    value comes from the pod template's job-key label, which construction always sets.
    """
    out = copy.deepcopy(dict(job))
    template = out.setdefault("spec", {}).setdefault("template", {})
    job_key = str((template.get("metadata") or {}).get("labels", {}).get(c.JOB_KEY, ""))
    if not job_key:
        job_key = str((out.get("metadata") or {}).get("labels", {}).get(c.JOB_KEY, ""))
    pod = template.setdefault("spec", {})
    affinity = pod.setdefault("affinity", {})
    for kind, section in exclusive_affinity(job_key, topology_key).items():
        _append_terms(affinity, kind, section["requiredDuringSchedulingIgnoredDuringExecution"])
    return out
