"""In-place restart (KEP-467, upstream `in_place_restart.go`; gate InPlaceRestart).

The agent in every worker Pod writes the Pod's in-place restart attempt as an annotation; the
controller only moves two status fields the agents watch:

* every Pod of the JobSet annotated, all with one attempt: `currentInPlaceRestartAttempt` is
  that attempt, so the agents lift their barrier and the workers start;
* otherwise, once some Pod is past attempt 0: `previousInPlaceRestartAttempt` is the highest
  attempt minus one (it never goes down), so each agent still at an older attempt exits to
  restart its Pod in place and comes back at the newest one.

The JobSet fails (`ReachedMaxRestarts`) when a container restarted more often than maxRestarts,
or when the highest attempt, less the restarts that did not count towards the max, exceeds it.
Failed Pods (being replaced) and Pods the agent has not annotated yet do not count. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from jobset_infra.api.models import JobSet, RestartStrategy
from jobset_infra.controller.core.pod_view import INVALID_ATTEMPT, PodView

__all__ = ["AttemptsDecision", "in_place_restart", "uses_in_place_restart"]


@dataclass(frozen=True, slots=True)
class AttemptsDecision:
    """What the pass does: fail the JobSet, or set the two attempts (None: leave as is)."""

    fail: bool = False
    current: int | None = None
    previous: int | None = None


def uses_in_place_restart(js: JobSet) -> bool:
    """The JobSet asks for restartStrategy InPlaceRestart."""
    policy = js.spec.failure_policy
    return policy is not None and policy.restart_strategy is RestartStrategy.IN_PLACE_RESTART


def _expected_pods(js: JobSet) -> int | None:
    """Replicas x parallelism summed; None when a template lacks completions == parallelism
    (validation reports it; upstream's pass errors and nothing moves)."""
    total = 0
    for rjob in js.spec.replicated_jobs:
        spec = rjob.template.get("spec") or {}
        parallelism, completions = spec.get("parallelism"), spec.get("completions")
        if not isinstance(parallelism, int) or parallelism != completions:
            return None
        total += rjob.replicas * parallelism
    return total


def in_place_restart(js: JobSet, pods: Sequence[PodView]) -> AttemptsDecision:
    """Return what the Pods' attempts ask of the JobSet's status. Pure."""
    policy = js.spec.failure_policy
    max_restarts = policy.max_restarts if policy is not None else 0
    status = js.status
    # a container that fails faster than the barrier lifts would otherwise never be caught
    if max((p.max_restart_count for p in pods), default=0) > max_restarts:
        return AttemptsDecision(fail=True)
    attempts = [
        p.in_place_restart_attempt
        for p in pods
        if not p.failed
        and p.in_place_restart_attempt is not None
        and p.in_place_restart_attempt != INVALID_ATTEMPT  # upstream errors; we skip the Pod
    ]
    highest = max(attempts, default=0)
    uncounted = (status.restarts - (status.restarts_count_towards_max or 0)) if status else 0
    if highest - uncounted > max_restarts:
        return AttemptsDecision(fail=True)
    current = status.current_in_place_restart_attempt if status else None
    previous = status.previous_in_place_restart_attempt if status else None
    expected = _expected_pods(js)
    if expected is not None and attempts and len(attempts) == expected and len(set(attempts)) == 1:
        in_sync = attempts[0]
        return AttemptsDecision(current=in_sync) if in_sync != current else AttemptsDecision()
    if expected is None or highest == 0:
        return AttemptsDecision()
    lagging = highest - 1
    if previous is not None and lagging <= previous:
        return AttemptsDecision()
    return AttemptsDecision(previous=lagging)
