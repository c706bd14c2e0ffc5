"""Success policy (upstream success_policy_test.go)."""

from __future__ import annotations

import pytest

from jobset_infra.controller.core.success_policy import (
    jobs_expected_to_succeed,
    jobs_matching_success_policy,
    success_policy_met,
)
from jobset_infra.controller.core.types import ChildJob
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset


def _js(operator: str | None = "All", targets: list[str] | None = None) -> JobSetBuilder:
    builder = make_jobset("js").replicated_job("a", replicas=1).replicated_job("b", replicas=3)
    if operator is not None:
        builder.success_policy(operator, targets)
    return builder


def done(rjob: str, index: int = 0) -> ChildJob:
    return make_job("js", rjob=rjob, index=index).completed().view()


@pytest.mark.parametrize(
    ("targets", "jobs", "want"),
    [
        pytest.param(None, [done("a")], 1, id="one"),
        pytest.param(["a", "b"], [done("a"), done("b"), done("b", 1)], 3, id="all"),
        pytest.param(["b"], [done("a")], 0, id="none"),
        pytest.param([], [done("a"), done("b")], 2, id="empty targets"),
    ],
)
def test_jobs_matching_success_policy(
    targets: list[str] | None, jobs: list[ChildJob], want: int
) -> None:
    assert jobs_matching_success_policy(_js("All", targets).model(), jobs) == want


@pytest.mark.parametrize(
    ("operator", "targets", "want"),
    [
        pytest.param("Any", None, 1, id="Any gives 1"),
        pytest.param("All", None, 4, id="all rjobs match"),
        pytest.param("All", ["b"], 3, id="some don't"),
        pytest.param(None, None, 4, id="no success policy (created before defaulting) means All"),
    ],
)
def test_jobs_expected_to_succeed(
    operator: str | None, targets: list[str] | None, want: int
) -> None:
    assert jobs_expected_to_succeed(_js(operator, targets).model()) == want


@pytest.mark.parametrize(
    ("operator", "targets", "jobs", "want"),
    [
        pytest.param("All", None, [done("a")], False, id="success policy all: one of four done"),
        pytest.param(
            "All",
            None,
            [done("a"), done("b"), done("b", 1), done("b", 2)],
            True,
            id="success policy all: every job done",
        ),
        pytest.param(
            "All",
            ["b"],
            [done("b"), done("b", 1), done("b", 2)],
            True,
            id="success policy all with targets: every targeted job done",
        ),
        pytest.param(
            "All",
            ["b"],
            [done("a"), done("b")],
            False,
            id="success policy all with targets: not yet",
        ),
        pytest.param(
            "Any", ["b"], [done("b", 2)], True, id="success policy any with target: one job done"
        ),
        pytest.param(
            "Any", ["b"], [done("a")], False, id="success policy any with target: other rjob done"
        ),
        pytest.param("Any", None, [done("a")], True, id="success policy any without target"),
    ],
)
def test_success_policy_met(
    operator: str, targets: list[str] | None, jobs: list[ChildJob], want: bool
) -> None:
    assert success_policy_met(_js(operator, targets).model(), jobs) is want
