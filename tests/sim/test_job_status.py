"""Job status writes the API server refuses (Kubernetes 1.31+), checked by the sim."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.sim.apiserver.errors import InvalidError
from jobset_infra.sim.apiserver.job_status import index_format_error, problems
from jobset_infra.sim.apiserver.store import Store, clone
from tests.sim.kube_objects import JOBS, job

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z"


def cond(*kinds: str) -> list[dict[str, str]]:
    return [{"type": k, "status": "True", "reason": "r", "message": "m"} for k in kinds]


def indexed(completions: int = 3) -> dict[str, Any]:
    body = job("j")
    body["spec"].update(completionMode="Indexed", completions=completions,
                        parallelism=completions)
    return body


RUNNING = {"startTime": T0, "active": 1, "ready": 1}
COMPLETE = {"startTime": T0, "completionTime": T1, "succeeded": 1,
            "conditions": cond("SuccessCriteriaMet", "Complete")}
FAILED = {"startTime": T0, "failed": 1, "conditions": cond("FailureTarget", "Failed")}


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param(RUNNING, COMPLETE, [], id="the job controller's completion is accepted"),
        pytest.param(RUNNING, FAILED, [], id="the job controller's failure is accepted"),
        pytest.param(RUNNING, {**COMPLETE, "completionTime": None},
                     ["status.completionTime: Required value: completionTime is required for "
                      "Complete jobs"], id="Complete needs completionTime"),
        pytest.param(RUNNING, {**COMPLETE, "conditions": cond("Complete")},
                     ["status.conditions: Invalid value: cannot set Complete=True condition "
                      "without the SuccessCriteriaMet=true condition"],
                     id="Complete needs SuccessCriteriaMet"),
        pytest.param(RUNNING, {**FAILED, "conditions": cond("Failed")},
                     ["status.conditions: Invalid value: cannot set Failed=True condition "
                      "without the FailureTarget=true condition"],
                     id="Failed needs FailureTarget"),
        pytest.param({"active": 1}, {**COMPLETE, "startTime": None},
                     ["status.startTime: Required value: startTime is required for finished "
                      "job"], id="a finished job has a start time"),
        pytest.param(RUNNING, {**COMPLETE, "active": 2},
                     ["status.active: Invalid value: 2: active>0 is invalid for finished job"],
                     id="a finished job has no active pods"),
        pytest.param(RUNNING, {**RUNNING, "completionTime": T1},
                     [f'status.completionTime: Invalid value: "{T1}": cannot set completionTime '
                      "when there is no Complete=True condition"],
                     id="completionTime only with Complete"),
        pytest.param(RUNNING, {**COMPLETE, "completionTime": "2025-12-31T00:00:00Z"},
                     ['status.completionTime: Invalid value: "2025-12-31T00:00:00Z": '
                      "completionTime cannot be set before startTime"],
                     id="completion after start"),
        pytest.param(RUNNING, {**RUNNING, "ready": 2},
                     ["status.ready: Invalid value: 2: cannot set more ready pods than active"],
                     id="no more ready than active"),
        pytest.param(RUNNING, {**RUNNING, "terminating": -1},
                     ["status.terminating: Invalid value: -1: must be greater than or equal to 0"],
                     id="counters are not negative"),
        pytest.param(FAILED, RUNNING,
                     ["status.conditions: Invalid value: cannot disable the terminal Failed=True "
                      "condition",
                      "status.conditions: Invalid value: cannot disable the terminal "
                      "FailureTarget=True condition",
                      "status.failed: Invalid value: 0: cannot decrease the failed counter"],
                     id="a failed job stays failed"),
        pytest.param(COMPLETE, {**COMPLETE, "completionTime": "2026-01-01T00:06:00Z"},
                     ['status.completionTime: Invalid value: "2026-01-01T00:06:00Z": '
                      "completionTime cannot be mutated"], id="completionTime is set once"),
        pytest.param(RUNNING, {**RUNNING, "startTime": None},
                     ["status.startTime: Required value: startTime cannot be removed for "
                      "unsuspended job"], id="startTime stays while the job runs"),
        pytest.param({**RUNNING, "completedIndexes": "0"}, RUNNING, [],
                     id="a change the rules do not read is not checked by them"),
    ],
)
def test_job_status_writes_are_checked_like_the_api_server(
    old: dict[str, Any], new: dict[str, Any], want: list[str],
) -> None:
    before = {**job("j"), "status": old}
    after = {**job("j"), "status": {k: v for k, v in new.items() if v is not None}}
    assert [f"{c['field']}: {c['message']}" for c in problems(after, before)] == want


def test_clearing_start_time_is_allowed_while_the_job_is_suspended() -> None:
    before = {**job("j", suspend=True), "status": {"startTime": T0}}
    assert problems({**job("j", suspend=True), "status": {}}, before) == []


@pytest.mark.parametrize(
    ("indexes", "want"),
    [
        pytest.param("", None, id="empty"),
        pytest.param("0,1-2", None, id="a valid list"),
        pytest.param("0-3", 'too large index: "3"', id="past completions"),
        pytest.param("2,1", "non-increasing order, previous: 2, current: 1", id="out of order"),
        pytest.param("1-1", "non-increasing order, previous: 1, current: 1", id="empty range"),
        pytest.param("a", 'cannot convert string to integer for index: "a"', id="not a number"),
    ],
)
def test_completed_indexes_format(indexes: str, want: str | None) -> None:
    assert index_format_error(indexes, 3) == want


def test_the_store_refuses_an_invalid_status_write_with_422() -> None:
    store = Store()
    created = store.create(JOBS, indexed(), "default")
    bad = clone(created) | {"status": {"completedIndexes": "0-5"}}
    with pytest.raises(InvalidError) as err:
        store.update_status(JOBS, bad)
    assert err.value.code == 422
    assert err.value.message == ('Job.batch "j" is invalid: status.completedIndexes: Invalid '
                                 'value: "0-5": error parsing completedIndexes: too large '
                                 'index: "5"')
    store.update_status(JOBS, clone(created) | {"status": {"completedIndexes": "0-2"}})
