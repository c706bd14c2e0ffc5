"""DependsOn (upstream depends_on_test.go TestDependencyReachedStatus)."""

from __future__ import annotations

import pytest

from jobset_infra.controller.core.depends_on import dependencies_reached
from jobset_infra.controller.core.replicated_jobs_status import RJobCounts
from jobset_infra.testing.jobsets import make_jobset

REPLICAS = {"a": 2, "b": 3, "c": 1}


def _rjob(*deps: tuple[str, str]):  # type: ignore[no-untyped-def]
    builder = make_jobset("js").replicated_job("a", 2).replicated_job("b", 3)
    builder.replicated_job("c", 1, depends_on=list(deps) if deps else None)
    return builder.model().spec.replicated_jobs[2]


@pytest.mark.parametrize(
    ("deps", "counts", "want"),
    [
        pytest.param((), {}, True, id="ReplicatedJob doesn't have any dependencies"),
        pytest.param(
            (("a", "Complete"),), {"b": RJobCounts()}, False, id="status for ReplicatedJob is nil"
        ),
        pytest.param((("a", "Ready"),), {}, False, id="rJobStatuses is nil"),
        pytest.param(
            (("a", "Complete"),),
            {"a": RJobCounts(succeeded=2)},
            True,
            id="depends on ReplicatedJob reaches complete status",
        ),
        pytest.param(
            (("a", "Complete"),),
            {"a": RJobCounts(succeeded=1, ready=1)},
            False,
            id="one depends on ReplicatedJob doesn't reach complete status",
        ),
        pytest.param(
            (("a", "Complete"), ("b", "Complete")),
            {"a": RJobCounts(succeeded=1), "b": RJobCounts(succeeded=2)},
            False,
            id="two depends on ReplicatedJob doesn't reach complete status",
        ),
        pytest.param(
            (("a", "Ready"),),
            {"a": RJobCounts(ready=1, succeeded=1)},
            True,
            id="depends on ReplicatedJob reaches ready status",
        ),
        pytest.param(
            (("a", "Ready"),),
            {"a": RJobCounts(ready=1, active=2)},
            False,
            id="one depends on ReplicatedJob doesn't reach ready status",
        ),
        pytest.param(
            (("a", "Ready"), ("b", "Ready")),
            {"a": RJobCounts(ready=1), "b": RJobCounts(ready=1, failed=1)},
            False,
            id="two depends on ReplicatedJobs doesn't reach ready status",
        ),
        pytest.param(
            (("a", "Ready"), ("b", "Complete")),
            {"a": RJobCounts(ready=2), "b": RJobCounts(succeeded=3)},
            True,
            id="ready of one and complete of another both reached",
        ),
    ],
)
def test_dependency_reached_status(
    deps: tuple[tuple[str, str], ...], counts: dict[str, RJobCounts], want: bool
) -> None:
    assert dependencies_reached(_rjob(*deps), counts, REPLICAS) is want
