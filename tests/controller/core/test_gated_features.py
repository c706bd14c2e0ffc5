"""Gates ahead of upstream's release, as scenarios over reconcile and the pure API server:
CreateChildrenOnFirstResume (upstream #535), ExecutionAttemptsTracking (KEP-1282) and
MutablePodResourcesForSuspendedJobSets (KEP-1150)."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.status import Condition
from jobset_infra.controller.core.classify import ChildJobs
from jobset_infra.controller.core.execution_attempts import after_restart, execution_attempts
from jobset_infra.controller.core.types import ChildJob, CoreConfig, Plan, UpdateJob, UpdateStatus
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset
from tests.controller.core.cluster import State, apply_plan, settle, start, step


def config(*features: Feature) -> CoreConfig:
    return CoreConfig(gates=FeatureGates.of({f.value: True for f in features}))


DEFERRED = config(Feature.CREATE_CHILDREN_ON_FIRST_RESUME)
ATTEMPTS = config(Feature.EXECUTION_ATTEMPTS)
RESOURCES = config(Feature.MUTABLE_POD_RESOURCES)


def jobset(suspended: bool = False) -> JobSetBuilder:
    builder = (make_jobset("js", "ns").replicated_job("w", replicas=2)
               .network(enable_dns_hostnames=True).success_policy("All")
               .failure_policy(max_restarts=3))
    return builder.suspend() if suspended else builder


def annotation(job: dict[str, Any]) -> tuple[str | None, str | None]:
    """The execution-attempt annotation of the Job and of its pod template."""
    pod = job["spec"]["template"].get("metadata") or {}
    return (
        (job["metadata"].get("annotations") or {}).get(c.EXECUTION_ATTEMPT_KEY),
        (pod.get("annotations") or {}).get(c.EXECUTION_ATTEMPT_KEY),
    )


def resume(state: State) -> State:
    return state.with_spec(suspend=False)


# --- CreateChildrenOnFirstResume -------------------------------------------------------------


def test_a_jobset_created_suspended_gets_no_jobs_and_no_service_until_its_first_resume() -> None:
    state = settle(start(jobset(suspended=True).obj()), config=DEFERRED)
    assert (state.jobs, state.service) == ({}, None)
    assert state.is_true(c.CONDITION_SUSPENDED)
    assert state.rjob_status("w")["suspended"] == 0  # counted, nothing there
    state = settle(resume(state), config=DEFERRED)
    assert sorted(state.jobs) == ["js-w-0", "js-w-1"]
    assert all(j["spec"]["suspend"] is False for j in state.jobs.values())
    assert state.service is not None
    assert state.condition(c.CONDITION_SUSPENDED)["status"] == "False"  # type: ignore[index]
    # suspended again after it ran: its Jobs stay (suspended), as upstream keeps them
    state = settle(state.with_spec(suspend=True), config=DEFERRED)
    assert sorted(state.jobs) == ["js-w-0", "js-w-1"]
    assert all(j["spec"]["suspend"] is True for j in state.jobs.values())


def test_with_the_gate_off_a_suspended_jobset_gets_its_jobs_suspended_as_upstream() -> None:
    state = settle(start(jobset(suspended=True).obj()))
    assert sorted(state.jobs) == ["js-w-0", "js-w-1"] and state.service is not None


def test_a_restart_while_suspended_recreates_the_jobs_of_a_jobset_that_ran() -> None:
    state = settle(start(jobset().obj()), config=DEFERRED)
    state = state.with_job("js-w-0", lambda j: j.failed())
    state, _ = step(state, config=DEFERRED)
    assert state.status["restarts"] == 1
    state = settle(state.with_spec(suspend=True), config=DEFERRED)
    assert sorted(state.jobs) == ["js-w-0", "js-w-1"], "it ran: its Jobs come back, suspended"


# --- ExecutionAttemptsTracking ---------------------------------------------------------------


def _jobs(*suspended: bool, attempt: str | None = "3") -> ChildJobs:
    """Jobs suspended or running, each carrying `attempt` (None: no annotation)."""
    def one(index: int, suspend: bool) -> ChildJob:
        job = make_job("js", rjob="w", index=index).suspend(suspend)
        return (job if attempt is None else job.annotation(c.EXECUTION_ATTEMPT_KEY, attempt)).view()
    return ChildJobs(active=tuple(one(i, s) for i, s in enumerate(suspended)))


SUSPENDED_TRUE = [Condition.model_validate({
    "type": c.CONDITION_SUSPENDED, "status": "True", "reason": c.SUSPENDED_REASON,
    "message": c.SUSPENDED_MESSAGE, "lastTransitionTime": "2026-01-01T00:00:00Z"})]


@pytest.mark.parametrize(
    ("current", "restarts", "suspended", "jobs", "conditions", "want"),
    [
        pytest.param(None, 0, False, _jobs(), [], 0, id="a JobSet starting its first run: 0"),
        pytest.param(None, 0, True, _jobs(True, True), [], None,
                     id="suspended and never ran: unset"),
        pytest.param(None, 0, False, _jobs(True, True), SUSPENDED_TRUE, 0,
                     id="the first resume of a JobSet created suspended: 0, not 1"),
        pytest.param(None, 2, False, _jobs(False, False), [], 2,
                     id="tracking starts on a running JobSet: its restarts"),
        pytest.param(None, 0, True, _jobs(False, True), [], 0,
                     id="tracking starts on a JobSet with a running Job: its restarts (0)"),
        pytest.param(3, 1, False, _jobs(True, True), SUSPENDED_TRUE, 4,
                     id="a resume after a suspension: one more"),
        pytest.param(3, 1, False, _jobs(False, True), SUSPENDED_TRUE, 3,
                     id="a resume already counted (a Job runs again, InOrder): no more"),
        pytest.param(3, 1, False, _jobs(False, False, attempt="4"), SUSPENDED_TRUE, 4,
                     id="a resume whose status write failed: the count its Jobs carry"),
        pytest.param(3, 1, False, _jobs(False, False), [], 3, id="running: as it was"),
        pytest.param(0, 0, False, _jobs(True, True, attempt="0"), [], 1,
                     id="a suspension whose status write was lost, then a resume: one more"),
        pytest.param(0, 0, False, _jobs(True, True, attempt=None), [], 0,
                     id="the first run's Jobs not resumed yet (they never ran): no more"),
        pytest.param(3, 1, False, _jobs(True, True, attempt="3"), [], 4,
                     id="a resume that takes another pass (a refused write): still one more"),
        pytest.param(3, 1, False, _jobs(False, False, attempt="4"), [], 4,
                     id="Jobs running in a later execution than the status says: caught up"),
        pytest.param(3, 1, True, _jobs(True, True), SUSPENDED_TRUE, 3,
                     id="suspended: as it was"),
    ],
)
def test_execution_attempts(
    current: int | None, *, restarts: int, suspended: bool, jobs: ChildJobs,
    conditions: list[Any], want: int | None,
) -> None:
    got = execution_attempts(current, restarts=restarts, suspended=suspended, jobs=jobs,
                             conditions=conditions)
    assert got == want


@pytest.mark.parametrize(("current", "before", "want"), [
    pytest.param(4, 1, 5, id="a restart counts one more"),
    pytest.param(None, 2, 3, id="a restart on a JobSet not tracked yet starts from its restarts"),
])
def test_a_restart_counts_one_execution(current: int | None, before: int, want: int) -> None:
    assert after_restart(current, before) == want


def _without_status_write(state: State, plan: Plan) -> State:
    """The plan carried out up to its status write, which fails (a conflict)."""
    return apply_plan(state, Plan(tuple(a for a in plan.actions
                                        if not isinstance(a, UpdateStatus))))


def test_every_run_is_counted_once_and_carried_to_jobs_and_pods() -> None:
    # created suspended (Jobs exist, suspended, not annotated while the count is unset)
    state = settle(start(jobset(suspended=True).obj()), config=ATTEMPTS)
    assert "executionAttempts" not in state.status
    assert {annotation(j) for j in state.jobs.values()} == {(None, None)}
    # the first resume: the first run, 0
    state = settle(resume(state), config=ATTEMPTS)
    assert state.status["executionAttempts"] == 0
    # an eviction and readmission: 1, carried by the resume to each Job and its pods
    state = settle(state.with_spec(suspend=True), config=ATTEMPTS)
    readmitted = resume(state)
    state, plan = step(readmitted, config=ATTEMPTS)
    assert all(u.patch["metadata"]["annotations"][c.EXECUTION_ATTEMPT_KEY] == "1"
               for u in plan.of_type(UpdateJob))
    # the status write of that pass fails: the retried pass counts the same resume once
    retried = _without_status_write(readmitted, plan)
    state = settle(retried, config=ATTEMPTS)
    assert state.status["executionAttempts"] == 1
    assert {annotation(j) for j in state.jobs.values()} == {("1", "1")}
    # a restart that recreates every Job: 2, on the new Jobs
    state = state.with_job("js-w-0", lambda j: j.failed())
    state = settle(state, config=ATTEMPTS)
    assert (state.status["restarts"], state.status["executionAttempts"]) == (1, 2)
    assert {annotation(j) for j in state.live_jobs()} == {("2", "2")}


def test_a_suspension_whose_status_write_failed_still_counts_the_resume() -> None:
    """Suspended and resumed again before the pass that suspended the Jobs wrote `Suspended`
    (its status write got a conflict: the JobSet changed meanwhile). A CI run saw it."""
    state = settle(start(jobset().obj()), config=ATTEMPTS)
    assert state.status["executionAttempts"] == 0
    suspending = state.with_spec(suspend=True)
    _, plan = step(suspending, config=ATTEMPTS)
    state = _without_status_write(suspending, plan)
    assert all(j["spec"]["suspend"] is True for j in state.jobs.values())
    state = settle(resume(state), config=ATTEMPTS)
    assert state.status["executionAttempts"] == 1
    assert {annotation(j) for j in state.jobs.values()} == {("1", "1")}
    assert all(j["spec"]["suspend"] is False for j in state.jobs.values())


def test_with_the_gate_off_nothing_is_annotated_and_a_count_stays_as_it_was() -> None:
    state = settle(start(jobset().obj()))
    assert {annotation(j) for j in state.jobs.values()} == {(None, None)}
    tracked = state.with_jobset(lambda js: js["status"].update(executionAttempts=7))
    state = settle(tracked.with_job("js-w-0", lambda j: j.failed()))
    assert (state.status["restarts"], state.status["executionAttempts"]) == (1, 7)


# --- MutablePodResourcesForSuspendedJobSets --------------------------------------------------


def _resized(js: dict[str, Any]) -> None:
    pod = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["containers"][0]["resources"] = {"requests": {"cpu": "250m"}}
    js["spec"]["suspend"] = False


def test_a_resume_carries_the_resources_kueue_set_while_suspended() -> None:
    state = settle(start(jobset(suspended=True).obj()), config=RESOURCES)
    _, plan = step(state.with_jobset(_resized), config=RESOURCES)
    updates = plan.of_type(UpdateJob)
    assert len(updates) == 2 and all(u.strategic for u in updates)
    containers = updates[0].patch["spec"]["template"]["spec"]["containers"]
    assert containers == [{"name": containers[0]["name"],
                           "resources": {"$patch": "replace", "requests": {"cpu": "250m"}}}]
    refusal = updates[0].on_refusal
    assert refusal is not None and refusal.reason == c.FAILED_RESOURCE_PROPAGATION_EVENT
    assert (refusal.regarding.kind, refusal.regarding.name) == (c.KIND, "js")


def test_with_the_gate_off_a_resume_carries_no_resources_and_stays_a_merge_patch() -> None:
    state = settle(start(jobset(suspended=True).obj()))
    _, plan = step(state.with_jobset(_resized))
    updates = plan.of_type(UpdateJob)
    assert updates and not any(u.strategic or u.on_refusal for u in updates)
    assert all("containers" not in (u.patch["spec"].get("template") or {}).get("spec", {})
               for u in updates)
