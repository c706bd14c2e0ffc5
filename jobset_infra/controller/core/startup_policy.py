"""StartupPolicy InOrder (deprecated upstream in favour of DependsOn): replicated jobs start in
spec order, each once the previous one has fully started (upstream `startup_policy.go`).
"""

from __future__ import annotations

from jobset_infra.api.models import JobSet, StartupPolicyOrder
from jobset_infra.controller.core.replicated_jobs_status import RJobCounts

__all__ = ["all_replicas_started", "in_order"]


def in_order(js: JobSet) -> bool:
    """Return whether the JobSet uses the InOrder startup policy."""
    policy = js.spec.startup_policy
    return policy is not None and policy.startup_policy_order is StartupPolicyOrder.IN_ORDER


def all_replicas_started(replicas: int, counts: RJobCounts | None) -> bool:
    """Return whether every Job of a replicated job has started (ready, succeeded or failed)."""
    if counts is None:
        return False
    return replicas == counts.ready + counts.succeeded + counts.failed
