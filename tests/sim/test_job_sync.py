"""The simulated Job controller's decisions: Pods, counters and conditions of a batch/v1 Job."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.constants import JOB_COMPLETION_INDEX_KEY
from jobset_infra.sim.cluster import job_pods, job_sync, pod_failure_policy
from jobset_infra.sim.cluster.job_pods import PodView, pod_view
from jobset_infra.sim.cluster.job_sync import JobSync, format_indexes, parse_indexes, sync_job

T0 = datetime(2026, 11, 29, 10, 0, 0, tzinfo=UTC)


def make_job(
    name: str = "js-workers-0",
    *,
    parallelism: int | None = 2,
    completions: int | None = 2,
    indexed: bool = True,
    suspend: bool = False,
    backoff_limit: int | None = None,
    deadline: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "suspend": suspend,
        "template": {
            "metadata": {"labels": {"app": "train"}, "annotations": {"team": "ml"}},
            "spec": {
                "subdomain": "js",
                "nodeSelector": {"cloud.google.com/gke-nodepool": "pool-1"},
                "tolerations": [{"key": "google.com/tpu", "operator": "Exists"}],
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox"}],
            },
        },
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if indexed:
        spec["completionMode"] = "Indexed"
    if backoff_limit is not None:
        spec["backoffLimit"] = backoff_limit
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
        "spec": spec,
    }


@dataclass
class World:
    """A Job and its Pods, with plans applied the way the shell applies them."""

    job: dict[str, Any]
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    counted: set[str] = field(default_factory=set)
    now: datetime = T0
    wait_for_binding: bool = False

    def views(self) -> list[PodView]:
        return [pod_view(p) for p in self.pods.values()]

    def sync(self) -> JobSync:
        return sync_job(
            self.job, self.views(), counted=frozenset(self.counted), now=self.now,
            wait_for_binding=self.wait_for_binding,
        )

    def apply(self, plan: JobSync) -> None:
        for pod in plan.create:
            created = job_pods.copy_json(pod)
            created["metadata"]["uid"] = f"uid-{pod['metadata']['name']}"
            self.pods[created["metadata"]["name"]] = created
            if plan.start_created:
                created["status"] = job_pods.running_status(created, self.now)
        for name in plan.start:
            self.pods[name]["status"] = job_pods.running_status(self.pods[name], self.now)
        for name in plan.delete:
            del self.pods[name]
        if plan.status is not None:
            self.job["status"] = plan.status
            self.counted.update(plan.counted)

    def step(self) -> JobSync:
        plan = self.sync()
        self.apply(plan)
        return plan

    def settle(self) -> None:
        for _ in range(10):
            if self.step().empty:
                return
        raise AssertionError("the Job controller did not converge in 10 passes")

    def finish(self, name: str, *, succeeded: bool, **kw: Any) -> None:
        pod = self.pods[name]
        pod["status"] = job_pods.finished_status(pod, self.now, succeeded=succeeded, **kw)

    def bind(self, name: str, node: str = "node-a") -> None:
        self.pods[name]["spec"]["nodeName"] = node

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.job.get("status") or {})

    def condition(self, kind: str) -> dict[str, Any] | None:
        return job_sync.condition(self.status.get("conditions") or [], kind)

    def pod_at(self, index: int) -> dict[str, Any]:
        return next(
            p for p in self.pods.values()
            if p["metadata"]["annotations"].get(JOB_COMPLETION_INDEX_KEY) == str(index)
            and p["status"]["phase"] not in ("Succeeded", "Failed")
        )


# --- Pods ------------------------------------------------------------------------------------


def test_an_indexed_job_gets_one_pod_per_index_built_like_the_job_controller_builds_it() -> None:
    world = World(make_job())
    plan = world.step()
    assert len(plan.create) == 2
    pod = world.pod_at(1)
    meta, spec = pod["metadata"], pod["spec"]
    prefix = "js-workers-0-1-"
    assert meta["name"].startswith(prefix) and len(meta["name"]) == len(prefix) + 5
    assert spec["hostname"] == "js-workers-0-1"
    assert spec["subdomain"] == "js"
    assert spec["nodeSelector"] == {"cloud.google.com/gke-nodepool": "pool-1"}
    assert spec["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists"}]
    assert meta["annotations"] == {"team": "ml", JOB_COMPLETION_INDEX_KEY: "1"}
    assert meta["labels"] == {
        "app": "train", JOB_COMPLETION_INDEX_KEY: "1",
        "batch.kubernetes.io/job-name": "js-workers-0", "job-name": "js-workers-0",
        "batch.kubernetes.io/controller-uid": "uid-js-workers-0",
        "controller-uid": "uid-js-workers-0",
    }
    assert meta["ownerReferences"] == [{
        "apiVersion": "batch/v1", "kind": "Job", "name": "js-workers-0", "uid": "uid-js-workers-0",
        "controller": True, "blockOwnerDeletion": True,
    }]
    path = f"metadata.annotations['{JOB_COMPLETION_INDEX_KEY}']"
    assert spec["containers"][0]["env"] == [
        {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": path}}},
    ]


def test_the_template_is_not_mutated_when_pods_are_built() -> None:
    job = make_job()
    before = job_pods.copy_json(job)
    World(job).step()
    assert job["spec"] == before["spec"]


def test_generated_pod_names_of_long_job_names_stay_within_63_characters() -> None:
    long = "a" * 70
    name = job_pods.pod_name(make_job(long), 12, 0)
    assert len(name) == 63 and name.startswith("a" * 54 + "-12-")


def test_pod_names_are_stable_for_the_same_attempt_and_differ_between_attempts() -> None:
    job = make_job()
    assert job_pods.pod_name(job, 0, 0) == job_pods.pod_name(job, 0, 0)
    assert job_pods.pod_name(job, 0, 0) != job_pods.pod_name(job, 0, 1)


# --- Status ----------------------------------------------------------------------------------


def test_without_a_scheduler_pods_run_at_once_and_the_job_reports_them_ready() -> None:
    world = World(make_job(parallelism=3, completions=3))
    world.settle()
    assert {p["status"]["phase"] for p in world.pods.values()} == {"Running"}
    assert world.status == {
        "startTime": "2026-11-29T10:00:00Z", "active": 3, "terminating": 0,
        "uncountedTerminatedPods": {}, "ready": 3,
    }


def test_with_a_scheduler_a_pod_runs_only_once_it_is_bound_to_a_node() -> None:
    world = World(make_job(), wait_for_binding=True)
    world.settle()
    assert {p["status"]["phase"] for p in world.pods.values()} == {"Pending"}
    assert world.status["ready"] == 0 and world.status["active"] == 2
    world.bind(world.pod_at(0)["metadata"]["name"])
    world.settle()
    assert world.pod_at(0)["status"]["phase"] == "Running"
    assert world.pod_at(1)["status"]["phase"] == "Pending"
    assert world.status["ready"] == 1


def test_a_bound_pod_keeps_the_schedulers_pod_scheduled_condition_when_it_starts() -> None:
    world = World(make_job(parallelism=1, completions=1), wait_for_binding=True)
    world.settle()
    pod = world.pod_at(0)
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "x"}
    pod["status"]["conditions"] = [scheduled]
    world.bind(pod["metadata"]["name"])
    world.settle()
    assert world.pod_at(0)["status"]["conditions"][0] == scheduled


def test_when_every_index_succeeds_the_job_meets_its_success_criteria_and_completes() -> None:
    world = World(make_job(parallelism=3, completions=3))
    world.settle()
    world.now = T0 + timedelta(seconds=30)
    for name in list(world.pods):
        world.finish(name, succeeded=True)
    world.settle()
    status = world.status
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert {c["reason"] for c in status["conditions"]} == {"CompletionsReached"}
    assert status["conditions"][1]["message"] == "Reached expected number of succeeded pods"
    assert status["completionTime"] == "2026-11-29T10:00:30Z"
    assert (status["succeeded"], status["completedIndexes"], status["ready"]) == (3, "0-2", 0)
    assert "active" not in status


def test_a_failed_pod_within_the_backoff_limit_is_replaced_for_the_same_index() -> None:
    world = World(make_job(backoff_limit=2))
    world.settle()
    first = world.pod_at(1)["metadata"]["name"]
    world.finish(first, succeeded=False)
    world.settle()
    replacement = world.pod_at(1)["metadata"]["name"]
    assert replacement != first and world.pods[first]["status"]["phase"] == "Failed"
    assert (world.status["failed"], world.status["active"]) == (1, 2)
    assert world.condition("FailureTarget") is None


def test_a_failure_past_the_backoff_limit_stops_the_other_pods_and_then_fails_the_job() -> None:
    world = World(make_job(backoff_limit=0))
    world.settle()
    world.finish(world.pod_at(0)["metadata"]["name"], succeeded=False)
    first = world.step()
    assert len(first.delete) == 1
    assert world.condition("FailureTarget") is not None and world.condition("Failed") is None
    assert world.status["terminating"] == 1
    world.settle()
    failed = world.condition("Failed")
    assert failed is not None
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert world.status["failed"] == 1 and "completionTime" not in world.status


def test_a_failure_target_set_from_outside_fails_the_job_with_its_reason_and_message() -> None:
    world = World(make_job())
    world.settle()
    world.job["status"] = job_sync.failure_target_status(
        world.job, "PodFailurePolicy", "container main exited with 42", T0)
    world.settle()
    assert world.pods == {}
    failed = world.condition("Failed")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"
    assert failed["message"] == "container main exited with 42"


def test_a_job_past_its_active_deadline_fails_with_deadline_exceeded() -> None:
    world = World(make_job(deadline=60))
    world.settle()
    world.now = T0 + timedelta(seconds=61)
    world.settle()
    failed = world.condition("Failed")
    assert failed is not None and failed["reason"] == "DeadlineExceeded"


def test_suspending_deletes_running_pods_and_resuming_restarts_them_with_a_new_start_time() -> None:
    world = World(make_job())
    world.settle()
    world.job["spec"]["suspend"] = True
    world.now = T0 + timedelta(seconds=10)
    world.settle()
    assert world.pods == {}
    suspended = world.condition("Suspended")
    assert suspended is not None
    assert (suspended["status"], suspended["reason"]) == ("True", "JobSuspended")
    assert (world.status.get("active", 0), world.status["ready"]) == (0, 0)
    world.job["spec"]["suspend"] = False
    world.now = T0 + timedelta(seconds=20)
    world.settle()
    resumed = world.condition("Suspended")
    assert resumed is not None
    assert (resumed["status"], resumed["reason"], resumed["message"]) == (
        "False", "JobResumed", "Job resumed")
    assert world.status["startTime"] == "2026-11-29T10:00:20Z"
    assert world.status["active"] == 2


def test_a_job_created_suspended_starts_nothing_and_has_no_start_time() -> None:
    world = World(make_job(suspend=True))
    world.settle()
    assert world.pods == {} and "startTime" not in world.status
    suspended = world.condition("Suspended")
    assert suspended is not None and suspended["message"] == "Job suspended"


def test_a_job_being_deleted_is_left_to_the_garbage_collector() -> None:
    job = make_job()
    job["metadata"]["deletionTimestamp"] = "2026-11-29T10:00:00Z"
    assert World(job).sync().empty


def test_a_finished_job_deletes_pods_that_still_run() -> None:
    world = World(make_job(parallelism=1, completions=1))
    world.settle()
    world.job["status"]["conditions"] = [{"type": "Complete", "status": "True"}]
    plan = world.sync()
    assert len(plan.delete) == 1 and plan.status is None


def test_a_non_indexed_job_creates_unindexed_pods_until_its_completions_succeed() -> None:
    world = World(make_job(indexed=False, parallelism=2, completions=3))
    world.settle()
    assert all("hostname" not in p["spec"] for p in world.pods.values())
    for name in list(world.pods):
        world.finish(name, succeeded=True)
    world.settle()
    assert world.status["succeeded"] == 2 and world.status["active"] == 1
    running = next(n for n, p in world.pods.items() if p["status"]["phase"] == "Running")
    world.finish(running, succeeded=True)
    world.settle()
    assert world.condition("Complete") is not None and world.status["succeeded"] == 3


def test_a_job_without_parallelism_and_completions_runs_one_pod() -> None:
    world = World(make_job(parallelism=None, completions=None, indexed=False))
    world.settle()
    assert len(world.pods) == 1


def test_a_pod_counted_once_is_not_counted_again_on_later_passes() -> None:
    world = World(make_job(backoff_limit=5))
    world.settle()
    world.finish(world.pod_at(0)["metadata"]["name"], succeeded=False)
    world.settle()
    world.settle()
    assert world.status["failed"] == 1


# --- Helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("indexes", "want_text"),
    [
        pytest.param([], "", id="no completed index is an empty string"),
        pytest.param([0, 1], "0,1", id="two consecutive indexes are listed"),
        pytest.param([1, 3, 4, 5, 7], "1,3-5,7", id="runs of three or more are compressed"),
        pytest.param([5, 0, 1, 2], "0-2,5", id="indexes are sorted first"),
    ],
)
def test_completed_indexes_use_the_api_compressed_form(indexes: list[int], want_text: str) -> None:
    assert format_indexes(indexes) == want_text
    assert parse_indexes(want_text) == set(indexes)


@pytest.mark.parametrize(
    ("existing", "status", "want_types"),
    [
        pytest.param([], "False", [], id="a False condition is not added when absent"),
        pytest.param([], "True", ["Suspended"], id="a True condition is added when absent"),
        pytest.param(
            [{"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "m"}],
            "False", ["Suspended"], id="an existing condition flips in place",
        ),
    ],
)
def test_job_conditions_follow_the_job_controllers_rules(
    existing: list[dict[str, Any]], status: str, want_types: list[str]
) -> None:
    out = job_sync.set_condition(existing, "Suspended", status, "R", "M", now="t")
    assert [c["type"] for c in out] == want_types
    assert all(c["status"] == status for c in out)


def test_an_unchanged_condition_keeps_its_transition_time() -> None:
    existing = [{"type": "Suspended", "status": "True", "reason": "R", "message": "M",
                 "lastTransitionTime": "old"}]
    out = job_sync.set_condition(existing, "Suspended", "True", "R", "M", now="new")
    assert out[0]["lastTransitionTime"] == "old"


def test_pods_running_long_enough_are_due_for_auto_completion() -> None:
    world = World(make_job())
    world.settle()
    assert job_pods.due_for_completion(world.views(), T0 + timedelta(seconds=4), 5.0) == []
    due = job_pods.due_for_completion(world.views(), T0 + timedelta(seconds=5), 5.0)
    assert sorted(due) == sorted(world.pods)


# --- Properties ------------------------------------------------------------------------------

_events = st.lists(
    st.sampled_from(["succeed", "fail", "suspend", "resume", "bind", "tick"]), max_size=12
)


_RUNNING = ("Pending", "Running")


@given(
    shape=st.tuples(st.integers(1, 4), st.integers(0, 3), st.integers(0, 3)),
    wait=st.booleans(), events=_events, pick=st.integers(0, 10),
)
def test_after_any_events_the_controller_converges_and_its_counters_add_up(
    shape: tuple[int, int, int], wait: bool, events: list[str], pick: int
) -> None:
    parallelism, extra, backoff = shape
    world = World(
        make_job(parallelism=parallelism, completions=parallelism + extra, backoff_limit=backoff),
        wait_for_binding=wait,
    )
    world.settle()
    for event in events:
        running = sorted(n for n, p in world.pods.items() if p["status"]["phase"] in _RUNNING)
        target = running[pick % len(running)] if running else None
        if event in ("succeed", "fail") and target is not None:
            world.finish(target, succeeded=event == "succeed")
        elif event == "bind" and target is not None:
            world.bind(target)
        elif event in ("suspend", "resume"):
            world.job["spec"]["suspend"] = event == "suspend"
        world.now += timedelta(seconds=1)
        world.settle()
        status = world.status
        live = [p for p in world.views() if p.live]
        assert world.sync().empty
        assert status.get("active", 0) == len(live)
        assert status["ready"] == sum(p.ready for p in live)
        assert status.get("failed", 0) == sum(p.phase == "Failed" for p in world.views())
        assert len({p.index for p in live}) == len(live), "two running pods share an index"
        assert len(live) <= parallelism
        finished = world.condition("Complete") or world.condition("Failed")
        if finished is not None or world.job["spec"]["suspend"]:
            assert live == []


# --- podFailurePolicy ------------------------------------------------------------------------

EXIT_42_FAILS_JOB = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}
DISRUPTION_IGNORED = {"action": "Ignore",
                      "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}


@pytest.mark.parametrize(
    ("rules", "exit_codes", "conditions", "want"),
    [
        pytest.param([EXIT_42_FAILS_JOB], [("main", 42)], set(), pod_failure_policy.Outcome(
            True, "Container main for pod ns/p failed with exit code 42 matching FailJob rule "
            "at index 0"), id="an exit code In the rule's values fails the Job"),
        pytest.param([EXIT_42_FAILS_JOB], [("main", 1)], set(), pod_failure_policy.COUNTED,
                     id="another exit code counts as a plain failure"),
        pytest.param(
            [{"action": "Ignore", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}}],
            [("main", 137)], set(), pod_failure_policy.Outcome(False),
            id="NotIn ignores exit codes outside the values"),
        pytest.param(
            [{"action": "FailJob",
              "onExitCodes": {"containerName": "side", "operator": "In", "values": [42]}}],
            [("main", 42)], set(), pod_failure_policy.COUNTED,
            id="a rule for another container does not match"),
        pytest.param([DISRUPTION_IGNORED], [("main", 137)], {("DisruptionTarget", "True")},
                     pod_failure_policy.Outcome(False),
                     id="a disrupted pod matching an Ignore rule does not count"),
        pytest.param(
            [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget"}]}],
            [], {("DisruptionTarget", "True")}, pod_failure_policy.Outcome(
                True, "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0"),
            id="a pod condition can fail the Job too"),
        pytest.param([DISRUPTION_IGNORED, EXIT_42_FAILS_JOB], [("main", 42)], set(),
                     pod_failure_policy.Outcome(True, "Container main for pod ns/p failed with "
                                                "exit code 42 matching FailJob rule at index 1"),
                     id="rules are tried in order and the index is the matching rule's"),
    ],
)
def test_pod_failure_policy_rules_decide_like_the_job_controller(
    rules: list[dict[str, Any]], exit_codes: list[tuple[str, int]],
    conditions: set[tuple[str, str]], want: pod_failure_policy.Outcome,
) -> None:
    got = pod_failure_policy.classify(rules, "ns/p", exit_codes, frozenset(conditions))
    assert got == want


def test_a_fail_job_rule_fails_the_job_with_reason_pod_failure_policy() -> None:
    world = World(make_job(backoff_limit=6))
    world.job["spec"]["podFailurePolicy"] = {"rules": [EXIT_42_FAILS_JOB]}
    world.settle()
    victim = world.pod_at(1)["metadata"]["name"]
    world.finish(victim, succeeded=False, exit_code=42)
    world.settle()
    failed = world.condition("Failed")
    assert failed is not None and failed["reason"] == "PodFailurePolicy"
    assert failed["message"] == (
        f"Container main for pod ns/{victim} failed with exit code 42 matching FailJob rule "
        "at index 0")


def test_an_ignored_failure_is_replaced_without_counting_against_the_backoff_limit() -> None:
    world = World(make_job(backoff_limit=0))
    world.job["spec"]["podFailurePolicy"] = {"rules": [DISRUPTION_IGNORED]}
    world.settle()
    victim = world.pod_at(0)["metadata"]["name"]
    world.finish(victim, succeeded=False, exit_code=137)
    world.pods[victim]["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True"})
    world.settle()
    assert world.condition("Failed") is None and "failed" not in world.status
    assert world.status["active"] == 2 and world.pod_at(0)["metadata"]["name"] != victim


# --- restartPolicy OnFailure -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("backoff_limit", "restarts", "want_failed"),
    [
        pytest.param(0, 1, True, id="with backoffLimit 0 one container restart fails the Job"),
        pytest.param(3, 2, False, id="restarts below the limit keep the Job running"),
        pytest.param(3, 3, True, id="restarts reaching the limit fail the Job"),
    ],
)
def test_under_on_failure_container_restarts_count_against_the_backoff_limit(
    backoff_limit: int, restarts: int, want_failed: bool
) -> None:
    world = World(make_job(backoff_limit=backoff_limit))
    world.job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    world.settle()
    pod = world.pod_at(0)
    for _ in range(restarts):
        pod["status"] = job_pods.restarted_status(pod, world.now, exit_code=3)
    world.settle()
    failed = world.condition("Failed")
    assert (failed is not None) == want_failed
    if failed is not None:
        assert failed["reason"] == "BackoffLimitExceeded"
    else:
        assert world.pod_at(0)["status"]["phase"] == "Running" and "failed" not in world.status


def test_a_restarted_container_keeps_its_last_exit_in_last_state() -> None:
    world = World(make_job())
    world.settle()
    pod = world.pod_at(0)
    restarted = job_pods.restarted_status(pod, world.now, exit_code=42)
    main = restarted["containerStatuses"][0]
    assert main["restartCount"] == 1 and "running" in main["state"]
    assert main["lastState"]["terminated"]["exitCode"] == 42
    assert restarted["phase"] == "Running"


def test_a_container_that_restarted_keeps_its_restart_count_when_the_pod_finishes() -> None:
    world = World(make_job())
    world.settle()
    pod = world.pod_at(0)
    pod["status"] = job_pods.restarted_status(pod, world.now, exit_code=1)
    finished = job_pods.finished_status(pod, world.now, succeeded=True)
    main = finished["containerStatuses"][0]
    assert main["restartCount"] == 1 and main["state"]["terminated"]["exitCode"] == 0
    assert "@sha256:" in main["imageID"] and main["containerID"].startswith("containerd://")
