"""Success policy: when the JobSet is Completed (upstream `success_policy.go`).

`All`: every Job of the targeted replicated jobs succeeded; `Any`: one of them did. No targets
means every replicated job. A JobSet created without defaulting has no success policy; the core
then uses upstream's default, `All` (upstream would dereference nil).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jobset_infra.api.models import JobSet, Operator
from jobset_infra.controller.core.types import ChildJob

__all__ = [
    "jobs_expected_to_succeed",
    "jobs_matching_success_policy",
    "success_policy_met",
]


def _targets(js: JobSet) -> Sequence[str]:
    policy = js.spec.success_policy
    return policy.target_replicated_jobs if policy is not None else ()


def _operator(js: JobSet) -> Operator:
    policy = js.spec.success_policy
    return policy.operator if policy is not None else Operator.ALL


def jobs_matching_success_policy(js: JobSet, successful: Iterable[ChildJob]) -> int:
    """Return how many successful Jobs belong to a targeted replicated job."""
    targets = set(_targets(js))
    if not targets:
        return sum(1 for _ in successful)
    return sum(1 for job in successful if job.rjob in targets)


def jobs_expected_to_succeed(js: JobSet) -> int:
    """Return how many successful Jobs complete the JobSet (Any: 1; All: targeted replicas)."""
    if _operator(js) is Operator.ANY:
        return 1
    targets = set(_targets(js))
    return sum(
        rjob.replicas for rjob in js.spec.replicated_jobs if not targets or rjob.name in targets
    )


def success_policy_met(js: JobSet, successful: Sequence[ChildJob]) -> bool:
    """Return whether the successful Jobs satisfy the success policy."""
    return jobs_matching_success_policy(js, successful) >= jobs_expected_to_succeed(js)
