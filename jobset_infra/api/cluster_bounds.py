"""How big a JobSet may be: no more pods than any cluster can hold.

Upstream only refuses `replicas x parallelism > MaxInt32` per replicated job, so the CRD takes a
JobSet of two billion Jobs, and a controller that tries to build them runs out of memory for
every JobSet in the cluster. A JobSet runs its Jobs together, so one that needs more pods than
the largest cluster runs at once can never start: GKE documents 200,000 pods per cluster (and
65,000 nodes), Kubernetes' own scalability envelope is 150,000 pods. `size_errors` refuses a
JobSet over `MAX_JOBSET_PODS` pods, naming the replicated job that tips it over. Pure.
"""

from __future__ import annotations

from typing import Any, Final

from jobset_infra.api.errors import FieldError, invalid
from jobset_infra.api.models import JobSet

__all__ = ["MAX_JOBSET_PODS", "pods_of", "size_errors"]

MAX_JOBSET_PODS: Final = 200_000
"""Sum over replicated jobs of replicas x parallelism (parallelism 0 or unset counts 1)."""


def _parallelism(template: dict[str, Any]) -> int:
    spec = template.get("spec")
    value = spec.get("parallelism") if isinstance(spec, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1


def pods_of(js: JobSet) -> list[int]:
    """Pods of each replicated job: replicas x parallelism (each Job runs at least one)."""
    return [rjob.replicas * _parallelism(rjob.template) for rjob in js.spec.replicated_jobs]


def size_errors(js: JobSet) -> list[FieldError]:
    """One error when the JobSet needs more than MAX_JOBSET_PODS pods, else none."""
    total = 0
    for i, pods in enumerate(pods_of(js)):
        total += pods
        if total > MAX_JOBSET_PODS:
            rjob = js.spec.replicated_jobs[i]
            return [invalid(
                f"spec.replicatedJobs[{i}].replicas",
                rjob.replicas,
                f"the JobSet needs {sum(pods_of(js))} pods (replicas x parallelism over its "
                f"replicated jobs), more than any cluster runs at once (at most "
                f"{MAX_JOBSET_PODS}: GKE's limit per cluster); lower replicas or parallelism",
            )]
    return []
