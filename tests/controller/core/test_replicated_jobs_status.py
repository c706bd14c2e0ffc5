"""replicatedJobsStatus (upstream TestCalculateReplicatedJobStatuses)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.controller.core.classify import classify_child_jobs
from jobset_infra.controller.core.replicated_jobs_status import (
    count_replicated_jobs,
    replicated_jobs_status,
)
from jobset_infra.testing.jobs import JobBuilder, make_job
from jobset_infra.testing.jobsets import make_jobset

T = datetime(2026, 1, 1, tzinfo=UTC)


def job(rjob: str, index: int, parallelism: int = 2) -> JobBuilder:
    return make_job("js", rjob=rjob, index=index, parallelism=parallelism)


def entry(
    name: str,
    *,
    ready: int = 0,
    succeeded: int = 0,
    failed: int = 0,
    active: int = 0,
    suspended: int = 0,
) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "succeeded": succeeded,
        "failed": failed,
        "active": active,
        "suspended": suspended,
    }


@pytest.mark.parametrize(
    ("jobs", "want"),
    [
        pytest.param(
            [job("a", 0).ready(), job("a", 1).active(2), job("b", 0).ready(1)],
            [entry("b", active=1), entry("a", ready=1, active=2)],
            id="partial jobs are ready, no succeeded jobs",
        ),
        pytest.param([], [entry("b"), entry("a")], id="no jobs created"),
        pytest.param(
            [job("a", 0).ready()],
            [entry("b"), entry("a", ready=1, active=1)],
            id="partial jobs created",
        ),
        pytest.param(
            [job("a", 0).completed(), job("b", 0).completed()],
            [entry("b", succeeded=1), entry("a", succeeded=1)],
            id="only succeeded jobs",
        ),
        pytest.param(
            [job("a", 0).failed(at=T), job("a", 1).failed(at=T)],
            [entry("b"), entry("a", failed=2)],
            id="only failed jobs",
        ),
        pytest.param(
            [job("a", 0).active(2), job("b", 0).active(1)],
            [entry("b", active=1), entry("a", active=1)],
            id="active jobs",
        ),
        pytest.param(
            [job("a", 0).suspend(), job("a", 1).suspend()],
            [entry("b"), entry("a", suspended=2)],
            id="suspended jobs",
        ),
        pytest.param(
            [job("a", 0, parallelism=4).parallelism(4, completions=2).ready(2)],
            [entry("b"), entry("a", ready=1, active=1)],
            id="ready needs min(parallelism, completions) pods",
        ),
        pytest.param(
            [job("zz", 0).ready()],
            [entry("b"), entry("a")],
            id="a job of an unknown replicated job is skipped",
        ),
    ],
)
def test_replicated_jobs_status(jobs: list[JobBuilder], want: list[dict[str, Any]]) -> None:
    spec = make_jobset("js").replicated_job("a", 2).replicated_job("b", 1).model().spec
    classified = classify_child_jobs([j.view() for j in jobs], "jobset-uid", restarts=0)
    counts = count_replicated_jobs(spec.replicated_jobs, classified)
    got = [s.to_dict() for s in replicated_jobs_status(counts)]
    assert got == want
