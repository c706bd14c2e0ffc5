"""StartupPolicy InOrder (upstream startup_policy_test.go)."""

from __future__ import annotations

import pytest

from jobset_infra.controller.core.replicated_jobs_status import RJobCounts
from jobset_infra.controller.core.startup_policy import all_replicas_started, in_order
from jobset_infra.testing.jobsets import make_jobset


@pytest.mark.parametrize(
    ("order", "want"),
    [
        pytest.param("AnyOrder", False, id="AnyOrder"),
        pytest.param("InOrder", True, id="InOrder"),
        pytest.param(None, False, id="nil"),
    ],
)
def test_in_order_startup_policy(order: str | None, want: bool) -> None:
    builder = make_jobset("js").replicated_job("a")
    if order is not None:
        builder.startup_policy(order)
    assert in_order(builder.model()) is want


@pytest.mark.parametrize(
    ("replicas", "counts", "want"),
    [
        pytest.param(1, None, False, id="replicas 1 with no status"),
        pytest.param(4, RJobCounts(ready=4), True, id="replicas 4 all ready"),
        pytest.param(
            4,
            RJobCounts(ready=2, failed=1, succeeded=1),
            True,
            id="mix of ready, failed and succeeded",
        ),
        pytest.param(4, RJobCounts(active=4), False, id="all active (not started)"),
    ],
)
def test_replicated_job_started(replicas: int, counts: RJobCounts | None, want: bool) -> None:
    assert all_replicas_started(replicas, counts) is want
