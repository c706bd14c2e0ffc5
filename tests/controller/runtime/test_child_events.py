"""Which child Job events wake their JobSet at once rather than after the batch period."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jobset_infra.controller.runtime.caches import (
    CachedJob,
    cache_job,
    newly_failed,
    only_counts_changed,
)
from jobset_infra.testing.jobs import JobBuilder, make_job

Step = Callable[[JobBuilder], JobBuilder]


def running(job: JobBuilder) -> JobBuilder:
    return job.started().ready()


def failing(job: JobBuilder) -> JobBuilder:
    return job.started().failure_target()


def failed(job: JobBuilder) -> JobBuilder:
    return job.started().failed()


def succeeded(job: JobBuilder) -> JobBuilder:
    return job.started().completed()


def cached(step: Step | None) -> CachedJob | None:
    return None if step is None else cache_job(step(make_job("js", rjob="a")).obj())


@pytest.mark.parametrize(
    ("old", "new", "wakes"),
    [
        pytest.param(running, failing, True, id="FailureTarget appearing wakes the JobSet"),
        pytest.param(running, failed, True, id="Failed appearing wakes the JobSet"),
        pytest.param(None, failed, True, id="a Job first seen failed wakes the JobSet"),
        pytest.param(failing, failed, False,
                     id="Failed after FailureTarget is no new failure: it batches"),
        pytest.param(failed, failed, False, id="another update of a failed Job batches"),
        pytest.param(failed, None, False, id="a failed Job deleted batches"),
        pytest.param(running, succeeded, False,
                     id="a success batches: a thousand at once would cost a pass each"),
        pytest.param(None, running, False, id="a new running Job batches"),
    ],
)
def test_only_a_new_failure_skips_the_batch_period(
    old: Step | None, new: Step | None, wakes: bool
) -> None:
    assert newly_failed(cached(old), cached(new)) is wakes


def _jobset(**status: object) -> dict[str, object]:
    return {"metadata": {"name": "js", "resourceVersion": "1"}, "spec": {"suspend": False},
            "status": {"restarts": 0, **status}}


@pytest.mark.parametrize(
    ("new", "batched"),
    [
        pytest.param(_jobset(replicatedJobsStatus=[{"name": "w", "ready": 3}]), True,
                     id="our write of the counts alone batches like a child event"),
        pytest.param(_jobset(restarts=1), False,
                     id="a counted restart wakes the JobSet at once (its deletes follow)"),
        pytest.param(_jobset(conditions=[{"type": "Completed", "status": "True"}]), False,
                     id="a new condition wakes the JobSet at once"),
        pytest.param({**_jobset(), "spec": {"suspend": True}}, False,
                     id="a spec change wakes the JobSet at once"),
    ],
)
def test_only_a_change_of_the_counts_is_batched(new: dict[str, object], batched: bool) -> None:
    old = _jobset(replicatedJobsStatus=[{"name": "w", "ready": 2}])
    new = {**new, "metadata": {"name": "js", "resourceVersion": "2"}}
    assert only_counts_changed(old, new) is batched
