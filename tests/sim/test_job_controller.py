"""The fake Job controller on the sim Store: Pods, status, suspend, failures, binding, scale."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.constants import JOB_COMPLETION_INDEX_KEY
from jobset_infra.sim.apiserver import pod_updates
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.cluster import job_pods, job_sync
from jobset_infra.sim.cluster.job_controller import JOBS, PODS, JobController
from jobset_infra.sim.cluster.nodes import create_nodes
from jobset_infra.tpu.node_pools import parse_nodes
from tests.sim.test_job_sync import make_job
from tests.waiting import until

NS = "team"
T_NODES = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def new_store() -> Store:
    store = Store()
    store.create(GVR("", "v1", "namespaces"), {"metadata": {"name": NS}})
    return store


def create_job(store: Store, name: str = "js-w-0", **kw: Any) -> dict[str, Any]:
    job = make_job(name, **kw)
    del job["metadata"]["uid"]  # the store assigns it
    job["metadata"]["namespace"] = NS
    return store.create(JOBS, job, NS)


def status(store: Store, name: str = "js-w-0") -> dict[str, Any]:
    return dict(store.get(JOBS, name, NS).get("status") or {})


def condition(store: Store, kind: str, name: str = "js-w-0") -> dict[str, Any] | None:
    return next((c for c in status(store, name).get("conditions") or () if c["type"] == kind), None)


def pods(store: Store) -> list[dict[str, Any]]:
    return sorted(store.iter_objects(PODS, NS), key=lambda p: p["metadata"]["name"])


@pytest.fixture
async def store() -> AsyncIterator[Store]:
    yield new_store()


@pytest.fixture
async def jc(store: Store) -> AsyncIterator[JobController]:
    async with JobController(store) as controller:
        yield controller


async def test_a_new_job_gets_running_indexed_pods_and_ready_status(
    store: Store, jc: JobController
) -> None:
    job = create_job(store)
    await until(lambda: status(store).get("ready") == 2)
    got = jc.pods_of(NS, "js-w-0")
    assert [p["metadata"]["annotations"][JOB_COMPLETION_INDEX_KEY] for p in got] == ["0", "1"]
    assert [p["spec"]["hostname"] for p in got] == ["js-w-0-0", "js-w-0-1"]
    assert all(p["status"]["phase"] == "Running" for p in got)
    assert got[0]["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"]
    assert status(store)["active"] == 2 and "startTime" in status(store)


async def test_succeed_job_completes_the_job_with_kubernetes_conditions(
    store: Store, jc: JobController
) -> None:
    create_job(store, parallelism=2, completions=4)
    await until(lambda: status(store).get("ready") == 2)
    job = await jc.succeed_job(NS, "js-w-0")
    kinds = [c["type"] for c in job["status"]["conditions"]]
    assert kinds == ["SuccessCriteriaMet", "Complete"]
    assert job["status"]["succeeded"] == 4 and job["status"]["completedIndexes"] == "0-3"
    assert "completionTime" in job["status"]


async def test_fail_job_fails_it_with_the_given_reason_and_message(
    store: Store, jc: JobController
) -> None:
    create_job(store, parallelism=3, completions=3)
    await until(lambda: status(store).get("ready") == 3)
    job = await jc.fail_job(NS, "js-w-0", reason="PodFailurePolicy", message="exit code 42")
    failed = next(c for c in job["status"]["conditions"] if c["type"] == "Failed")
    assert (failed["reason"], failed["message"]) == ("PodFailurePolicy", "exit code 42")
    assert [p["status"]["phase"] for p in pods(store)] == ["Failed"]
    assert job["status"]["failed"] == 1 and job["status"]["ready"] == 0


async def test_a_failed_pod_is_replaced_until_the_backoff_limit_is_reached(
    store: Store, jc: JobController
) -> None:
    create_job(store, parallelism=1, completions=1, backoff_limit=1)
    await until(lambda: status(store).get("ready") == 1)
    first = pods(store)[0]["metadata"]["name"]
    await jc.fail_pod(NS, first, reason="Evicted", message="node drained")
    await until(lambda: status(store).get("ready") == 1)
    assert status(store)["failed"] == 1 and condition(store, "Failed") is None
    second = next(p["metadata"]["name"] for p in pods(store) if p["status"]["phase"] == "Running")
    assert second != first
    await jc.fail_pod(NS, second)
    failed = await until(lambda: condition(store, "Failed"))
    assert failed["reason"] == "BackoffLimitExceeded"
    assert store.get(PODS, first, NS)["status"]["reason"] == "Evicted"


async def test_suspend_removes_pods_and_resume_brings_them_back(
    store: Store, jc: JobController
) -> None:
    create_job(store, suspend=True)
    await until(lambda: condition(store, "Suspended"))
    assert pods(store) == []
    store.patch(JOBS, "js-w-0", NS, "application/merge-patch+json", {"spec": {"suspend": False}})
    await until(lambda: status(store).get("ready") == 2)
    resumed = condition(store, "Suspended")
    assert resumed is not None and (resumed["status"], resumed["reason"]) == ("False", "JobResumed")
    store.patch(JOBS, "js-w-0", NS, "application/merge-patch+json", {"spec": {"suspend": True}})
    await until(lambda: not pods(store) and status(store).get("ready") == 0)
    suspended = condition(store, "Suspended")
    assert suspended is not None and suspended["status"] == "True"


async def test_with_a_scheduler_pods_run_only_after_they_are_bound(store: Store) -> None:
    async with JobController(store, wait_for_binding=True):
        create_job(store)
        await until(lambda: status(store).get("active") == 2)
        await asyncio.sleep(0.05)
        assert {p["status"]["phase"] for p in pods(store)} == {"Pending"}
        pod = pods(store)[0]
        pod_updates.bind(store, NS, pod["metadata"]["name"], "gke-sim-node-0")
        await until(lambda: status(store).get("ready") == 1)
        assert store.get(PODS, pod["metadata"]["name"], NS)["status"]["phase"] == "Running"


async def test_auto_complete_lets_pods_succeed_after_the_configured_time(store: Store) -> None:
    async with JobController(store, auto_complete_after=0.05):
        create_job(store)
        complete = await until(lambda: condition(store, "Complete"))
        assert complete["reason"] == "CompletionsReached"


async def test_deleting_a_job_in_the_foreground_removes_its_pods_first(
    store: Store, jc: JobController
) -> None:
    create_job(store)
    await until(lambda: len(pods(store)) == 2)
    store.delete(JOBS, "js-w-0", NS, propagation="Foreground")
    await until(lambda: store.try_get(JOBS, "js-w-0", NS) is None)
    assert pods(store) == []


async def test_thousands_of_jobs_each_get_their_pods_in_one_pass(
    store: Store, jc: JobController
) -> None:
    count = 1000
    for i in range(count):
        create_job(store, f"js-w-{i}")
        if i % 200 == 0:
            await asyncio.sleep(0)
    started = time.monotonic()
    await until(
        lambda: all((j.get("status") or {}).get("ready") == 2 for j in store.iter_objects(JOBS)),
        timeout=20)
    assert len(pods(store)) == 2 * count
    # one decision per Job: the echoes of the controller's own writes do not trigger more passes
    assert jc.syncs == count, f"{jc.syncs} syncs for {count} Jobs"
    assert time.monotonic() - started < 10


async def test_the_controller_keeps_working_after_its_watch_streams_are_dropped(
    store: Store, jc: JobController
) -> None:
    create_job(store, "before")
    await until(lambda: status(store, "before").get("ready") == 2)
    for stream in store.watches():
        stream.close()  # what a dropped connection does to a watcher
    await asyncio.sleep(0.05)
    create_job(store, "after")
    await until(lambda: status(store, "after").get("ready") == 2)


async def test_over_http_a_job_created_by_a_client_gets_pods_a_client_can_list() -> None:
    async with Sim() as sim, aiohttp.ClientSession() as client:
        await sim.start_component(JobController(sim.store))
        job = make_job("web-0", parallelism=3, completions=3)
        del job["metadata"]["uid"], job["metadata"]["namespace"]
        async with client.post(sim.url + "/apis/batch/v1/namespaces/default/jobs",
                               json=job) as created:
            assert created.status == 201

        async def listed() -> list[dict[str, Any]]:
            async with client.get(sim.url + "/api/v1/namespaces/default/pods",
                                  params={"labelSelector": "job-name=web-0"}) as resp:
                return list((await resp.json())["items"])

        deadline = time.monotonic() + 5
        while len(items := await listed()) < 3 or any(
            p["status"]["phase"] != "Running" for p in items
        ):
            assert time.monotonic() < deadline, items
            await asyncio.sleep(0.02)
        assert sorted(p["spec"]["hostname"] for p in items) == ["web-0-0", "web-0-1", "web-0-2"]
        async with client.get(sim.url + "/apis/batch/v1/namespaces/default/jobs/web-0") as resp:
            assert (await resp.json())["status"]["ready"] == 3


@pytest.mark.parametrize(
    ("backoff_limit", "want_failed_condition"),
    [
        pytest.param(0, True, id="with backoffLimit 0 a deleted running pod fails the Job"),
        pytest.param(2, False, id="within the backoff limit a deleted pod is replaced"),
    ],
)
async def test_a_running_pod_deleted_by_someone_counts_as_a_failure(
    store: Store, jc: JobController, backoff_limit: int, want_failed_condition: bool
) -> None:
    create_job(store, backoff_limit=backoff_limit)
    await until(lambda: status(store).get("ready") == 2)
    victim = pods(store)[0]["metadata"]["name"]
    store.delete(PODS, victim, NS)  # what `kubectl delete pod` does
    await until(lambda: status(store).get("failed") == 1)
    if want_failed_condition:
        failed = await until(lambda: condition(store, "Failed"))
        assert failed["reason"] == "BackoffLimitExceeded"
    else:
        await until(lambda: status(store).get("ready") == 2)
        assert victim not in {p["metadata"]["name"] for p in pods(store)}
        assert condition(store, "FailureTarget") is None


async def test_pods_removed_with_their_job_leave_nothing_behind(
    store: Store, jc: JobController
) -> None:
    create_job(store)
    await until(lambda: status(store).get("ready") == 2)
    store.delete(JOBS, "js-w-0", NS, propagation="Background")
    await until(lambda: not pods(store))
    await asyncio.sleep(0.05)
    assert jc._ghosts == {} and jc._counted == {}


async def test_a_pod_failed_by_a_status_write_from_outside_fails_the_job_past_its_limit(
    store: Store, jc: JobController
) -> None:
    create_job(store, backoff_limit=0)
    await until(lambda: status(store).get("ready") == 2)
    pod = pods(store)[1]
    failed_status = {**pod["status"], "phase": "Failed", "reason": "DeletionByPodGC"}
    store.update(PODS, {**pod, "status": failed_status}, subresource="status")
    failed = await until(lambda: condition(store, "Failed"))
    assert failed["reason"] == "BackoffLimitExceeded"
    assert status(store)["terminating"] == 0 and status(store)["failed"] == 1


async def test_fail_pod_with_an_exit_code_triggers_the_jobs_pod_failure_policy(
    store: Store, jc: JobController
) -> None:
    job = make_job("js-w-0")
    job["spec"]["podFailurePolicy"] = {
        "rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]
    }
    del job["metadata"]["uid"]
    job["metadata"]["namespace"] = NS
    store.create(JOBS, job, NS)
    await until(lambda: status(store).get("ready") == 2)
    await jc.fail_pod(NS, pods(store)[0]["metadata"]["name"], exit_code=42)
    failed = await until(lambda: condition(store, "Failed"))
    assert failed["reason"] == "PodFailurePolicy" and "exit code 42" in failed["message"]


async def test_a_sim_with_a_scheduler_keeps_unschedulable_pods_pending() -> None:
    async with Sim(job_controller=True, scheduler=True) as sim:
        await create_nodes(sim.store, parse_nodes("cpu:2"), T_NODES)
        job = make_job("j-0", parallelism=2, completions=2)  # selects pool-1: no such nodes
        del job["metadata"]["uid"]
        job["metadata"]["namespace"] = "default"
        sim.store.create(JOBS, job, "default")

        def unschedulable() -> list[dict[str, Any]]:
            found = list(sim.store.iter_objects(PODS, "default"))
            marked = [p for p in found if any(
                c["type"] == "PodScheduled" and c["status"] == "False"
                for c in p["status"].get("conditions") or ())]
            return marked if len(marked) == 2 else []

        for pod in await until(unschedulable):
            assert pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]


async def test_fail_pod_under_on_failure_restarts_the_container_in_place(
    store: Store, jc: JobController
) -> None:
    job = make_job("js-w-0", backoff_limit=2)
    job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    del job["metadata"]["uid"]
    job["metadata"]["namespace"] = NS
    store.create(JOBS, job, NS)
    await until(lambda: status(store).get("ready") == 2)
    name = pods(store)[0]["metadata"]["name"]
    pod = await jc.fail_pod(NS, name, exit_code=3)
    assert pod["status"]["phase"] == "Running"
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 1
    assert condition(store, "Failed") is None
    await jc.fail_pod(NS, name, exit_code=3)
    failed = await until(lambda: condition(store, "Failed"))
    assert failed["reason"] == "BackoffLimitExceeded"
    evicted = make_job("js-w-1", backoff_limit=0)
    evicted["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    del evicted["metadata"]["uid"]
    evicted["metadata"]["namespace"] = NS
    store.create(JOBS, evicted, NS)
    await until(lambda: status(store, "js-w-1").get("ready") == 2)
    victim = jc.pods_of(NS, "js-w-1")[0]["metadata"]["name"]
    gone = await jc.fail_pod(NS, victim, in_place=False, reason="Evicted", message="drained")
    assert gone["status"]["phase"] == "Failed" and gone["status"]["reason"] == "Evicted"


# --- Property: whatever happens, the controller reaches a fixed point that adds up ----------

_OPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "suspend", "resume", "fail", "succeed", "delete-pod",
                         "delete-job", "restart-container"]),
        st.integers(0, 2), st.integers(0, 7),
    ),
    max_size=14,
)


def _apply_op(store: Store, op: str, job: str, pick: int) -> bool:
    """Carry out one operation; True when it failed a running Pod (a failure to count)."""
    live = sorted(
        (p for p in store.iter_objects(PODS, NS)
         if p["metadata"]["labels"].get("job-name") == job
         and p["status"].get("phase") in ("Pending", "Running")),
        key=lambda p: p["metadata"]["name"],
    )
    pod = live[pick % len(live)] if live else None
    exists = store.try_get(JOBS, job, NS) is not None
    if op == "create" and not exists:
        create_job(store, job, parallelism=2, completions=3, backoff_limit=2)
    elif op in ("suspend", "resume") and exists:
        store.patch(JOBS, job, NS, "application/merge-patch+json",
                    {"spec": {"suspend": op == "suspend"}})
    elif op in ("fail", "succeed") and pod is not None:
        done = job_pods.finished_status(pod, T_NODES, succeeded=op == "succeed")
        store.update(PODS, {**pod, "status": done}, subresource="status")
        return op == "fail"
    elif op == "restart-container" and pod is not None and pod["status"].get("phase") == "Running":
        restarted = job_pods.restarted_status(pod, T_NODES)
        store.update(PODS, {**pod, "status": restarted}, subresource="status")
    elif op == "delete-pod" and pod is not None:
        store.delete(PODS, pod["metadata"]["name"], NS)
        return True
    elif op == "delete-job" and exists:
        store.delete(JOBS, job, NS, propagation="Background")
    return False


@given(ops=_OPS)
def test_after_any_operations_every_job_is_at_a_fixed_point_that_adds_up(
    ops: list[tuple[str, int, int]],
) -> None:
    async def scenario() -> None:
        store = new_store()
        failures: dict[str, int] = {}
        async with JobController(store) as jc:
            for op, which, pick in ops:
                name = f"job-{which}"
                if op == "delete-job":
                    failures.pop(name, None)
                if _apply_op(store, op, name, pick):
                    failures[name] = failures.get(name, 0) + 1
                await jc.settled()
            for job in store.iter_objects(JOBS, NS):
                uid = job["metadata"]["uid"]
                views = jc._pods(job)
                plan = job_sync.sync_job(job, views, counted=jc._counted.get(uid, set()),
                                         now=T_NODES, wait_for_binding=False)
                assert plan.empty, f"{job['metadata']['name']} not at a fixed point: {plan}"
                live = [v for v in views if v.live]
                got = job.get("status") or {}
                assert got.get("active", 0) == len(live) and got["ready"] == len(live)
                assert len({v.index for v in live}) == len(live) <= 2
                finished = any(c["type"] in ("Complete", "Failed") and c["status"] == "True"
                               for c in got.get("conditions") or ())
                if finished or job["spec"]["suspend"]:
                    assert live == []
                # every Pod failed or deleted while it ran counts once, as in Kubernetes
                assert got.get("failed", 0) == failures.get(job["metadata"]["name"], 0)
        assert not jc.background.tasks

    asyncio.run(scenario())


async def test_pods_admission_refuses_fail_to_create_until_their_service_account_exists(
        store: Store, jc: JobController) -> None:
    """A Pod naming a missing ServiceAccount is refused (403), so the Job records FailedCreate
    as the real Job controller does, and gets its Pods once the ServiceAccount is created."""
    job = make_job("js-w-0")
    del job["metadata"]["uid"]
    job["metadata"]["namespace"] = NS
    job["spec"]["template"]["spec"]["serviceAccountName"] = "trainer"
    store.create(JOBS, job, NS)
    failed = await until(lambda: [e for e in store.iter_objects(GVR("", "v1", "events"), NS)
                                     if e["reason"] == "FailedCreate"])
    assert len(failed) == 1 and failed[0]["type"] == "Warning"
    assert failed[0]["message"].startswith('Error creating: pods "js-w-0-')
    assert failed[0]["message"].endswith(
        f'is forbidden: error looking up service account {NS}/trainer: serviceaccount '
        '"trainer" not found')
    assert pods(store) == []
    store.create(GVR("", "v1", "serviceaccounts"), {"metadata": {"name": "trainer"}}, NS)
    await until(lambda: len(pods(store)) == 2)
    assert {p["spec"]["serviceAccountName"] for p in pods(store)} == {"trainer"}
