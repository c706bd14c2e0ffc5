"""Status pacing (core/status_pacing.py): a large JobSet's count-only status writes at most once
an interval; everything else in the status, and a small JobSet's counts, at once."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.controller.core.status_pacing import (
    MAX_INTERVAL,
    PACED_CHILDREN,
    counts_only,
    interval,
    paced,
)
from jobset_infra.controller.core.types import (
    Action,
    EmitEvent,
    ObjectRef,
    Plan,
    RequeueAfter,
    UpdateStatus,
)

LARGE = 1000


def _status(ready: int, **other: Any) -> dict[str, Any]:
    counts = {"name": "w", "ready": ready, "active": 1000, "succeeded": 0, "failed": 0,
              "suspended": 0}
    return {"restarts": 0, "replicatedJobsStatus": [counts], **other}


def _with_job_restarts(status: dict[str, Any]) -> dict[str, Any]:
    [entry] = status["replicatedJobsStatus"]
    return {**status, "replicatedJobsStatus": [{**entry, "jobRestarts": [0, 1]}]}


def _write(status: dict[str, Any]) -> UpdateStatus:
    return UpdateStatus("ns", "js", "7", status)


def _event() -> EmitEvent:
    about = ObjectRef("JobSet", "jobset.x-k8s.io/v1alpha2", "ns", "js", "u")
    return EmitEvent("Normal", "AllJobsCompleted", "done", about)


@pytest.mark.parametrize(("stored", "actions", "children", "since", "held"), [
    pytest.param(_status(10), (_write(_status(11)),), LARGE, 1.0, True,
                 id="one more Job ready in a large JobSet, 1 s after the last write: held"),
    pytest.param({"replicatedJobsStatus": _status(10)["replicatedJobsStatus"]},
                 (_write(_status(11, conditions=[])),), LARGE, 1.0, True,
                 id="empty conditions and zero restarts are no change beside counts"),
    pytest.param(_status(10), (_write(_status(11, restarts=0)),), LARGE, 1.0, True,
                 id="restarts written as before"),
    pytest.param(_status(10), (_write(_with_job_restarts(_status(11))),), LARGE, 1.0, False,
                 id="a Job's restart count (RestartJob's state) is written at once"),
    pytest.param(_status(10), (_write({**_status(11), "replicatedJobsStatus": []}),), LARGE,
                 1.0, False, id="a replicated job's entry gone is written at once"),
    pytest.param(_status(10), (_write(_status(11)),), LARGE, MAX_INTERVAL, False,
                 id="the interval is over: written"),
    pytest.param(_status(10), (_write(_status(11)),), LARGE, None, False,
                 id="no status write of ours yet: written"),
    pytest.param(_status(10), (_write(_status(11)),), PACED_CHILDREN, 0.0, False,
                 id="a JobSet of 250 children is never paced"),
    pytest.param(_status(10), (_write(_status(11, restarts=1)),), LARGE, 0.1, False,
                 id="a restart is written at once"),
    pytest.param(_status(10), (_write(_status(10, terminalState="Completed")),), LARGE, 0.1,
                 False, id="the terminal state is written at once"),
    pytest.param(_status(10), (_write(_status(11, conditions=[{"type": "Failed"}])),), LARGE,
                 0.1, False, id="a new condition is written at once"),
    pytest.param(_status(10), (_write(_status(11)), _event()), LARGE, 0.1, False,
                 id="a write an event goes with is written at once"),
    pytest.param(_status(10), (_write(_status(11)), RequeueAfter(30.0)), LARGE, 1.0, True,
                 id="a requeue beside it stays, and the earlier one wins"),
    pytest.param(_status(10), (RequeueAfter(3.0),), LARGE, 0.1, False,
                 id="a plan without a status write is left alone"),
])
def test_which_status_writes_are_held(
    stored: dict[str, Any], actions: tuple[Action, ...], children: int, since: float | None,
    held: bool,
) -> None:
    plan = Plan(actions)
    out = paced(plan, stored, children, since)
    if not held:
        assert out == plan
        return
    assert out.status_update is None
    assert since is not None
    assert out.requeue_after == pytest.approx(min(interval(children) - since,
                                                  plan.requeue_after or MAX_INTERVAL))
    assert [a for a in out.actions if not isinstance(a, RequeueAfter)] == [
        a for a in plan.actions if not isinstance(a, UpdateStatus | RequeueAfter)]


def test_the_interval_grows_with_the_children_up_to_five_seconds() -> None:
    assert interval(10) == interval(PACED_CHILDREN) == 0.0
    assert interval(PACED_CHILDREN + 50) == pytest.approx(1.5)
    assert interval(1000) == interval(100_000) == MAX_INTERVAL


counts = st.fixed_dictionaries({"name": st.just("w"), "ready": st.integers(0, 5),
                                "active": st.integers(0, 5)},
                               optional={"jobRestarts": st.lists(st.integers(0, 2), max_size=2)})
statuses = st.fixed_dictionaries({
    "replicatedJobsStatus": st.lists(counts, max_size=2),
    "restarts": st.integers(0, 2),
}, optional={"terminalState": st.sampled_from(["Completed", "Failed"]),
             "conditions": st.lists(st.fixed_dictionaries({"type": st.sampled_from(
                 ["Completed", "Failed", "Suspended"])}), max_size=2)})


@given(stored=statuses, written=statuses, children=st.integers(0, 5000),
       since=st.none() | st.floats(0, 10))
def test_property_only_a_large_jobsets_early_count_only_write_is_held_and_comes_back_in_time(
    stored: dict[str, Any], written: dict[str, Any], children: int, since: float | None
) -> None:
    plan = Plan((_write(written),))
    out = paced(plan, stored, children, since)
    early = since is not None and since < interval(children)
    if early and counts_only(stored, written):
        assert out == Plan((RequeueAfter(interval(children) - since),))
        assert 0 < interval(children) - since <= MAX_INTERVAL
    else:
        assert out == plan
