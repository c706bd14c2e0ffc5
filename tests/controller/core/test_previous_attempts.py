"""previous_attempts.py: a large JobSet's previous attempt deleted with one request."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.controller.core.job_view import ChildJob
from jobset_infra.controller.core.previous_attempts import (
    COLLECTION_MIN_JOBS,
    previous_attempt_deletes,
    previous_attempts_selector,
)
from jobset_infra.controller.core.types import DeleteJob, DeleteJobs
from jobset_infra.sim.apiserver.selectors import parse_label_selector

UID = "3f2c-js-uid"
NOW = datetime(2026, 12, 8, tzinfo=UTC)


def job(index: int, attempt: str | None = "0", owner: str | None = UID, *,
        deleting: bool = False, annotated: bool = False) -> ChildJob:
    """A Job of the JobSet's replicated job `a`, labelled with its attempt and owner."""
    labels = {c.JOB_INDEX_KEY: str(index), c.REPLICATED_JOB_NAME_KEY: "a"}
    annotations: dict[str, str] = {}
    if attempt is not None:
        (annotations if annotated else labels)[c.RESTARTS_KEY] = attempt
    if owner is not None:
        labels[c.JOBSET_UID_KEY] = owner
    return ChildJob(f"js-a-{index}", "ns", f"uid-{index}-{attempt}", controller_uid=UID,
                    labels=labels, annotations=annotations,
                    deletion_timestamp=NOW if deleting else None)


def attempt_jobs(n: int, attempt: str = "0") -> list[ChildJob]:
    return [job(i, attempt) for i in range(n)]


def test_the_selector_names_the_jobsets_uid_and_the_attempts() -> None:
    assert previous_attempts_selector(UID, [0, 2]) == (
        f"{c.JOBSET_UID_KEY}={UID},{c.RESTARTS_KEY} in (0,2)")


def test_a_large_previous_attempt_is_deleted_in_one_request() -> None:
    jobs = attempt_jobs(COLLECTION_MIN_JOBS)
    [collection] = previous_attempt_deletes(jobs, UID, restarts=1)
    assert isinstance(collection, DeleteJobs)
    assert collection.uids == tuple(j.uid for j in jobs)
    assert (collection.namespace, collection.propagation) == ("ns", "Foreground")
    assert collection.label_selector == previous_attempts_selector(UID, [0])


@pytest.mark.parametrize(("jobs", "singles"), [
    pytest.param(attempt_jobs(COLLECTION_MIN_JOBS - 1), COLLECTION_MIN_JOBS - 1,
                 id="below the minimum each Job is deleted alone, as upstream does"),
    pytest.param([*attempt_jobs(COLLECTION_MIN_JOBS - 1), job(99, "0", owner=None)],
                 COLLECTION_MIN_JOBS,
                 id="a Job without the uid label does not count towards the minimum"),
    pytest.param([*attempt_jobs(COLLECTION_MIN_JOBS - 1), job(99, "0", deleting=True)],
                 COLLECTION_MIN_JOBS - 1,
                 id="a Job already being deleted is not deleted again nor counted"),
])
def test_per_job_deletes(jobs: list[ChildJob], singles: int) -> None:
    deletes = previous_attempt_deletes(jobs, UID, restarts=1)
    assert all(isinstance(d, DeleteJob) for d in deletes)
    assert len(deletes) == singles


@pytest.mark.parametrize("odd", [
    pytest.param(job(99, None), id="a Job without an attempt is deleted alone"),
    pytest.param(job(99, "0", annotated=True), id="an attempt only annotated is deleted alone"),
    pytest.param(job(99, "00"), id="an attempt label not in its plain form is deleted alone"),
    pytest.param(job(99, "0", owner="another-uid"), id="another uid's label is deleted alone"),
    pytest.param(job(99, "1"), id="a Job of the current attempt (RestartJob) is deleted alone"),
])
def test_a_job_the_selector_would_miss_is_deleted_beside_the_collection(odd: ChildJob) -> None:
    jobs = attempt_jobs(COLLECTION_MIN_JOBS)
    collection, single = previous_attempt_deletes([*jobs, odd], UID, restarts=1)
    assert isinstance(collection, DeleteJobs) and odd.uid not in collection.uids
    assert single == DeleteJob("ns", odd.name, odd.uid, why="previous restart attempt")


def _labels(j: ChildJob) -> dict[str, str]:
    return dict(j.labels)


@given(st.lists(st.tuples(st.sampled_from([None, "0", "1", "2", "01"]),
                          st.sampled_from([UID, "other", None]), st.booleans()),
                min_size=0, max_size=3 * COLLECTION_MIN_JOBS))
def test_every_job_to_delete_is_deleted_once_and_the_selector_picks_only_older_attempts(
        shapes: list[tuple[str | None, str | None, bool]]) -> None:
    restarts = 2
    jobs = [job(i, attempt, owner, deleting=deleting)
            for i, (attempt, owner, deleting) in enumerate(shapes)]
    deletes = previous_attempt_deletes(jobs, UID, restarts)
    uids = [d.uid for d in deletes if isinstance(d, DeleteJob)]
    uids += [u for d in deletes if isinstance(d, DeleteJobs) for u in d.uids]
    assert sorted(uids) == sorted(j.uid for j in jobs if j.deletion_timestamp is None)
    for collection in (d for d in deletes if isinstance(d, DeleteJobs)):
        picks = parse_label_selector(collection.label_selector)
        assert picks is not None
        picked = {j.uid for j in jobs if picks({"metadata": {"labels": _labels(j)}})}
        assert set(collection.uids) <= picked  # the server deletes each Job it means
        # and nothing but older attempts of this JobSet (some already being deleted)
        assert all(j.labels.get(c.JOBSET_UID_KEY) == UID and j.restart_attempt is not None
                   and j.restart_attempt < restarts for j in jobs if j.uid in picked)
