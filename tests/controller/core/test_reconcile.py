"""Upstream's controller integration behaviours (test/integration/controller, reference §5.1),
expressed as step-by-step scenarios over `reconcile` and the pure test cluster.

Base fixture as upstream's `testJobSet`: `test-js` with `replicated-job-a` (1 replica) and
`replicated-job-b` (3 replicas), DNS hostnames on, success policy All.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core import reconcile
from jobset_infra.controller.core.previous_attempts import COLLECTION_MIN_JOBS
from jobset_infra.controller.core.types import (
    CoreConfig,
    CreateJob,
    CreateService,
    DeleteJob,
    DeleteJobs,
    DeleteJobSet,
    EmitEvent,
    IncrementMetric,
    Plan,
    RequeueAfter,
    UpdateJob,
)
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset
from tests.controller.core.cluster import T0, State, apply_plan, settle, start, step

A, B = "replicated-job-a", "replicated-job-b"
ALL_JOBS = ["test-js-replicated-job-a-0", *(f"test-js-replicated-job-b-{i}" for i in range(3))]


def base(name: str = "test-js") -> JobSetBuilder:
    return (
        make_jobset(name, "default")
        .replicated_job(A, replicas=1)
        .replicated_job(B, replicas=3)
        .network(enable_dns_hostnames=True)
        .success_policy("All")
    )


def created(builder: JobSetBuilder, config: CoreConfig | None = None) -> State:
    """The JobSet after its first passes: Jobs and Service exist."""
    return settle(start(builder.obj()), config=config)


def events(plan: Plan) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in plan.of_type(EmitEvent)]


# --------------------------------------------------------------------------- creation, success


def test_jobset_should_successfully_create_jobs() -> None:
    state = created(base())
    assert sorted(state.jobs) == ALL_JOBS
    assert all(j["spec"]["suspend"] is False for j in state.jobs.values())


def test_jobset_should_succeed_after_all_jobs_succeed() -> None:
    state = created(base()).with_jobs(lambda j: j.completed())
    state, plan = step(state)
    assert state.is_true(c.CONDITION_COMPLETED)
    assert state.status["terminalState"] == "Completed"
    assert state.rjob_status(B)["succeeded"] == 3
    assert state.rjob_status(A)["succeeded"] == 1
    assert events(plan) == [("Normal", "AllJobsCompleted", "jobset completed successfully")]
    assert plan.of_type(IncrementMetric) == (
        IncrementMetric(
            "jobset_completed_total", (("jobset_name", "test-js"), ("namespace", "default"))
        ),
    )
    assert reconcile(state.observed(), T0 + timedelta(hours=1)).is_empty


def test_jobset_should_ignore_jobs_with_same_owner_name_but_different_owner_uid() -> None:
    state = created(base())
    foreign = state.jobs["test-js-replicated-job-a-0"]
    foreign = {
        **foreign,
        "metadata": {
            **foreign["metadata"],
            "name": "foreign",
            "labels": {**foreign["metadata"]["labels"], c.REPLICATED_JOB_NAME_KEY: "unknown"},
            "ownerReferences": [{**foreign["metadata"]["ownerReferences"][0], "uid": "other"}],
        },
    }
    state = State(state.jobset, {**state.jobs, "foreign": foreign}, state.service)
    state = state.with_job("foreign", lambda j: j.failed())
    for name in ALL_JOBS:
        state = state.with_job(name, lambda j: j.completed())
    state, _ = step(state)
    assert state.is_true(c.CONDITION_COMPLETED)
    assert state.rjob_status(A)["failed"] == 0 and state.rjob_status(B)["failed"] == 0


def test_jobset_should_not_succeed_if_any_job_is_not_completed() -> None:
    state = created(base())
    for name in ALL_JOBS[:3]:
        state = state.with_job(name, lambda j: j.completed())
    state = state.with_job(ALL_JOBS[3], lambda j: j.ready())
    state = settle(state)
    assert not state.is_true(c.CONDITION_COMPLETED)
    assert state.rjob_status(B) | {} == {
        "name": B,
        "ready": 1,
        "succeeded": 2,
        "failed": 0,
        "active": 1,
        "suspended": 0,
    }


@pytest.mark.parametrize(
    ("operator", "targets", "complete", "want_completed"),
    [
        pytest.param(
            "All", [], [A], False, id="success policy 'all' with empty replicated jobs list: A only"
        ),
        pytest.param(
            "All",
            [],
            [A, B],
            True,
            id="success policy 'all' with empty replicated jobs list: A and B",
        ),
        pytest.param(
            "All", [B], [A], False, id="success policy 'all' with replicated jobs specified: A only"
        ),
        pytest.param(
            "All",
            [B],
            [B],
            True,
            id="success policy 'all' with replicated jobs specified: all of B",
        ),
        pytest.param(
            "Any",
            [B],
            ["test-js-replicated-job-b-1"],
            True,
            id="success policy 'any' with replicated job specified",
        ),
        pytest.param(
            "Any",
            [B],
            ["test-js-replicated-job-a-0"],
            False,
            id="success policy 'any' with replicated job specified: other rjob",
        ),
        pytest.param(
            "Any",
            [],
            ["test-js-replicated-job-a-0"],
            True,
            id="success policy 'any' without replicated job specified",
        ),
    ],
)
def test_success_policies(
    operator: str, targets: list[str], complete: list[str], want_completed: bool
) -> None:
    state = created(base().success_policy(operator, targets))
    for what in complete:
        if what in state.jobs:
            state = state.with_job(what, lambda j: j.completed())
        else:
            state = state.with_jobs(lambda j: j.completed(), rjob=what)
    state = settle(state)
    assert state.is_true(c.CONDITION_COMPLETED) is want_completed


def test_replicated_jobs_statuses_follow_ready_jobs() -> None:
    state = settle(created(base()).with_jobs(lambda j: j.ready()))
    assert state.rjob_status(B) == {
        "name": B,
        "ready": 3,
        "succeeded": 0,
        "failed": 0,
        "active": 3,
        "suspended": 0,
    }
    assert state.rjob_status(A) == {
        "name": A,
        "ready": 1,
        "succeeded": 0,
        "failed": 0,
        "active": 1,
        "suspended": 0,
    }
    assert [s["name"] for s in state.status["replicatedJobsStatus"]] == [B, A]


@pytest.mark.parametrize(
    "finish",
    [
        pytest.param(lambda j: j.completed(), id="active jobs are deleted after jobset succeeds"),
        pytest.param(lambda j: j.failed(), id="active jobs are deleted after jobset fails"),
    ],
)
def test_active_jobs_are_deleted_after_jobset_finishes(finish) -> None:  # type: ignore[no-untyped-def]
    state = created(base().success_policy("Any"))
    state = state.with_jobs(lambda j: j.ready()).with_job(ALL_JOBS[1], finish)
    state, _ = step(state)  # finishes
    state, plan = step(state)  # deletes the rest
    assert sorted(d.name for d in plan.of_type(DeleteJob)) == sorted(set(ALL_JOBS) - {ALL_JOBS[1]})
    assert all(d.propagation == "Foreground" for d in plan.of_type(DeleteJob))
    assert state.deleting() == sorted(set(ALL_JOBS) - {ALL_JOBS[1]})
    assert reconcile(state.observed(), T0).is_empty  # already deleting: not deleted again


# --------------------------------------------------------------------------- network


@pytest.mark.parametrize(
    ("finish", "want", "want_reason"),
    [
        pytest.param(
            lambda j: j.completed(),
            c.CONDITION_COMPLETED,
            c.ALL_JOBS_COMPLETED_REASON,
            id="jobset with DNS hostnames enabled should created 1 headless service per job "
            "and succeed when all jobs succeed (succeeds from first run)",
        ),
        pytest.param(
            lambda j: j.failed(),
            c.CONDITION_FAILED,
            c.FAILED_JOBS_REASON,
            id="fails from first run, no restarts",
        ),
    ],
)
def test_first_run_outcome_with_one_headless_service(finish, want, want_reason) -> None:  # type: ignore[no-untyped-def]
    state = start(base().obj())
    services = 0
    for _ in range(3):  # creation passes, then the outcome
        state, plan = step(state)
        services += len(plan.of_type(CreateService))
    state = settle(state.with_jobs(finish))
    assert services == 1 and state.service is not None
    assert state.service["metadata"]["name"] == "test-js"
    assert state.service["spec"]["clusterIP"] == "None"
    assert state.condition(want)["reason"] == want_reason  # type: ignore[index]
    assert state.status["terminalState"] == want
    assert state.status["restarts"] == 0


@pytest.mark.parametrize(
    "existing",
    [
        pytest.param(
            lambda j: j.ready(), id="one job created, one job not created (already active)"
        ),
        pytest.param(
            lambda j: j.completed(), id="one job created, one job not created (already succeeded)"
        ),
        pytest.param(
            lambda j: j.deleting(at=T0),
            id="one job created, one job not created (marked for deletion)",
        ),
    ],
)
def test_only_missing_jobs_are_created(existing) -> None:  # type: ignore[no-untyped-def]
    state = created(base()).without_jobs(ALL_JOBS[3]).with_job(ALL_JOBS[2], existing)
    _, plan = step(state)
    assert [a.manifest["metadata"]["name"] for a in plan.of_type(CreateJob)] == [ALL_JOBS[3]]


def test_headless_service_one_per_jobset_named_after_subdomain_and_recreated() -> None:
    state = created(base().network(enable_dns_hostnames=True, subdomain="sub"))
    assert state.service is not None and state.service["metadata"]["name"] == "sub"
    state = State(state.jobset, state.jobs, None)  # service deleted
    state, plan = step(state)
    assert [a.manifest["metadata"]["name"] for a in plan.of_type(CreateService)] == ["sub"]
    assert state.service is not None and state.service["metadata"]["name"] == "sub"
    assert all(j["spec"]["template"]["spec"]["subdomain"] == "sub" for j in state.jobs.values())


def test_generate_name_jobset_gets_a_service_named_after_the_generated_name() -> None:
    jobset = base("").generate_name("test-js-").obj()
    jobset["metadata"]["name"] = "test-js-x7k2p"  # what the API server generates
    state = settle(start(jobset))
    assert state.service is not None and state.service["metadata"]["name"] == "test-js-x7k2p"


# --------------------------------------------------------------------------- failure policy

SUFFIX = " (first failed job: test-js-replicated-job-b-0)"


def fail_b0(
    state: State,
    reason: str = c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
    message: str = "some critical error with a message",
) -> State:
    return state.with_job(ALL_JOBS[1], lambda j: j.failed(at=T0, reason=reason, message=message))


def test_jobset_with_no_failure_policy_should_fail_if_any_jobs_fail() -> None:
    state, plan = step(fail_b0(created(base())))
    assert state.is_true(c.CONDITION_FAILED)
    assert state.status["terminalState"] == "Failed"
    assert state.condition(c.CONDITION_FAILED)["reason"] == "FailedJobs"  # type: ignore[index]
    assert events(plan) == [
        ("Warning", "FailedJobs", "jobset failed due to one or more job failures" + SUFFIX)
    ]
    assert [m.name for m in plan.of_type(IncrementMetric)] == ["jobset_failed_total"]


def test_jobset_fails_after_reaching_max_restarts() -> None:
    state = created(base().failure_policy(max_restarts=1))
    state, _ = step(fail_b0(state))
    assert not state.is_true(c.CONDITION_FAILED)
    assert (state.status["restarts"], state.status["restartsCountTowardsMax"]) == (1, 1)
    state = settle(state)  # previous Jobs deleted, finalizers removed, Jobs recreated
    assert state.attempts() == {1: 4}
    state, _ = step(fail_b0(state))
    assert state.is_true(c.CONDITION_FAILED)
    assert state.condition(c.CONDITION_FAILED)["reason"] == "ReachedMaxRestarts"  # type: ignore[index]


@pytest.mark.parametrize(
    ("rules", "reason", "message", "want_failed", "want_restarts"),
    [
        pytest.param(
            [("FailJobSet", {})],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "m",
            True,
            0,
            id="jobset fails immediately with FailJobSet failure policy action",
        ),
        pytest.param(
            [("FailJobSet", {"reasons": [c.JOB_REASON_DEADLINE_EXCEEDED]})],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "m",
            False,
            1,
            id="does not fail immediately with FailJobSet as the failure reason is not matched",
        ),
        pytest.param(
            [("FailJobSet", {"patterns": ["some message"]})],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "some critical error with a message",
            False,
            1,
            id="does not fail immediately with FailJobSet as the failure message is not matched",
        ),
        pytest.param(
            [
                (
                    "FailJobSet",
                    {
                        "reasons": [c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED],
                        "patterns": ["some message"],
                    },
                )
            ],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "some critical error with a message",
            False,
            1,
            id="does not fail immediately: message not matched, even if reason is matched",
        ),
        pytest.param(
            [
                (
                    "FailJobSet",
                    {
                        "reasons": [c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED],
                        "patterns": ["critical error"],
                    },
                )
            ],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "some critical error with a message",
            True,
            0,
            id="fails immediately as the failure reason and message are matched",
        ),
        pytest.param(
            [("FailJobSet", {"patterns": ["some message"]})],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "this is some message with critical error",
            True,
            0,
            id="fails immediately even if message string is not exactly equal to pattern string",
        ),
        pytest.param(
            [("FailJobSet", {"targets": [B], "reasons": [c.JOB_REASON_FAILED_INDEXES]})],
            c.JOB_REASON_FAILED_INDEXES,
            "m",
            True,
            0,
            id="job fails and the parent replicated job is contained in TargetReplicatedJobs",
        ),
        pytest.param(
            [("FailJobSet", {"targets": [A]})],
            c.JOB_REASON_FAILED_INDEXES,
            "m",
            False,
            1,
            id="job fails and the parent replicated job is not contained in TargetReplicatedJobs",
        ),
        pytest.param(
            [("FailJobSet", {}), ("RestartJobSet", {})],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "m",
            True,
            0,
            id="failure policy rules order verification test 1",
        ),
        pytest.param(
            [("RestartJobSet", {}), ("FailJobSet", {})],
            c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
            "m",
            False,
            1,
            id="failure policy rules order verification test 2",
        ),
    ],
)
def test_failure_policy_rules(
    *,
    rules: list[tuple[str, dict[str, list[str]]]],
    reason: str,
    message: str,
    want_failed: bool,
    want_restarts: int,
) -> None:
    builder = base().failure_policy(max_restarts=3)
    for i, (action, kw) in enumerate(rules):
        builder.rule(action, f"rule{i}", **kw)
    state, _ = step(fail_b0(created(builder), reason, message))
    assert state.is_true(c.CONDITION_FAILED) is want_failed
    assert state.status["restarts"] == want_restarts
    assert state.status.get("restartsCountTowardsMax", 0) == want_restarts
    if want_failed:
        assert state.condition(c.CONDITION_FAILED)["reason"] == "FailJobSetFailurePolicyAction"  # type: ignore[index]


@pytest.mark.parametrize(
    "restart_job_gate",
    [
        pytest.param(False, id="without RestartJob feature gate"),
        pytest.param(True, id="with RestartJob feature gate"),
    ],
)
def test_jobset_restarts_with_restart_jobset_action(restart_job_gate: bool) -> None:
    config = CoreConfig(FeatureGates.of({Feature.RESTART_JOB: restart_job_gate}))
    state = created(base().failure_policy(max_restarts=3).rule("RestartJobSet", "Rule1"), config)
    state, plan = step(fail_b0(state), config=config)
    assert (state.status["restarts"], state.status["restartsCountTowardsMax"]) == (1, 1)
    assert all("jobRestarts" not in s for s in state.status["replicatedJobsStatus"])
    restarting = state.condition(c.CONDITION_RESTARTING)
    assert restarting is not None
    assert (restarting["status"], restarting["reason"], restarting["message"]) == (
        "True",
        "FailurePolicy_Rule1",
        "applying RestartJobSet failure policy action" + SUFFIX,
    )
    assert (
        "Warning",
        "RestartJobSetFailurePolicyAction",
        "applying RestartJobSet failure policy action" + SUFFIX,
    ) in events(plan)


def test_a_large_jobsets_restart_deletes_its_previous_attempt_in_one_request() -> None:
    n = COLLECTION_MIN_JOBS
    state = created(make_jobset("big", "default").replicated_job("w", replicas=n)
                    .failure_policy(max_restarts=1))
    state = state.with_job("big-w-3", lambda j: j.failed(at=T0))
    state, _ = step(state)  # the failure policy counts a restart
    state, plan = step(state)  # the previous attempt goes
    [collection] = plan.of_type(DeleteJobs)
    assert (len(collection.uids), plan.of_type(DeleteJob)) == (n, ())
    assert len(state.deleting()) == n
    state = settle(state)  # deleted, then created again in the new attempt
    assert sorted(j["metadata"]["labels"][c.RESTARTS_KEY] for j in state.jobs.values()) == ["1"] * n


def test_jobset_restarting_condition_transitions() -> None:
    state = created(base().failure_policy(max_restarts=3).rule("RestartJobSet", "Rule1"))
    state = settle(fail_b0(state))
    assert state.attempts() == {1: 4}
    assert state.condition(c.CONDITION_RESTARTING)["reason"] == "FailurePolicy_Rule1"  # type: ignore[index]
    state = settle(state.with_jobs(lambda j: j.ready()))
    restarting = state.condition(c.CONDITION_RESTARTING)
    assert restarting is not None
    assert (restarting["status"], restarting["reason"], restarting["message"]) == (
        "False",
        "JobsReady",
        "all jobs are ready",
    )


@pytest.mark.parametrize(
    ("action", "want_job_restarts", "want_towards_max"),
    [
        pytest.param(
            "RestartJob",
            [1, 0, 0],
            [1, 0, 0],
            id="jobset restarts with RestartJob failure policy action",
        ),
        pytest.param(
            "RestartJobAndIgnoreMaxRestarts",
            [1, 0, 0],
            None,
            id="RestartJobAndIgnoreMaxRestarts failure policy action",
        ),
    ],
)
def test_restart_job_actions_restart_only_the_failed_job(
    action: str, want_job_restarts: list[int], want_towards_max: list[int] | None
) -> None:
    config = CoreConfig(FeatureGates.of({Feature.RESTART_JOB: True}))
    state = created(base().failure_policy(max_restarts=3).rule(action, "r"), config)
    state, plan = step(fail_b0(state), config=config)
    assert state.status["restarts"] == 0
    assert state.rjob_status(B).get("jobRestarts") == want_job_restarts
    assert state.rjob_status(B).get("jobRestartsCountTowardsMax") == want_towards_max
    assert state.condition(c.CONDITION_RESTARTING) is None
    state, plan = step(state, config=config)
    assert [d.name for d in plan.of_type(DeleteJob)] == [ALL_JOBS[1]]
    state = settle(state, config=config)
    recreated = state.jobs[ALL_JOBS[1]]["metadata"]["labels"]
    assert recreated[c.JOB_RESTART_ATTEMPT_KEY] == "1"
    assert state.jobs[ALL_JOBS[2]]["metadata"]["labels"][c.JOB_RESTART_ATTEMPT_KEY] == "0"


@pytest.mark.parametrize(
    ("strategy", "want_after_three", "want_after_all"),
    [
        pytest.param(
            "Recreate",
            {0: 1, 1: 3},
            {1: 4},
            id="jobs are restarted individually with Recreate strategy",
        ),
        pytest.param(
            "BlockingRecreate",
            {0: 1},
            {1: 4},
            id="jobs are recreated after all Jobs are deleted with BlockingRecreate strategy",
        ),
    ],
)
def test_restart_strategies(
    strategy: str, want_after_three: dict[int, int], want_after_all: dict[int, int]
) -> None:
    state = created(base().failure_policy(max_restarts=3, restart_strategy=strategy))
    state, _ = step(fail_b0(state))
    assert state.status["restarts"] == 1
    state = settle(state, gc=False)  # previous Jobs get deletionTimestamp, stay (finalizers)
    assert state.deleting() == ALL_JOBS
    state = settle(state.without_jobs(*ALL_JOBS[:3]), gc=False)
    assert state.attempts() == want_after_three
    state = settle(state.without_jobs(ALL_JOBS[3]), gc=False)
    assert state.attempts() == want_after_all


@pytest.mark.parametrize(
    "restart_job_gate",
    [
        pytest.param(False, id="without RestartJob feature gate"),
        pytest.param(True, id="with RestartJob feature gate"),
    ],
)
def test_restart_jobset_and_ignore_max_restarts(restart_job_gate: bool) -> None:
    config = CoreConfig(FeatureGates.of({Feature.RESTART_JOB: restart_job_gate}))
    state = created(
        base().failure_policy(max_restarts=1).rule("RestartJobSetAndIgnoreMaxRestarts", "r"), config
    )
    for want in (1, 2, 3):
        state = settle(fail_b0(state), config=config)
        assert state.status["restarts"] == want
        assert state.status.get("restartsCountTowardsMax", 0) == 0
        assert not state.is_true(c.CONDITION_FAILED)


def test_failure_policy_rules_order_verification_test_3() -> None:
    builder = (
        base()
        .failure_policy(max_restarts=1)
        .rule("RestartJobSetAndIgnoreMaxRestarts", "ignore-a", targets=[A])
        .rule("FailJobSet", "catch-all")
    )
    state = created(builder)
    for _ in range(3):
        state = settle(state.with_job(ALL_JOBS[0], lambda j: j.failed(at=T0)))
    assert (state.status["restarts"], state.status.get("restartsCountTowardsMax", 0)) == (3, 0)
    state = settle(fail_b0(state))
    assert state.is_true(c.CONDITION_FAILED)
    assert state.status["restarts"] == 3


def test_job_succeeds_after_one_failure() -> None:
    state = created(base().failure_policy(max_restarts=1))
    state = state.with_job(ALL_JOBS[0], lambda j: j.completed())
    state = settle(fail_b0(state))
    assert state.attempts() == {1: 4}
    state = settle(state.with_jobs(lambda j: j.completed()))
    assert state.is_true(c.CONDITION_COMPLETED)


def test_failure_target_triggers_the_failure_policy_before_failed() -> None:
    """Fix of upstream #979/#928: FailureTarget=True is enough to act."""
    state = created(base().failure_policy(max_restarts=1))
    state = state.with_job(ALL_JOBS[1], lambda j: j.failure_target(at=T0))
    state, _ = step(state)
    assert state.status["restarts"] == 1
    assert state.rjob_status(B)["failed"] == 1


# --------------------------------------------------------------------------- suspend / resume


def test_jobset_created_in_suspended_state() -> None:
    state = created(base().suspend())
    assert all(j["spec"]["suspend"] is True for j in state.jobs.values())
    assert state.is_true(c.CONDITION_SUSPENDED)
    assert (state.rjob_status(B)["suspended"], state.rjob_status(A)["suspended"]) == (3, 1)


def test_suspend_a_running_jobset() -> None:
    state = created(base()).with_jobs(lambda j: j.ready())
    state = settle(state.with_spec(suspend=True))
    assert all(j["spec"]["suspend"] is True for j in state.jobs.values())
    assert state.is_true(c.CONDITION_SUSPENDED)
    assert state.condition(c.CONDITION_SUSPENDED)["reason"] == "SuspendedJobs"  # type: ignore[index]


def test_resume_a_suspended_jobset_with_kueue_template_edits() -> None:
    state = created(base().suspend()).with_jobs(lambda j: j.suspended_condition().started())

    def admit(js: dict[str, object]) -> None:
        for rjob in js["spec"]["replicatedJobs"]:  # type: ignore[index]
            pod = rjob["template"]["spec"]["template"]
            pod.setdefault("metadata", {})["labels"] = {"kueue": "admitted"}
            pod["metadata"]["annotations"] = {"kueue/flavor": "tpu"}
            pod["spec"]["nodeSelector"] = {"pool": "tpu-a"}
            pod["spec"]["tolerations"] = [{"key": "tpu", "operator": "Exists"}]
        js["spec"]["suspend"] = False  # type: ignore[index]

    state, plan = step(state.with_jobset(admit))
    updates = plan.of_type(UpdateJob)
    assert len(updates) == 4 and all(u.clear_start_time for u in updates)
    for job in state.jobs.values():
        pod = job["spec"]["template"]
        assert job["spec"]["suspend"] is False
        assert "startTime" not in job.get("status", {})
        assert pod["metadata"]["labels"]["kueue"] == "admitted"
        assert pod["metadata"]["labels"][c.JOBSET_NAME_KEY] == "test-js"  # controller labels kept
        assert pod["metadata"]["annotations"]["kueue/flavor"] == "tpu"
        assert pod["spec"]["nodeSelector"] == {"pool": "tpu-a"}
        assert pod["spec"]["tolerations"] == [{"key": "tpu", "operator": "Exists"}]
    state = settle(state)
    suspended = state.condition(c.CONDITION_SUSPENDED)
    assert suspended is not None
    assert (suspended["status"], suspended["reason"], suspended["message"]) == (
        "False",
        "ResumeJobs",
        "jobset is resumed",
    )
    state = settle(state.with_jobs(lambda j: j.completed()))
    assert state.is_true(c.CONDITION_COMPLETED)


# --------------------------------------------------------------------------- startup policy


def test_in_order_startup_policy_starts_replicated_jobs_one_by_one() -> None:
    state = created(base().startup_policy("InOrder"))
    assert sorted(state.jobs) == ALL_JOBS[:1]
    assert state.is_true(c.CONDITION_STARTUP_POLICY_IN_PROGRESS)
    state = settle(state.with_jobs(lambda j: j.ready()))
    assert sorted(state.jobs) == ALL_JOBS
    assert state.is_true(c.CONDITION_STARTUP_POLICY_IN_PROGRESS)
    state = settle(state.with_jobs(lambda j: j.active(), rjob=B))
    assert state.is_true(c.CONDITION_STARTUP_POLICY_IN_PROGRESS)
    state = settle(state.with_jobs(lambda j: j.ready(), rjob=B))
    assert state.is_true(c.CONDITION_STARTUP_POLICY_COMPLETED)
    assert not state.is_true(c.CONDITION_STARTUP_POLICY_IN_PROGRESS)


@pytest.mark.parametrize(
    "order",
    [
        pytest.param(
            "InOrder", id="startupPolicy with InOrder; suspend should keep jobs suspended"
        ),
        pytest.param(
            "AnyOrder", id="startupPolicy with AnyOrder; suspend should keep jobs suspended"
        ),
    ],
)
def test_startup_policy_while_suspended_creates_every_job_suspended(order: str) -> None:
    state = created(base().startup_policy(order).suspend())
    assert (state.rjob_status(B)["suspended"], state.rjob_status(A)["suspended"]) == (3, 1)
    assert not state.is_true(c.CONDITION_STARTUP_POLICY_IN_PROGRESS)


def test_startup_policy_any_order_resume_unsuspends_all() -> None:
    state = settle(created(base().startup_policy("AnyOrder").suspend()).with_spec(suspend=False))
    assert all(j["spec"]["suspend"] is False for j in state.jobs.values())


def test_startup_policy_in_order_resume_unsuspends_in_order() -> None:
    state = settle(created(base().startup_policy("InOrder").suspend()).with_spec(suspend=False))
    suspended = {n: j["spec"]["suspend"] for n, j in state.jobs.items()}
    assert suspended == {ALL_JOBS[0]: False, **{n: True for n in ALL_JOBS[1:]}}
    assert state.is_true(c.CONDITION_STARTUP_POLICY_IN_PROGRESS)
    state = settle(state.with_jobs(lambda j: j.ready(), rjob=A))
    assert all(j["spec"]["suspend"] is False for j in state.jobs.values())
    state = settle(state.with_jobs(lambda j: j.ready(), rjob=B))
    assert state.is_true(c.CONDITION_STARTUP_POLICY_COMPLETED)
    assert state.condition(c.CONDITION_SUSPENDED)["status"] == "False"  # type: ignore[index]


def test_in_order_restart_repeats_the_sequence_from_the_start() -> None:
    state = created(base().startup_policy("InOrder").failure_policy(max_restarts=1))
    state = settle(state.with_jobs(lambda j: j.ready()))
    state = settle(state.with_jobs(lambda j: j.ready()))
    assert state.is_true(c.CONDITION_STARTUP_POLICY_COMPLETED)
    state = settle(fail_b0(state))
    assert sorted(state.jobs) == ALL_JOBS[:1] and state.attempts() == {1: 1}
    assert state.is_true(c.CONDITION_STARTUP_POLICY_IN_PROGRESS)
    state = settle(state.with_jobs(lambda j: j.ready()))
    assert state.attempts() == {1: 4}


# --------------------------------------------------------------------------- coordinator


def test_jobset_with_coordinator_set_should_have_annotation_and_label_set_on_all_jobs() -> None:
    state = created(base().coordinator(A))
    for job in state.jobs.values():
        for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
            assert meta["labels"][c.COORDINATOR_KEY] == "test-js-replicated-job-a-0-0.test-js"
            assert meta["annotations"][c.COORDINATOR_KEY] == "test-js-replicated-job-a-0-0.test-js"


# --------------------------------------------------------------------------- depends on


def three(*deps_b: tuple[str, str], deps_c: list[tuple[str, str]] | None = None) -> JobSetBuilder:
    return (
        make_jobset("js", "default")
        .replicated_job("rjob-a", 1)
        .replicated_job("rjob-b", 3, depends_on=list(deps_b) or None)
        .replicated_job("rjob-c", 1, depends_on=deps_c)
        .network(True)
        .success_policy("All")
    )


def test_depends_on_ready_then_complete_chain() -> None:
    builder = three(("rjob-a", "Complete"), deps_c=[("rjob-b", "Ready")])
    state = created(builder)
    assert sorted(state.jobs) == ["js-rjob-a-0"]
    state = settle(state.with_jobs(lambda j: j.ready()))
    assert len(state.jobs) == 1
    state = settle(state.with_jobs(lambda j: j.completed(), rjob="rjob-a"))
    assert len(state.jobs) == 4
    state = settle(state.with_jobs(lambda j: j.ready(), rjob="rjob-b"))
    assert len(state.jobs) == 5


@pytest.mark.parametrize(
    ("deps_c", "first", "want_first", "want_after"),
    [
        pytest.param(
            [("rjob-a", "Complete"), ("rjob-b", "Complete")],
            "completed",
            4,
            5,
            id="DependsOn: rjob-c depends on complete status of rjob-a and rjob-b",
        ),
        pytest.param(
            [("rjob-a", "Ready"), ("rjob-b", "Complete")],
            "ready",
            4,
            5,
            id="DependsOn: rjob-c depends on ready status of rjob-a and complete status of rjob-b",
        ),
    ],
)
def test_depends_on_two_dependencies(
    deps_c: list[tuple[str, str]], first: str, want_first: int, want_after: int
) -> None:
    state = created(three(deps_c=deps_c))
    assert len(state.jobs) == want_first
    state = settle(state.with_jobs(lambda j: getattr(j, first)(), rjob="rjob-a"))
    assert len(state.jobs) == want_first
    state = settle(state.with_jobs(lambda j: j.completed(), rjob="rjob-b"))
    assert len(state.jobs) == want_after


def test_depends_on_rjob_b_depends_on_ready_status_of_rjob_a() -> None:
    builder = (
        make_jobset("test-js", "default")
        .replicated_job(A, 1)
        .replicated_job(B, 3, depends_on=[(A, "Ready")])
        .network(True)
        .success_policy("All")
    )
    state = created(builder)
    assert sorted(state.jobs) == [ALL_JOBS[0]]
    state = settle(state.with_jobs(lambda j: j.active()))  # running but not ready: still waits
    assert sorted(state.jobs) == [ALL_JOBS[0]]
    state = settle(state.with_jobs(lambda j: j.ready(), rjob=A))
    assert sorted(state.jobs) == ALL_JOBS
    assert all(j["spec"]["suspend"] is False for j in state.jobs.values())


def test_depends_on_resume_suspended_jobset() -> None:
    builder = (
        make_jobset("js", "default")
        .replicated_job("rjob-a", 1)
        .replicated_job("rjob-b", 3, depends_on=[("rjob-a", "Ready")])
        .network(True)
        .success_policy("All")
        .suspend()
    )
    state = created(builder)
    assert sorted(state.jobs) == ["js-rjob-a-0"]
    assert state.jobs["js-rjob-a-0"]["spec"]["suspend"] is True
    state = settle(state.with_spec(suspend=False))
    assert state.jobs["js-rjob-a-0"]["spec"]["suspend"] is False
    state = settle(state.with_jobs(lambda j: j.ready()))
    assert len(state.jobs) == 4
    assert all(j["spec"]["suspend"] is False for j in state.jobs.values())


# --------------------------------------------------------------------------- managedBy, TTL


@pytest.mark.parametrize(
    "suspend",
    [
        pytest.param(True, id="Should not create any jobs for it, while suspended"),
        pytest.param(False, id="Should not create any jobs for it, when unsuspended"),
    ],
)
def test_jobset_managed_by_another_controller_is_left_alone(suspend: bool) -> None:
    builder = base().managed_by(c.MULTIKUEUE_CONTROLLER_NAME).suspend(suspend)
    assert reconcile(start(builder.obj()).observed(), T0).is_empty


def test_updates_to_status_of_a_jobset_managed_elsewhere_are_preserved() -> None:
    builder = (
        base().managed_by("example.com/other").condition("Failed", "False", "ByTest").restarts(1)
    )
    state = start(builder.obj())
    assert reconcile(state.observed(), T0) == Plan()


def test_jobset_being_deleted_is_left_alone() -> None:
    state = start(base().obj()).with_jobset(
        lambda js: js["metadata"].update(deletionTimestamp="2026-05-01T08:00:00Z")
    )
    assert reconcile(state.observed(), T0) == Plan()


def test_jobset_is_deleted_after_ttl_after_finished() -> None:
    state = created(base().ttl_after_finished(2).success_policy("Any"))
    state = state.with_job(ALL_JOBS[0], lambda j: j.failed(at=T0))
    state, _ = step(state)
    assert state.is_true(c.CONDITION_FAILED)
    state, plan = step(state, T0 + timedelta(seconds=1))
    assert len(plan.of_type(DeleteJob)) == 3
    assert plan.requeue_after == 1.0  # finished at T0 with a 2 s TTL, now T0 + 1 s
    state, plan = step(state, T0 + timedelta(seconds=2))
    assert plan.of_type(DeleteJobSet) == (DeleteJobSet("default", "test-js", "js-uid"),)
    assert state.jobset_deleted


def test_jobset_without_ttl_is_not_deleted() -> None:
    state = settle(created(base()).with_jobs(lambda j: j.completed()))
    plan = reconcile(state.observed(), T0 + timedelta(days=30))
    assert plan.of_type(DeleteJobSet) == () and plan.of_type(RequeueAfter) == ()
    assert plan.is_empty


def test_no_status_write_when_nothing_changed_even_much_later() -> None:
    state = created(base()).with_jobs(lambda j: j.ready())
    state = settle(state)
    for later in (timedelta(seconds=1), timedelta(hours=5)):
        assert reconcile(state.observed(), T0 + later) == Plan()


def test_plan_with_creates_puts_jobs_before_status_and_events_after() -> None:
    state = start(base().obj())
    plan = reconcile(state.observed(), T0)
    kinds = [type(a).__name__ for a in plan.actions]
    assert kinds.index("UpdateStatus") > max(i for i, k in enumerate(kinds) if k == "CreateJob")
    assert apply_plan(state, plan).jobs.keys() == set(ALL_JOBS)
    assert len(plan.of_type(CreateJob)) == 4


def test_a_failed_status_write_is_retried_without_double_counting() -> None:
    state = fail_b0(created(base()))
    plan = reconcile(state.observed(), T0)
    assert [m.name for m in plan.of_type(IncrementMetric)] == ["jobset_failed_total"]
    # the status write fails (conflict): the runtime drops what follows it, events and metrics
    state = apply_plan(state, Plan(plan.actions[: plan.actions.index(plan.status_update)]))
    assert state.metrics == () and state.events == ()
    state, retried = step(state, T0 + timedelta(seconds=5))
    assert retried.of_type(IncrementMetric) == plan.of_type(IncrementMetric)
    state = settle(state, T0 + timedelta(seconds=6))
    assert [m.name for m in state.metrics] == ["jobset_failed_total"]
    assert [e.reason for e in state.events] == ["FailedJobs"]


def test_now_in_another_timezone_or_naive_is_treated_as_utc() -> None:
    from datetime import timezone

    state = fail_b0(created(base()))
    plus_two = T0.astimezone(timezone(timedelta(hours=2)))
    for now in (plus_two, T0.replace(tzinfo=None)):
        failed = reconcile(state.observed(), now).status_update
        assert failed is not None
        cond = next(x for x in failed.status["conditions"] if x["type"] == "Failed")
        assert cond["lastTransitionTime"] == "2026-05-01T08:00:00Z"


def test_ttl_deletion_comes_after_the_status_write_of_the_same_pass() -> None:
    state = created(base().ttl_after_finished(0).success_policy("Any"))
    state = state.with_jobs(lambda j: j.ready()).with_job(ALL_JOBS[0], lambda j: j.completed())
    state, _ = step(state)  # Completed
    state = state.with_job(ALL_JOBS[1], lambda j: j.completed())  # counts change too
    plan = reconcile(state.observed(), T0)
    kinds = [type(a).__name__ for a in plan.actions]
    assert kinds[-1] == "DeleteJobSet" and "UpdateStatus" in kinds
