"""Could this JobSet ever be placed on these domains? (pure; for preview-time checks).

At runtime a JobSet that does not fit waits with a condition saying why. Before that, at
`pulumi preview` or `jobset-infra validate`, the same allocator can tell whether it could fit the
declared pools at all, with nothing else running: a JobSet asking for five 2x4 slices on four
2x4 pools, or for a topology no pool has, is then an error naming the replicated job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset_infra.api.job_names import child_job_name
from jobset_infra.placement.allocate import NoFit, allocate
from jobset_infra.placement.domains import DeclaredDomain, domains_from_nodes
from jobset_infra.placement.jobs import PlacementRequest, request_from_job_manifest
from jobset_infra.placement.occupancy import Occupancy
from jobset_infra.placement.scheduling_terms import QuantityError
from jobset_infra.placement.strategy import (
    child_job_annotations,
    exclusive_topology,
    placed_by_controller,
)

__all__ = ["placement_problems"]


def _requests(jobset: Mapping[str, Any]) -> list[PlacementRequest]:
    meta = jobset.get("metadata") or {}
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", "default"))
    out = []
    for i, rjob in enumerate((jobset.get("spec") or {}).get("replicatedJobs") or ()):
        template = rjob.get("template") or {}
        annotations = child_job_annotations(
            meta.get("annotations") or {}, (template.get("metadata") or {}).get("annotations") or {}
        )
        key = exclusive_topology(annotations)
        if key is None or not placed_by_controller(annotations):
            continue
        for index in range(int(rjob.get("replicas", 1) or 0)):
            job = {
                "metadata": {
                    "name": child_job_name(name, str(rjob.get("name")), index),
                    "namespace": namespace,
                },
                "spec": template.get("spec") or {},
            }
            try:
                out.append(request_from_job_manifest(job, key))
            except QuantityError as err:
                raise QuantityError(f"spec.replicatedJobs[{i}]: {err}") from None
    return out


def placement_problems(jobset: Mapping[str, Any], declared: Sequence[DeclaredDomain]) -> list[str]:
    """Return why the JobSet's exclusive Jobs could never all be placed on `declared` pools.

    Empty when it fits (or asks for no exclusive placement, or nothing is declared for its
    topology key, so only the cluster's Nodes can tell). Never raises on odd input.
    """
    try:
        requests = _requests(jobset)
    except QuantityError as err:
        return [str(err)]
    except (TypeError, ValueError, AttributeError):
        return []  # malformed: schema validation reports it
    keys = {r.topology_key for r in requests}
    domains = tuple(d for key in sorted(keys) for d in domains_from_nodes(None, key, declared))
    declared_keys = {d.topology_key for d in domains}
    requests = [r for r in requests if r.topology_key in declared_keys]
    result = allocate(requests, domains, Occupancy())
    if isinstance(result, NoFit):
        return [f"exclusive placement can never fit the declared pools: {result.message}"]
    return []
