"""TTL after finished (upstream ttl_after_finished_test.go)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from jobset_infra.api.status import Condition
from jobset_infra.controller.core.ttl_after_finished import TtlDecision, ttl_after_finished
from jobset_infra.controller.core.types import format_time

NOW = datetime(2026, 4, 1, 10, 0, 0, tzinfo=UTC)


def finished(type_: str = "Completed", ago: float = 0) -> list[dict[str, Any]]:
    at = format_time(NOW - timedelta(seconds=ago))
    return [
        {"type": type_, "status": "True", "reason": "r", "message": "", "lastTransitionTime": at}
    ]


@pytest.mark.parametrize(
    ("ttl", "conditions", "want"),
    [
        pytest.param(None, [], TtlDecision(), id="not finished, no TTL"),
        pytest.param(5, [], TtlDecision(), id="not finished, TTL 5s"),
        pytest.param(None, finished(), TtlDecision(), id="completed now, no TTL"),
        pytest.param(
            5, finished(ago=10), TtlDecision(delete=True), id="completed 10s ago, TTL 5s: delete"
        ),
        pytest.param(
            5,
            finished(ago=2),
            TtlDecision(requeue_after=3),
            id="completed 2s ago, TTL 5s: requeue 3s",
        ),
        pytest.param(
            0, finished(), TtlDecision(delete=True), id="completed now, TTL 0: delete immediately"
        ),
        pytest.param(
            10, finished("Failed"), TtlDecision(requeue_after=10), id="failed now, TTL 10s"
        ),
        pytest.param(
            15,
            finished("Failed", ago=10),
            TtlDecision(requeue_after=5),
            id="failed 10s ago, TTL 15s",
        ),
        pytest.param(
            5,
            [{"type": "Completed", "status": "True", "lastTransitionTime": "not a time"}],
            TtlDecision(),
            id="invalid completion time: nothing",
        ),
        pytest.param(
            5,
            [{"type": "Completed", "status": "False", "lastTransitionTime": format_time(NOW)}],
            TtlDecision(),
            id="a False Completed condition is not finished",
        ),
    ],
)
def test_ttl_after_finished(
    ttl: int | None, conditions: list[dict[str, Any]], want: TtlDecision
) -> None:
    typed = [Condition.model_validate({"reason": "R", "message": "", **x}) for x in conditions]
    assert ttl_after_finished(ttl, typed, NOW) == want
