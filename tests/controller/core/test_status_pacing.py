"""Status pacing (core/status_pacing.py): a large JobSet's count-only status writes at most once
an interval; everything else in the status, and a small JobSet's counts, at once. Which write is
count-only is the pass's own verdict (`UpdateStatus.counts_only`, core/draft.py), tested here on
the core's reconcile."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core.status_pacing import (
    MAX_INTERVAL,
    PACED_CHILDREN,
    interval,
    paced,
)
from jobset_infra.controller.core.types import (
    Action,
    CoreConfig,
    EmitEvent,
    ObjectRef,
    Plan,
    RequeueAfter,
    UpdateStatus,
)
from jobset_infra.testing.jobs import JobBuilder
from jobset_infra.testing.jobsets import make_jobset
from tests.controller.core.cluster import State, settle, start, step

LARGE = 1000
COUNTS = UpdateStatus("ns", "js", "7", {"restarts": 0}, counts_only=True)
OTHER = UpdateStatus("ns", "js", "7", {"restarts": 1}, counts_only=False)


def _event() -> EmitEvent:
    about = ObjectRef("JobSet", "jobset.x-k8s.io/v1alpha2", "ns", "js", "u")
    return EmitEvent("Normal", "AllJobsCompleted", "done", about)


@pytest.mark.parametrize(("actions", "children", "since", "held"), [
    pytest.param((COUNTS,), LARGE, 1.0, True,
                 id="a count-only write of a large JobSet 1 s after the last write: held"),
    pytest.param((COUNTS,), LARGE, MAX_INTERVAL, False, id="the interval is over: written"),
    pytest.param((COUNTS,), LARGE, None, False, id="no status write of ours yet: written"),
    pytest.param((COUNTS,), PACED_CHILDREN, 0.0, False,
                 id="a JobSet of 250 children is never paced"),
    pytest.param((OTHER,), LARGE, 0.1, False, id="any other status change is written at once"),
    pytest.param((COUNTS, _event()), LARGE, 0.1, False,
                 id="a write an event goes with is written at once"),
    pytest.param((COUNTS, RequeueAfter(30.0)), LARGE, 1.0, True,
                 id="a requeue beside it stays, and the earlier one wins"),
    pytest.param((RequeueAfter(3.0),), LARGE, 0.1, False,
                 id="a plan without a status write is left alone"),
])
def test_which_status_writes_are_held(
    actions: tuple[Action, ...], children: int, since: float | None, held: bool,
) -> None:
    plan = Plan(actions)
    out = paced(plan, children, since)
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


@given(counts_only=st.booleans(), children=st.integers(0, 5000),
       since=st.none() | st.floats(0, 10))
def test_property_only_a_large_jobsets_early_count_only_write_is_held_and_comes_back_in_time(
    counts_only: bool, children: int, since: float | None
) -> None:
    plan = Plan((UpdateStatus("ns", "js", "7", {}, counts_only),))
    out = paced(plan, children, since)
    if counts_only and since is not None and since < interval(children):
        assert out == Plan((RequeueAfter(interval(children) - since),))
        assert 0 < interval(children) - since <= MAX_INTERVAL
    else:
        assert out == plan


# --- the pass's verdict: which status write is count-only ------------------------------------

RESTART_JOB = CoreConfig(gates=FeatureGates.of({Feature.RESTART_JOB: True}))


def _running(config: CoreConfig | None = None, *, restart_job: bool = False) -> State:
    builder = (make_jobset("js", "ns").replicated_job("w", replicas=3)
               .failure_policy(max_restarts=3))
    if restart_job:
        builder.rule("RestartJob")
    return settle(start(builder.obj()), config=config)


@pytest.mark.parametrize(("change", "counts_only"), [
    pytest.param(lambda j: j.ready(), True, id="one more Job ready: counts only"),
    pytest.param(lambda j: j.completed(), True,
                 id="one Job succeeded, the others still running: counts only"),
    pytest.param(lambda j: j.failed(), False,
                 id="a Job failed: the restart is written at once"),
])
def test_the_pass_says_whether_its_status_write_only_moves_counts(
    change: Callable[[JobBuilder], JobBuilder], counts_only: bool
) -> None:
    state = _running()
    [first, *_] = sorted(state.jobs)
    _, plan = step(state.with_job(first, change))
    update = plan.status_update
    assert update is not None and update.counts_only is counts_only


def test_a_jobs_own_restart_count_is_no_count_only_write() -> None:
    # RestartJob keeps each Job's restarts in the replicated job's status entry: state that must
    # never wait, though it sits beside the counts.
    state = _running(RESTART_JOB, restart_job=True)
    [first, *_] = sorted(state.jobs)
    _, plan = step(state.with_job(first, lambda j: j.failed()), config=RESTART_JOB)
    update = plan.status_update
    assert update is not None and update.status["restarts"] == 0  # no JobSet restart
    assert update.status["replicatedJobsStatus"][0]["jobRestarts"] == [1, 0, 0]
    assert not update.counts_only
