"""Job classification (upstream TestIsJobFinished and getChildJobs)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from jobset_infra.api import constants as c
from jobset_infra.controller.core.classify import classify_child_jobs, job_failure, job_succeeded
from jobset_infra.controller.core.types import ChildJob
from jobset_infra.testing.jobs import JobBuilder, job_from, make_job

T = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("job", "want_succeeded", "want_failed"),
    [
        pytest.param(make_job("js").completed(), True, False, id="succeeded"),
        pytest.param(make_job("js").failed(at=T), False, True, id="failed"),
        pytest.param(make_job("js").ready(), False, False, id="active"),
        pytest.param(make_job("js").suspend().suspended_condition(), False, False, id="suspended"),
        pytest.param(
            make_job("js").failure_target(at=T),
            False,
            True,
            id="failure target counts as failed (upstream 979 fixed)",
        ),
    ],
)
def test_is_job_finished(job: JobBuilder, want_succeeded: bool, want_failed: bool) -> None:
    view = job.view()
    assert job_succeeded(view) is want_succeeded
    assert (job_failure(view) is not None) is want_failed


def _names(jobs: tuple[ChildJob, ...]) -> list[str]:
    return [j.name for j in jobs]


def test_classification_by_attempt_and_outcome() -> None:
    jobs = [
        make_job("js", rjob="a", index=0, restart_attempt=1).ready().view(),
        make_job("js", rjob="a", index=1, restart_attempt=1).completed().view(),
        make_job("js", rjob="a", index=2, restart_attempt=1).failed(at=T).view(),
        make_job("js", rjob="a", index=3, restart_attempt=0).failed(at=T).view(),
        make_job("js", rjob="b", index=0, restart_attempt=1, jobset_uid="other").view(),
        make_job("js", rjob="b", index=1, restart_attempt=1)
        .label("jobset.sigs.k8s.io/restart-attempt", "x")
        .view(),
    ]
    got = classify_child_jobs(jobs, "jobset-uid", restarts=1)
    assert _names(got.active) == ["js-a-0"]
    assert _names(got.successful) == ["js-a-1"]
    assert _names(got.failed) == ["js-a-2"]
    assert _names(got.previous) == ["js-a-3", "js-b-1"]


@pytest.mark.parametrize(
    ("job_attempt", "targets", "want_previous"),
    [
        pytest.param(0, {"a": [0, 1]}, True, id="job restart attempt below its target is previous"),
        pytest.param(1, {"a": [0, 1]}, False, id="job restart attempt at its target is current"),
        pytest.param(
            None, {"a": [0, 1]}, False, id="missing job restart attempt label stays current"
        ),
        pytest.param(0, {"a": [0]}, False, id="index beyond the targets stays current"),
    ],
)
def test_classification_with_job_restarts(
    job_attempt: int | None, targets: dict[str, list[int]], want_previous: bool
) -> None:
    builder = make_job("js", rjob="a", index=1)
    if job_attempt is not None:
        builder.job_restart_attempt(job_attempt)
    got = classify_child_jobs([builder.view()], "jobset-uid", restarts=0, job_restarts=targets)
    assert bool(got.previous) is want_previous


_LATER = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
_TARGET, _FAILED = c.JOB_CONDITION_FAILURE_TARGET, c.JOB_CONDITION_FAILED


@pytest.mark.parametrize(
    ("job", "want_reason", "want_message", "want_since"),
    [
        pytest.param(
            make_job("js").condition(_TARGET, "PodFailurePolicy", "pod failed", T)
            .condition(_FAILED, "BackoffLimitExceeded", "backoff", _LATER),
            "PodFailurePolicy", "pod failed", T,
            id="a FailureTarget with a reason describes the failure",
        ),
        pytest.param(
            make_job("js").condition(_TARGET, "", "", T)
            .condition(_FAILED, "PodFailurePolicy", "exit code 42", _LATER),
            "PodFailurePolicy", "exit code 42", T,
            id="a FailureTarget without a reason falls back to Failed's reason and message",
        ),
        pytest.param(
            make_job("js").condition(_TARGET, "", "target says", T)
            .condition(_FAILED, "DeadlineExceeded", "too slow", _LATER),
            "DeadlineExceeded", "too slow", T,
            id="a FailureTarget with only a message still takes Failed's reason and message",
        ),
        pytest.param(
            make_job("js").condition(_TARGET, "", "target says", T),
            "", "target says", T,
            id="a reasonless FailureTarget alone is all there is",
        ),
        pytest.param(
            make_job("js").condition(_FAILED, "BackoffLimitExceeded", "backoff", _LATER),
            "BackoffLimitExceeded", "backoff", _LATER,
            id="a Failed condition alone describes the failure",
        ),
    ],
)
def test_failure_reason_precedence(
    job: JobBuilder, want_reason: str, want_message: str, want_since: datetime
) -> None:
    failure = job_failure(job.view())
    assert failure is not None
    assert (failure.reason, failure.message, failure.since) == (
        want_reason, want_message, want_since
    )


def test_a_job_whose_labels_were_removed_counts_by_its_annotations() -> None:
    # The controller writes each key as a label and an annotation; a user may drop the labels.
    edited = (
        make_job("js", rjob="a", index=2, restart_attempt=1).ready()
        .annotation(c.RESTARTS_KEY, "1").annotation(c.REPLICATED_JOB_NAME_KEY, "a")
        .annotation(c.JOB_INDEX_KEY, "2").obj()
    )
    for key in (c.RESTARTS_KEY, c.REPLICATED_JOB_NAME_KEY, c.JOB_INDEX_KEY, c.JOBSET_NAME_KEY):
        del edited["metadata"]["labels"][key]
    view = job_from(edited).view()
    assert (view.rjob, view.restart_attempt, view.job_index) == ("a", 1, 2)
    got = classify_child_jobs([view], "jobset-uid", restarts=1)
    assert _names(got.active) == ["js-a-2"], "still this attempt's active Job, not a previous one"
