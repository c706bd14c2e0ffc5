"""TTL after finished: delete a finished JobSet `ttlSecondsAfterFinished` after it finished
(upstream `ttl_after_finished.go`). The finish time is the lastTransitionTime of the True
Completed or Failed condition; before expiry the reconcile asks to be requeued at expiry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from jobset_infra.api import constants as c
from jobset_infra.api.status import Condition
from jobset_infra.controller.core.types import parse_time

__all__ = ["TtlDecision", "finish_time", "ttl_after_finished"]


@dataclass(frozen=True, slots=True)
class TtlDecision:
    """Delete the JobSet now, or look again after `requeue_after` seconds, or neither."""

    delete: bool = False
    requeue_after: float | None = None


def finish_time(conditions: Sequence[Condition]) -> datetime | None:
    """Return when the JobSet finished (its True Completed/Failed condition), or None."""
    for cond in conditions:
        if cond.type in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) and cond.status == "True":
            return parse_time(cond.last_transition_time)
    return None


def ttl_after_finished(
    ttl_seconds: int | None, conditions: Sequence[Condition], now: datetime
) -> TtlDecision:
    """Return what the TTL asks for. Pure: `now` is given.

    No TTL, not finished, or an unreadable finish time: nothing (upstream errors on the latter).
    """
    if ttl_seconds is None:
        return TtlDecision()
    finished = finish_time(conditions)
    if finished is None:
        return TtlDecision()
    expire = finished + timedelta(seconds=ttl_seconds)
    if now >= expire:
        return TtlDecision(delete=True)
    return TtlDecision(requeue_after=(expire - now).total_seconds())
