"""Exclusive placement end to end: the real controller over HTTP, the sim with its scheduler.

Four TPU-like node pools of two hosts each (`v5e-2x4:4`); JobSets whose replicated job asks for
`alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool`.

Unlike the shared `cluster` fixture (conftest.py, which also runs on envtest and sets Job status
by hand), these tests need pods to be created, scheduled and to run, so they use the sim only,
with its fake Job controller waiting for the sim scheduler to bind pods.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.controller.runtime.manager import RunningController, run_controller
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.hooks import ApiRequest, Intercept
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.cluster.job_controller import JobController
from jobset_infra.sim.cluster.nodes import create_nodes
from jobset_infra.sim.cluster.scheduler import Scheduler
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.tpu.node_pools import parse_nodes
from tests.integration.conftest import fast_config
from tests.waiting import until

CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
JOBSETS = GVR(c.GROUP, c.VERSION, c.PLURAL)
JOBS = GVR("batch", "v1", "jobs")
PODS = GVR("", "v1", "pods")
NODES = GVR("", "v1", "nodes")
EVENTS = GVR("events.k8s.io", "v1", "events")
POOL = "cloud.google.com/gke-nodepool"
TPU = "google.com/tpu"
NS = "default"
CRD_FILE = "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"

pytestmark = pytest.mark.timeout(60)


@dataclass
class Cluster:
    sim: Sim
    jobs: JobController
    scheduler: Scheduler
    config: ControllerConfig

    @property
    def store(self) -> Any:
        return self.sim.store


def controller_config(**placement: Any) -> ControllerConfig:
    return fast_config(placement=placement)


@contextlib.asynccontextmanager
async def controller(cluster: Cluster) -> AsyncIterator[RunningController]:
    async with run_controller(cluster.config, url=cluster.sim.url) as ctl:
        await ctl.wait_leader(timeout=10)
        yield ctl


async def start_cluster(nodes: str = "v5e-2x4:4", **placement: Any) -> Cluster:
    sim = Sim(port=0)
    jobs = JobController(sim.store, wait_for_binding=True)
    scheduler = Scheduler(sim.store)
    sim.add_component(jobs)
    sim.add_component(scheduler)
    await sim.start()
    sim.store.create(CRDS, _crd())
    if nodes:
        await create_nodes(sim.store, parse_nodes(nodes), datetime.now(UTC))
    return Cluster(sim, jobs, scheduler, controller_config(**placement))


@functools.cache
def _crd() -> dict[str, Any]:
    with open(CRD_FILE) as f:
        crd: dict[str, Any] = yaml.safe_load(f)  # parsed once; the store copies what it stores
    return crd


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    started = await start_cluster()
    try:
        yield started
    finally:
        await started.sim.stop()


async def passes_over(ctl: RunningController, key: str, times: int) -> None:
    """Queue `key` `times` times, each time waiting until the controller has worked it off."""
    queue = ctl.controller.queue
    for _ in range(times):
        before = ctl.controller.reconciles
        queue.add(key)
        await until(
            lambda before=before: ctl.controller.reconciles > before
            and len(queue) == 0
            and not queue.processing,
            f"a pass over {key}", timeout=15)


def tpu_jobset(name: str, replicas: int, *, suspend: bool = False) -> dict[str, Any]:
    builder = (
        make_jobset(name, NS)
        .exclusive(POOL)
        .replicated_job("slice", replicas=replicas, parallelism=2)
        .pod_spec(
            "slice",
            restartPolicy="Never",
            containers=[{"name": "jax", "image": "jax:tpu", "resources": {"limits": {TPU: "4"}}}],
            nodeSelector={
                "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                "cloud.google.com/gke-tpu-topology": "2x4",
            },
            tolerations=[{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
        )
        .job_spec("slice", backoffLimit=0)
    )
    return builder.suspend(suspend).obj()


def jobs_of(store: Any, jobset: str) -> list[dict[str, Any]]:
    items = store.list(JOBS, NS, label_selector=f"{c.JOBSET_NAME_KEY}={jobset}").items
    return [j for j in items if not j["metadata"].get("deletionTimestamp")]


def pool_of(job: dict[str, Any]) -> str | None:
    return (job["spec"]["template"]["spec"].get("nodeSelector") or {}).get(POOL)


def pools_of(store: Any, jobset: str) -> dict[str, str | None]:
    return {j["metadata"]["name"]: pool_of(j) for j in jobs_of(store, jobset)}


def running_pods(store: Any, jobset: str) -> dict[tuple[str, str], str]:
    """(Job name, pod name) -> pool of its node, for Running pods of the JobSet."""
    out = {}
    for pod in store.list(PODS, NS, label_selector=f"{c.JOBSET_NAME_KEY}={jobset}").items:
        node = pod["spec"].get("nodeName")
        if node and pod.get("status", {}).get("phase") == "Running":
            labels = store.get(NODES, node)["metadata"]["labels"]
            job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
            out[(job, pod["metadata"]["name"])] = labels[POOL]
    return out


def condition(store: Any, jobset: str, type_: str) -> dict[str, Any] | None:
    status = store.get(JOBSETS, jobset, NS).get("status") or {}
    for cond in status.get("conditions") or ():
        if cond["type"] == type_:
            return dict(cond)
    return None


def assert_no_shared_pools(store: Any, *jobsets: str) -> None:
    held = [
        (p, j["metadata"]["name"])
        for js in jobsets
        for j in jobs_of(store, js)
        if (p := pool_of(j)) and not j["spec"].get("suspend") and not _finished(j)
    ]
    pools = [p for p, _ in held]
    assert len(pools) == len(set(pools)), f"pool shared: {sorted(held)}"


def _finished(job: dict[str, Any]) -> bool:
    return any(
        cond["type"] in ("Complete", "Failed") and cond["status"] == "True"
        for cond in (job.get("status") or {}).get("conditions") or ()
    )


@pytest.mark.slow
async def test_four_replicas_land_one_job_per_pool(cluster: Cluster) -> None:
    async with controller(cluster):
        cluster.store.create(JOBSETS, tpu_jobset("train", 4), NS)
        await until(lambda: len(running_pods(cluster.store, "train")) == 8, "8 pods", timeout=15)
    pods = running_pods(cluster.store, "train")
    by_job: dict[str, set[str]] = {}
    for (job, _), pool in pods.items():
        by_job.setdefault(job, set()).add(pool)
    assert all(len(pools) == 1 for pools in by_job.values()), by_job
    assert sorted(p for pools in by_job.values() for p in pools) == [
        f"v5e-2x4-{i}" for i in range(4)
    ]


async def test_second_jobset_waits_with_a_reason_and_starts_when_the_first_finishes(
    cluster: Cluster,
) -> None:
    async with controller(cluster):
        cluster.store.create(JOBSETS, tpu_jobset("first", 4), NS)
        await until(lambda: len(running_pods(cluster.store, "first")) == 8, "first", timeout=15)
        cluster.store.create(JOBSETS, tpu_jobset("second", 2), NS)
        pending = await until(
            lambda: condition(cluster.store, "second", c.CONDITION_PLACEMENT_PENDING),
            "placement pending condition",
            timeout=15)
        assert pending["status"] == "True"
        assert pending["reason"] == c.PLACEMENT_NO_FIT_REASON
        assert "busy: v5e-2x4-0 (held by default/first-slice-0)" in pending["message"]
        assert jobs_of(cluster.store, "second") == []
        events = await until(lambda: [
                e
                for e in cluster.store.list(EVENTS, NS).items
                if e.get("reason") == c.PLACEMENT_NO_FIT_REASON
                and e["regarding"]["name"] == "second"
            ], "a Warning event saying why", timeout=15)
        assert events[0]["type"] == "Warning"
        for job in jobs_of(cluster.store, "first"):
            await cluster.jobs.succeed_job(NS, job["metadata"]["name"])
        await until(lambda: len(running_pods(cluster.store, "second")) == 4, "second", timeout=15)
        await until(lambda: (
                (cond := condition(cluster.store, "second", c.CONDITION_PLACEMENT_PENDING))
                and cond["status"] == "False"
            ), "the pending condition flipped to False", timeout=15)


async def test_waiting_jobset_starts_when_new_pools_appear(cluster: Cluster) -> None:
    async with controller(cluster):
        cluster.store.create(JOBSETS, tpu_jobset("first", 4), NS)
        await until(lambda: len(running_pods(cluster.store, "first")) == 8, "first", timeout=15)
        cluster.store.create(JOBSETS, tpu_jobset("second", 2), NS)
        await until(lambda: condition(cluster.store, "second", c.CONDITION_PLACEMENT_PENDING),
                    "second waits for pools", timeout=15)
        # the autoscaler (or an admin) adds two pools: Node events, not Job events, wake it
        new_pools = parse_nodes("v5e-2x4:6")[4:]
        await create_nodes(cluster.store, new_pools, datetime.now(UTC))
        # well inside the 10 s safety-net retry, so only the Node events can have woken it
        await until(lambda: len(running_pods(cluster.store, "second")) == 4, "second", timeout=5.0)
    assert set(running_pods(cluster.store, "second").values()) == {p.name for p in new_pools}
    assert_no_shared_pools(cluster.store, "first", "second")


async def test_two_jobsets_created_at_once_never_share_a_pool(cluster: Cluster) -> None:
    async with controller(cluster):
        for name in ("a", "b", "c"):
            cluster.store.create(JOBSETS, tpu_jobset(name, 2), NS)
        await until(lambda: sum(len(running_pods(cluster.store, n)) for n in "abc") == 8,
                    "two of the three JobSets running", timeout=15)
        assert_no_shared_pools(cluster.store, "a", "b", "c")
        started = [n for n in "abc" if jobs_of(cluster.store, n)]
        assert len(started) == 2, "all or nothing: the third JobSet must not start partly"


class FailJobCreatesAfter:
    """A request hook: the first `allow` Job creates succeed, every later one fails with a 500."""

    def __init__(self, allow: int) -> None:
        self.allow, self.seen = allow, 0

    def __call__(self, request: ApiRequest) -> Intercept | None:
        if request.verb == "create" and request.resource == "jobs":
            self.seen += 1
            if self.seen > self.allow:
                return Intercept(error=StatusError(500, "InternalError", "injected failure"))
        return None


async def test_controller_restart_mid_allocation_does_not_double_book(cluster: Cluster) -> None:
    crash = FailJobCreatesAfter(allow=1)
    cluster.sim.add_hook(crash)
    async with controller(cluster):
        cluster.store.create(JOBSETS, tpu_jobset("a", 3), NS)
        await until(lambda: crash.seen >= 3, "a's creates attempted", timeout=15)
        assert len(jobs_of(cluster.store, "a")) == 1, "the controller died half way through a"
    cluster.sim.remove_hook(crash)
    # A new controller with an empty memory must read occupancy from the Jobs that exist.
    cluster.store.create(JOBSETS, tpu_jobset("b", 1), NS)
    cluster.store.create(JOBSETS, tpu_jobset("c", 1), NS)
    async with controller(cluster) as ctl:
        await until(lambda: len(jobs_of(cluster.store, "a")) == 3, "a completed", timeout=15)
        await until(
            lambda: len(jobs_of(cluster.store, "b")) + len(jobs_of(cluster.store, "c")) == 1,
            "one of b and c placed",
            timeout=15)
        held = "c" if jobs_of(cluster.store, "b") else "b"
        await until(
            lambda: (cond := condition(cluster.store, held, c.CONDITION_PLACEMENT_PENDING))
            and cond["status"] == "True",
            f"{held} held for a pool", timeout=15)
        # A double booking would come from a later pass over the held JobSet: force two.
        await passes_over(ctl, f"{NS}/{held}", 2)
        assert_no_shared_pools(cluster.store, "a", "b", "c")
        assert len(jobs_of(cluster.store, "b")) + len(jobs_of(cluster.store, "c")) == 1


async def test_deleted_pool_moves_the_job_to_a_free_pool_after_restart(cluster: Cluster) -> None:
    js = tpu_jobset("train", 2)
    js["spec"]["failurePolicy"] = {"maxRestarts": 3}
    async with controller(cluster):
        cluster.store.create(JOBSETS, js, NS)
        await until(lambda: len(running_pods(cluster.store, "train")) == 4, "running", timeout=15)
        lost = pools_of(cluster.store, "train")["train-slice-0"]
        for node in cluster.store.list(NODES, label_selector=f"{POOL}={lost}").items:
            cluster.store.delete(NODES, node["metadata"]["name"])
        await until(
            lambda: (cluster.store.get(JOBSETS, "train", NS).get("status") or {}).get("restarts"),
            "a restart",
            timeout=15)
        await until(lambda: len(running_pods(cluster.store, "train")) == 4, "rerun", timeout=15)
        assert lost not in set(running_pods(cluster.store, "train").values())
        assert_no_shared_pools(cluster.store, "train")


async def test_suspend_releases_pools_and_resume_reallocates(cluster: Cluster) -> None:
    async with controller(cluster):
        cluster.store.create(JOBSETS, tpu_jobset("low", 4), NS)
        await until(lambda: len(running_pods(cluster.store, "low")) == 8, "low runs", timeout=15)
        await _set_suspend(cluster, "low", True)  # Kueue preempts it
        await until(lambda: not running_pods(cluster.store, "low"), "low stopped", timeout=15)
        cluster.store.create(JOBSETS, tpu_jobset("high", 2), NS)
        await until(lambda: len(running_pods(cluster.store, "high")) == 4, "high runs", timeout=15)
        await _set_suspend(cluster, "low", False)  # Kueue re-admits it: only 2 pools are free
        pending = await until(lambda: (
                (cond := condition(cluster.store, "low", c.CONDITION_PLACEMENT_PENDING))
                and cond["status"] == "True"
                and cond
            ), "low waits for pools", timeout=15)
        assert "busy" in pending["message"]
        assert not running_pods(cluster.store, "low")
        for job in jobs_of(cluster.store, "high"):
            await cluster.jobs.succeed_job(NS, job["metadata"]["name"])
        await until(lambda: len(running_pods(cluster.store, "low")) == 8, "low resumed", timeout=15)
        assert_no_shared_pools(cluster.store, "low", "high")


async def _set_suspend(cluster: Cluster, name: str, suspend: bool) -> None:
    current = cluster.store.get(JOBSETS, name, NS)
    current = {**current, "spec": {**current["spec"], "suspend": suspend}}
    cluster.store.update(JOBSETS, current)
    await asyncio.sleep(0)


async def test_declared_pool_with_zero_nodes_is_assigned_and_targeted() -> None:
    declared = {
        "name": "flex-0",
        "nodeCount": 2,
        "labels": {
            "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-tpu-topology": "2x4",
        },
        "allocatable": {TPU: "4"},
    }
    cluster = await start_cluster(nodes="", domains=[declared])
    try:
        async with controller(cluster):
            cluster.store.create(JOBSETS, tpu_jobset("flex", 1), NS)
            await until(lambda: jobs_of(cluster.store, "flex"), "the Job", timeout=15)
            assert pools_of(cluster.store, "flex") == {"flex-slice-0": "flex-0"}
            pods = await until(lambda: cluster.store.list(PODS, NS).items,
                               "pods of the Job", timeout=15)
            assert all(p["spec"]["nodeSelector"][POOL] == "flex-0" for p in pods)
            assert all(not p["spec"].get("nodeName") for p in pods), "no node exists yet"
            # The autoscaler brings the pool up: its pods land there.
            await create_nodes(cluster.store, _flex_pool(), datetime.now(UTC))
            await until(lambda: len(running_pods(cluster.store, "flex")) == 2, "runs", timeout=15)
            assert set(running_pods(cluster.store, "flex").values()) == {"flex-0"}
    finally:
        await cluster.sim.stop()


def _flex_pool() -> Any:
    (pool,) = parse_nodes("v5e-2x4:1")
    from dataclasses import replace

    labels = {**pool.labels, POOL: "flex-0"}
    return (replace(pool, name="flex-0", labels=labels),)


async def test_affinity_mode_keeps_jobs_apart_through_the_scheduler() -> None:
    cluster = await start_cluster(mode="affinity")
    try:
        async with controller(cluster):
            for name in ("a", "b"):
                cluster.store.create(JOBSETS, tpu_jobset(name, 2), NS)
            await until(lambda: sum(len(running_pods(cluster.store, n)) for n in "ab") == 8,
                        "8 pods", timeout=15)
            assert all(pool_of(j) is None for n in "ab" for j in jobs_of(cluster.store, n))
            by_job: dict[str, set[str]] = {}
            for name in "ab":
                for (job, _), pool in running_pods(cluster.store, name).items():
                    by_job.setdefault(job, set()).add(pool)
            assert all(len(p) == 1 for p in by_job.values()), by_job
            assert len({p for pools in by_job.values() for p in pools}) == 4
    finally:
        await cluster.sim.stop()


def _forbid_nodes(request: ApiRequest) -> Intercept | None:
    """RBAC without `nodes` list/watch, as a controller installed with a narrow role has."""
    if request.resource == "nodes" and request.verb in ("list", "watch", "get"):
        return Intercept(error=StatusError(403, "Forbidden", "nodes is forbidden"))
    return None


async def test_auto_mode_without_node_access_falls_back_to_affinity(cluster: Cluster) -> None:
    cluster.sim.add_hook(_forbid_nodes)
    async with controller(cluster):
        cluster.store.create(JOBSETS, tpu_jobset("a", 2), NS)
        await until(lambda: len(running_pods(cluster.store, "a")) == 4, "4 pods", timeout=15)
    for job in jobs_of(cluster.store, "a"):
        pod = job["spec"]["template"]["spec"]
        assert pool_of(job) is None  # no domain was assigned: the controller cannot see Nodes
        anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert [t["topologyKey"] for t in anti] == [POOL]
    pools: dict[str, set[str]] = {}
    for (job_name, _), pool in running_pods(cluster.store, "a").items():
        pools.setdefault(job_name, set()).add(pool)
    assert all(len(p) == 1 for p in pools.values()) and len(set.union(*pools.values())) == 2


async def test_node_selector_strategy_uses_the_pools_an_admin_labelled(cluster: Cluster) -> None:
    # What upstream's hack/label_nodes script does: one pool per Job, labelled and tainted.
    for pool, job in (("v5e-2x4-2", "ns-slice-0"), ("v5e-2x4-3", "ns-slice-1")):
        for stored in cluster.store.list(NODES, label_selector=f"{POOL}={pool}").items:
            node = copy.deepcopy(stored)  # the store's objects are shared snapshots
            node["metadata"]["labels"][c.NAMESPACED_JOB_KEY] = f"{NS}_{job}"
            node["spec"]["taints"].append(
                {"key": c.NO_SCHEDULE_TAINT_KEY, "value": "true", "effect": "NoSchedule"}
            )
            cluster.store.update(NODES, node)
    js = tpu_jobset("ns", 2)
    js["metadata"]["annotations"][c.NODE_SELECTOR_STRATEGY_KEY] = "true"
    async with controller(cluster):
        cluster.store.create(JOBSETS, js, NS)
        await until(lambda: len(running_pods(cluster.store, "ns")) == 4, "4 pods", timeout=15)
    placed = {job: pool for (job, _), pool in running_pods(cluster.store, "ns").items()}
    assert placed == {"ns-slice-0": "v5e-2x4-2", "ns-slice-1": "v5e-2x4-3"}


async def test_kueue_admission_selector_picks_the_matching_pool() -> None:
    cluster = await start_cluster(nodes="v5e-2x4:2,v5e-4x4:1")
    try:
        js = tpu_jobset("queued", 1, suspend=True)  # Kueue's webhook suspends it on create
        del js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"][
            "cloud.google.com/gke-tpu-topology"
        ]
        async with controller(cluster):
            cluster.store.create(JOBSETS, js, NS)
            await until(lambda: jobs_of(cluster.store, "queued"), "suspended Job", timeout=15)
            assert pools_of(cluster.store, "queued") == {"queued-slice-0": None}
            # Admission: Kueue merges the flavor's node labels into the template and unsuspends.
            admitted = copy.deepcopy(cluster.store.get(JOBSETS, "queued", NS))
            pod = admitted["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
            pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "4x4"
            admitted["spec"]["suspend"] = False
            cluster.store.update(JOBSETS, admitted)
            await until(lambda: len(running_pods(cluster.store, "queued")) == 2, "runs", timeout=15)
        assert set(running_pods(cluster.store, "queued").values()) == {"v5e-4x4-0"}
    finally:
        await cluster.sim.stop()
