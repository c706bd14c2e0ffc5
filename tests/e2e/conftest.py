"""A whole simulated cluster for the end-to-end examples suite, shared by one test module.

The sim API server with the fake Job controller and the scheduler, Nodes shaped like GKE node pools
(CPU pools and TPU v5e slice pools from `jobset_infra.sim.cluster.nodes`), our CRD, and our JobSet
controller in the same event loop over real HTTP. Each case gets its own namespace; `World` holds
the small verbs a test uses to drive Pods the way a kubelet, a preemption or a bad config would.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
import pytest_asyncio
import yaml

from jobset_infra.api import constants as k
from jobset_infra.controller.runtime.auth import for_url
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.manager import RunningController, start_controller
from jobset_infra.controller.runtime.resources import JOBSETS
from jobset_infra.sim.apiserver.errors import NotFoundError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.apiserver.store import NAMESPACES
from jobset_infra.sim.cluster.job_controller import JobController
from jobset_infra.sim.cluster.nodes import PoolSpec, create_nodes, parse_nodes
from jobset_infra.sim.cluster.scheduler import Scheduler
from jobset_infra.sim.command import register_crd
from jobset_infra.tpu import constants as tpu
from tests.integration.conftest import fast_config

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
JOBS = GVR("batch", "v1", "jobs")
PODS = GVR("", "v1", "pods")
SERVICES = GVR("", "v1", "services")
PVCS = GVR("", "v1", "persistentvolumeclaims")
JOBSET_GVR = GVR(k.GROUP, k.VERSION, k.PLURAL)
# Three CPU pools besides GKE's default pool (exclusive placement on CPU needs several), and
# TPU v5e pools of both slice shapes the examples ask for.
NODES = "cpu:4,v5e-2x4:4,v5e-4x4:2"
EXTRA_CPU_POOLS = 3
_namespaces = itertools.count()


def cpu_pools() -> list[PoolSpec]:
    base = parse_nodes("cpu:2")[0]
    return [
        dataclasses.replace(base, name=f"cpu-{i}", labels={tpu.GKE_NODEPOOL_LABEL: f"cpu-{i}"})
        for i in range(EXTRA_CPU_POOLS)
    ]


@dataclasses.dataclass
class World:
    """The running cluster and the verbs the cases drive it with (in-process, same loop)."""

    sim: Sim
    jobs_controller: JobController
    api: KubeClient
    controller: RunningController
    created: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    @property
    def store(self) -> Any:
        return self.sim.store

    # --- submitting ---------------------------------------------------------------------------

    async def submit(self, path: Path, change: Callable[[dict[str, Any]], None] | None = None
                     ) -> tuple[str, str]:
        """Create the JobSet in `path` over HTTP in a fresh namespace; return (namespace, name)."""
        return await self.submit_manifest(yaml.safe_load(path.read_text()), change)

    async def submit_manifest(
        self, manifest: dict[str, Any], change: Callable[[dict[str, Any]], None] | None = None
    ) -> tuple[str, str]:
        """Create a copy of `manifest` in a fresh namespace; return (namespace, name)."""
        manifest = copy.deepcopy(manifest)
        self.clear_earlier_cases()
        namespace = f"e2e-{next(_namespaces)}"
        self.store.create(NAMESPACES, {"metadata": {"name": namespace}})
        manifest["metadata"]["namespace"] = namespace
        if change is not None:
            change(manifest)
        await self.api.create(JOBSETS, manifest, namespace)
        self.created.append((namespace, manifest["metadata"]["name"]))
        return namespace, manifest["metadata"]["name"]

    def clear_earlier_cases(self) -> None:
        """Delete what a failed earlier case left, so its Pods hold no nodes or pools now (the
        sim's garbage collector finishes a foreground delete before it returns)."""
        for namespace, name in self.created:
            with contextlib.suppress(NotFoundError):
                self.store.delete(JOBSET_GVR, name, namespace, propagation="Foreground")
        self.created.clear()

    async def remove(self, namespace: str, name: str) -> None:
        """Delete the JobSet in the foreground so its Pods free their nodes for the next case."""
        self.store.delete(JOBSET_GVR, name, namespace, propagation="Foreground")
        await until(lambda: not self.live_jobs(namespace), f"{namespace}/{name} Jobs deleted")

    # --- reading --------------------------------------------------------------------------------

    def jobset(self, namespace: str, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = self.store.get(JOBSET_GVR, name, namespace)
        return obj

    def live_jobs(self, namespace: str, rjob: str | None = None) -> list[dict[str, Any]]:
        items = self.store.list(JOBS, namespace).items
        return [
            j for j in items
            if not j["metadata"].get("deletionTimestamp")
            and (rjob is None or j["metadata"]["labels"].get(k.REPLICATED_JOB_NAME_KEY) == rjob)
        ]

    def job(self, namespace: str, rjob: str, index: int = 0) -> dict[str, Any]:
        for job in self.live_jobs(namespace, rjob):
            if job["metadata"]["labels"].get(k.JOB_INDEX_KEY) == str(index):
                return job
        raise AssertionError(f"no live Job {index} of {rjob} in {namespace}")

    def ready_jobs(self, namespace: str, rjob: str | None = None, attempt: int = 0) -> int:
        """Jobs of restart attempt `attempt` whose every Pod is running and ready."""
        return sum(
            1 for j in self.live_jobs(namespace, rjob)
            if j["metadata"]["labels"].get(k.RESTARTS_KEY) == str(attempt)
            and (j.get("status") or {}).get("ready", 0) == j["spec"].get("parallelism", 1)
        )

    # --- driving Pods ---------------------------------------------------------------------------

    async def all_running(self, namespace: str, name: str, attempt: int = 0) -> None:
        """Wait until every Job of restart attempt `attempt` exists with all its Pods ready."""
        spec = self.jobset(namespace, name)["spec"]
        want = sum(r.get("replicas", 1) for r in spec["replicatedJobs"])
        await until(lambda: self.ready_jobs(namespace, attempt=attempt) == want,
                    f"{want} ready Jobs of attempt {attempt} in {namespace}",
                    explain=lambda: self.describe(namespace, name))

    async def succeed(self, namespace: str, rjob: str | None = None) -> None:
        """Every Pod of the live Jobs (of `rjob`) exits 0."""
        for job in self.live_jobs(namespace, rjob):
            await self.jobs_controller.succeed_job(namespace, job["metadata"]["name"])

    def first_pod(self, namespace: str, rjob: str, index: int) -> str:
        pods = self.jobs_controller.pods_of(namespace, self.job(namespace, rjob, index)
                                            ["metadata"]["name"])
        assert pods, f"Job {index} of {rjob} has no Pods"
        name: str = pods[0]["metadata"]["name"]
        return name

    async def exit(self, namespace: str, rjob: str, index: int = 0, code: int = 1) -> None:
        """The main container of the first Pod of Job `index` of `rjob` exits with `code`."""
        pod = self.first_pod(namespace, rjob, index)
        await self.jobs_controller.fail_pod(namespace, pod, exit_code=code, in_place=False)

    async def preempt(self, namespace: str, rjob: str, index: int = 0) -> None:
        """The scheduler preempts the first Pod of Job `index`: DisruptionTarget, then killed."""
        name = self.first_pod(namespace, rjob, index)
        pod = self.store.get(PODS, name, namespace)
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = dict(pod["status"])
        status["phase"] = "Failed"
        status["conditions"] = [
            *[c for c in status.get("conditions") or () if c["type"] == "PodScheduled"],
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
             "message": "preempted by a higher-priority workload", "lastTransitionTime": at},
            {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": at},
        ]
        status["containerStatuses"] = [
            {**cs, "ready": False, "state": {"terminated": {
                "exitCode": 137, "reason": "Error", "finishedAt": at}}}
            for cs in status.get("containerStatuses") or ()
        ]
        self.store.update(PODS, {**pod, "status": status}, subresource="status")

    async def finished(self, namespace: str, name: str) -> dict[str, Any]:
        """Wait for the JobSet's terminal state; return the JobSet."""
        await until(lambda: (self.jobset(namespace, name).get("status") or {})
                    .get("terminalState"), f"{namespace}/{name} to finish",
                    explain=lambda: self.describe(namespace, name))
        return self.jobset(namespace, name)

    def describe(self, namespace: str, name: str) -> str:
        """The JobSet's conditions, its Jobs and their Pods, for a failure message."""
        status = self.jobset(namespace, name).get("status") or {}
        lines = [f"JobSet {name}: restarts={status.get('restarts', 0)} conditions=" + ", ".join(
            f"{c['type']}={c['status']}/{c.get('reason')}: {c.get('message')}"
            for c in status.get("conditions") or ())]
        for job in self.store.list(JOBS, namespace).items:
            labels = job["metadata"]["labels"]
            counts = {x: y for x, y in (job.get("status") or {}).items()
                      if x in ("active", "ready", "succeeded", "failed")}
            lines.append(f"  Job {job['metadata']['name']} attempt={labels.get(k.RESTARTS_KEY)} "
                         f"status={counts}")
        for pod in self.store.list(PODS, namespace).items:
            scheduled = [c.get("message") for c in (pod.get("status") or {}).get("conditions") or ()
                         if c["type"] == "PodScheduled" and c["status"] == "False"]
            lines.append(f"  Pod {pod['metadata']['name']} {pod['status'].get('phase')} "
                         f"node={pod['spec'].get('nodeName')} {scheduled or ''}")
        return "\n".join(lines)


async def until(check: Callable[[], T], what: str, timeout: float = 10.0, *,
                explain: Callable[[], str] = str) -> T:
    """Poll `check` until it is truthy (returned); fail naming `what` (and what `explain` says
    about the cluster) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g}s waiting for {what}\n{explain()}")
        await asyncio.sleep(0.02)
    return value


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world() -> AsyncIterator[World]:
    sim = Sim(port=0)
    jobs_controller = JobController(sim.store, wait_for_binding=True)
    sim.add_component(Scheduler(sim.store))
    sim.add_component(jobs_controller)
    await sim.start()
    try:
        register_crd(sim.store)
        await create_nodes(sim.store, [*parse_nodes(NODES), *cpu_pools()], datetime.now(UTC))
        config = fast_config(
            controller={"workers": 4},
            featureGates={"RestartJob": True, "InPlaceRestart": True},
        )
        controller = await start_controller(config, url=sim.url)
        try:
            async with KubeClient(for_url(sim.url), enforce_permissions=False) as api:
                yield World(sim, jobs_controller, api, controller)
        finally:
            await controller.stop()
    finally:
        await sim.stop()
