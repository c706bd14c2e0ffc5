"""Recovery metrics: a JobSet's phases, its failures by cause and the time to run again
(core/recovery.py, pure, and the runtime's tracker over a scripted JobSet's life)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api import resilience as res
from jobset_infra.api.resilience import Cause
from jobset_infra.controller.core.child_tally import ChildTally, TallyBasis
from jobset_infra.controller.core.recovery import Phase, failures_of, phase_of
from jobset_infra.controller.core.types import Plan, RecordDomainFailure
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.recovery import RecoveryTracker
from jobset_infra.placement.pool_health import DomainFailure
from jobset_infra.testing.jobs import make_job

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def jobset(suspend: bool = False, restarts: int = 0, done: str = "") -> dict[str, Any]:
    conditions = [{"type": done, "status": "True"}] if done else []
    return {"metadata": {"name": "js", "uid": "jobset-uid"},
            "spec": {"suspend": suspend, "replicatedJobs": [{"name": "w", "replicas": 2}]},
            "status": {"restarts": restarts, "conditions": conditions}}


def job(index: int, ready: bool = True, attempt: int = 0, failed_at: datetime | None = None,
        reason: str = "BackoffLimitExceeded") -> Any:
    builder = make_job("js", rjob="w", index=index, parallelism=2, restart_attempt=attempt)
    builder = builder.uid(f"u{index}-{attempt}").started()
    if failed_at is not None:
        builder = builder.failed(at=failed_at, reason=reason)
    elif ready:
        builder = builder.active().ready()
    return builder.view()


@pytest.mark.parametrize(
    ("manifest", "jobs", "want"),
    [
        pytest.param(jobset(suspend=True), [], Phase.QUEUED, id="suspended is queued"),
        pytest.param(jobset(), [job(0)], Phase.ADMITTED,
                     id="resumed with a Job missing is admitted, not running"),
        pytest.param(jobset(), [job(0), job(1, ready=False)], Phase.ADMITTED,
                     id="a Job whose pods are not all ready keeps it admitted"),
        pytest.param(jobset(), [job(0), job(1)], Phase.RUNNING, id="every Job ready is running"),
        pytest.param(jobset(restarts=1), [job(0), job(1)], Phase.ADMITTED,
                     id="ready Jobs of an earlier attempt do not count"),
        pytest.param(jobset(), [job(0), job(1, failed_at=T0)], Phase.ADMITTED,
                     id="a failing Job is not running"),
        pytest.param(jobset(done="Completed"), [], Phase.FINISHED, id="completed is finished"),
    ],
)
def test_phase(manifest: dict[str, Any], jobs: list[Any], want: Phase) -> None:
    assert phase_of(manifest, jobs) is want


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["spec", "status", "replicatedJobs", "replicas", "suspend", "restarts",
                         "conditions", "type", "status", "name"]), inner, max_size=4),
    max_leaves=12)


@given(st.dictionaries(st.sampled_from(["spec", "status", "metadata"]), JSON, max_size=3))
def test_any_stored_shape_gets_a_phase_and_never_an_error(manifest: dict[str, Any]) -> None:
    """The stored JobSet may be malformed (replicas "two": a CI run crashed every reconcile of
    such a JobSet here, before its InvalidSpec could be written)."""
    assert phase_of(manifest, [job(0)]) in Phase


@pytest.mark.parametrize("replicas", [
    pytest.param("two", id="a replica count in words is never running"),
    pytest.param(-1, id="a negative replica count is never running"),
    pytest.param(True, id="a boolean replica count is never running"),
])
def test_a_malformed_replica_count_is_admitted_not_running(replicas: object) -> None:
    manifest = {"spec": {"replicatedJobs": [{"name": "w", "replicas": replicas}]}}
    assert phase_of(manifest, [job(0), job(1)]) is Phase.ADMITTED


def test_a_failure_takes_the_cause_recorded_against_its_pool_else_its_condition() -> None:
    pooled, plain = job(0, failed_at=T0), job(1, failed_at=T0, reason="DeadlineExceeded")
    plan = Plan((RecordDomainFailure(DomainFailure("k", "p-0", Cause.NODE_NOT_READY, T0,
                                                   "default/js-w-0", pooled.uid)),))
    found = failures_of([pooled, plain, job(2)], plan)
    assert [(f.job_uid, f.cause) for f in found] == [
        (pooled.uid, Cause.NODE_NOT_READY), (plain.uid, Cause.DEADLINE_EXCEEDED)]
    assert found[0].at == T0


@pytest.mark.parametrize("kept", [
    pytest.param(False, id="walking the Jobs"),
    pytest.param(True, id="from the tally the controller keeps (the same figures)"),
])
def test_the_tracker_measures_phases_and_the_time_to_run_again_by_cause(kept: bool) -> None:
    metrics = Metrics()
    at = [T0 + timedelta(seconds=s) for s in (0, 30, 40, 100, 101, 160, 175, 200)]
    tallies: dict[str, ChildTally] = {}
    # the scrape: 25 s after the last look
    tracker = RecoveryTracker(metrics, lambda: at[7], tallies if kept else None)

    def observe(manifest: dict[str, Any], jobs: list[Any], plan: Plan, now: datetime) -> None:
        if kept:  # as the controller keeps it: the children's events applied as they come
            basis = TallyBasis.of("jobset-uid", manifest["status"]["restarts"], None, "js")
            tallies["jobset-uid"] = ChildTally(basis, jobs)
        tracker.observe("ns/js", manifest, jobs, plan, now)

    observe(jobset(suspend=True), [], Plan(), at[0])
    observe(jobset(), [], Plan(), at[1])  # 30 s queued
    observe(jobset(), [job(0), job(1)], Plan(), at[2])  # 10 s admitted
    failed = job(1, failed_at=at[3])
    domain = DomainFailure("k", "p-1", Cause.TPU_DEVICE_ERROR, at[3], "ns/js-w-1", failed.uid)
    plan = Plan((RecordDomainFailure(domain),))
    observe(jobset(), [job(0), failed], plan, at[4])  # 61 s running
    observe(jobset(), [job(0), failed], plan, at[4])  # seen once
    observe(jobset(restarts=1), [job(0, attempt=1)], Plan(), at[5])
    observe(jobset(restarts=1), [job(0, attempt=1), job(1, attempt=1)], Plan(), at[6])

    def sample(name: str, **labels: str) -> float:
        return metrics.sample(name, labels)

    cause = {"cause": Cause.TPU_DEVICE_ERROR.value}
    assert sample(f"{res.METRIC_RESTARTS_BY_CAUSE_TOTAL}", **cause) == 1
    assert sample(f"{res.METRIC_RECOVERY_SECONDS}_count", **cause) == 1
    assert sample(f"{res.METRIC_RECOVERY_SECONDS}_sum", **cause) == 75  # 100 s -> 175 s
    assert sample(f"{res.METRIC_RECOVERY_SECONDS}_bucket", le="60.0", **cause) == 0
    assert sample(f"{res.METRIC_RECOVERY_SECONDS}_bucket", le="120.0", **cause) == 1
    assert sample(res.METRIC_PHASE_SECONDS_TOTAL, phase="queued") == 30
    assert sample(res.METRIC_PHASE_SECONDS_TOTAL, phase="running") == 61 + 25  # open so far
    assert sample(res.METRIC_PHASE_SECONDS_TOTAL, phase="admitted") == 10 + 59 + 15
    # every cause's series exists before anything fails (bounded labels)
    assert f'{res.METRIC_RECOVERY_SECONDS}_count{{cause="user_exit"}} 0.0' in \
        metrics.exposition().decode()


def restarting(since: datetime, restarts: int = 1) -> dict[str, Any]:
    manifest = jobset(restarts=restarts)
    manifest["metadata"]["namespace"] = "ns"
    manifest["status"]["conditions"] = [{
        "type": "RestartingJobSet", "status": "True", "reason": "FailurePolicyRuleRestart",
        "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ")}]
    return manifest


def _ledger(job: str, at: datetime, cause: Cause = Cause.NODE_NOT_READY) -> DomainFailure:
    return DomainFailure("k", "p-1", cause, at, job, f"uid-{job}-{at.second}")


@pytest.mark.parametrize(("manifest", "ledger", "want"), [
    pytest.param(restarting(T0), [_ledger("ns/js-w-1", T0 - timedelta(seconds=2))],
                 (T0, Cause.NODE_NOT_READY),
                 id="restarting: since the condition, the cause its Job's ledger entry gives"),
    pytest.param(restarting(T0), [], (T0, Cause.UNKNOWN),
                 id="nothing in the ledger (a program's exit is not kept): unknown"),
    pytest.param(restarting(T0), [_ledger("ns/js-w-1", T0 - timedelta(hours=1)),
                                  _ledger("ns/jsx-w-1", T0, Cause.TPU_DEVICE_ERROR),
                                  _ledger("ns/js-w-0", T0 + timedelta(minutes=9))],
                 (T0, Cause.UNKNOWN),
                 id="an old failure, another JobSet's, a later one: not this recovery's cause"),
    pytest.param(jobset(restarts=1), [_ledger("ns/js-w-1", T0)], None,
                 id="not restarting: no recovery under way"),
])
def test_a_recovery_under_way_is_read_back_from_cluster_state(
    manifest: dict[str, Any], ledger: list[DomainFailure], want: tuple[datetime, Cause] | None
) -> None:
    from jobset_infra.controller.core.recovery import resumed_recovery

    found = resumed_recovery(manifest, ledger)
    assert (None if found is None else (found.at, found.cause)) == want


def test_a_new_leader_measures_the_recovery_the_old_one_saw_start_without_counting_it_again(
) -> None:
    """The old leader restarted the JobSet at T0 and died; this process (a new leader, or the
    same one restarted) first sees it 20 s later, still restarting, and it runs again at 45 s."""
    metrics = Metrics()
    ledger = [_ledger("ns/js-w-1", T0 - timedelta(seconds=1), Cause.TPU_DEVICE_ERROR)]
    tracker = RecoveryTracker(metrics, lambda: T0, ledger=lambda: ledger)
    manifest = restarting(T0)
    tracker.observe("ns/js", manifest, [job(0, attempt=1)], Plan(),
                    T0 + timedelta(seconds=20))
    tracker.observe("ns/js", manifest, [job(0, attempt=1), job(1, attempt=1)], Plan(),
                    T0 + timedelta(seconds=45))
    cause = {"cause": Cause.TPU_DEVICE_ERROR.value}
    assert metrics.sample(f"{res.METRIC_RECOVERY_SECONDS}_sum", cause) == 45
    assert metrics.sample(f"{res.METRIC_RECOVERY_SECONDS}_count", cause) == 1
    assert metrics.sample(res.METRIC_RESTARTS_BY_CAUSE_TOTAL, cause) == 0  # the old one did
