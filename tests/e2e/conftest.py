"""A whole cluster for the end-to-end examples suite, shared by one test module, on two backends.

`sim`: the sim API server with the fake Job controller and the scheduler, our CRD and our JobSet
controller in the same event loop over real HTTP. `real` (marker `real`): the real local control
plane from `make tools` (etcd, kube-apiserver, kube-controller-manager with the real Job controller
and garbage collector, kube-scheduler, kwok Nodes), with our CRD, RBAC and controller Deployment
installed as the JobSetSystem component installs them; the cluster's system node (a real node) runs
the controller's Pods from its image with their ServiceAccount's token, so the real server
authorizes every call against our generated RBAC. Both get Nodes shaped like GKE node pools (CPU
pools and TPU v5e slice pools from `jobset_infra.tpu.node_pools`). Each case gets its own
namespace; `World` holds the small verbs a case uses to drive Pods the way a kubelet, a preemption
or a bad config would: on the sim through the fake Job controller, on the real cluster through the
kwok exit annotations."""

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
from typing import Any, Protocol, TypeVar

import pytest
import pytest_asyncio
import yaml

from jobset_infra.api import constants as k
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION, EXIT_REASON_ANNOTATION
from jobset_infra.controller.runtime.auth import for_url
from jobset_infra.controller.runtime.kube import MERGE_PATCH, KubeClient
from jobset_infra.controller.runtime.kube import NotFoundError as ApiNotFound
from jobset_infra.controller.runtime.manager import start_controller
from jobset_infra.controller.runtime.resources import JOBSETS, Resource
from jobset_infra.controller.runtime.resources import NODES as NODE_RES
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.cluster.job_controller import JobController
from jobset_infra.sim.cluster.job_pods import JOB_NAME_LABEL
from jobset_infra.sim.cluster.nodes import create_nodes
from jobset_infra.sim.cluster.scheduler import Scheduler
from jobset_infra.sim.command import register_crd
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.node_pools import PoolSpec, parse_nodes
from tests.e2e.mirror import Mirror
from tests.integration.conftest import fast_config
from tests.waiting import timeouts_scaled, until

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
JOBS = GVR("batch", "v1", "jobs")
PODS = GVR("", "v1", "pods")
SERVICES = GVR("", "v1", "services")
PVCS = GVR("", "v1", "persistentvolumeclaims")
NODES_GVR = GVR("", "v1", "nodes")
EVENTS_GVR = GVR("events.k8s.io", "v1", "events")
JOBSET_GVR = GVR(k.GROUP, k.VERSION, k.PLURAL)
JOB_RES = Resource("batch", "v1", "jobs", "Job")
POD_RES = Resource("", "v1", "pods", "Pod")
NAMESPACE_RES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
ACCOUNT_RES = Resource("", "v1", "serviceaccounts", "ServiceAccount")
MIRRORED = (JOBSETS, JOB_RES, POD_RES, NODE_RES, Resource("", "v1", "services", "Service"),
            Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
            Resource("events.k8s.io", "v1", "events", "Event"))
# Three CPU pools besides GKE's default pool (exclusive placement on CPU needs several), and
# TPU v5e pools of both slice shapes the examples ask for.
NODES = "cpu:4,v5e-2x4:4,v5e-4x4:2"
EXTRA_CPU_POOLS = 3
_namespaces = itertools.count()
# How much longer a wait may take on the real cluster: real Job controller syncs, kwok stages
# and graceful Pod deletion, on a shared 2-core machine.
_TIMEOUT_SCALE = {"sim": 1.0, "real": 4.0}


def cpu_pools() -> list[PoolSpec]:
    base = parse_nodes("cpu:2")[0]
    return [
        dataclasses.replace(base, name=f"cpu-{i}", labels={tpu.GKE_NODEPOOL_LABEL: f"cpu-{i}"})
        for i in range(EXTRA_CPU_POOLS)
    ]


def _service_accounts(manifest: dict[str, Any]) -> set[str]:
    """The ServiceAccounts the JobSet's Pod templates name (other than `default`)."""
    names = set()
    for rjob in (manifest.get("spec") or {}).get("replicatedJobs") or []:
        pod = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
        name = (pod.get("spec") or {}).get("serviceAccountName")
        if name and name != "default":
            names.add(name)
    return names


class Store(Protocol):
    """The reads a case makes: the sim's Store, or the Mirror of a real cluster."""

    def list(self, gvr: GVR, namespace: str | None = None) -> Any: ...

    def get(self, gvr: GVR, name: str, namespace: str | None = None) -> dict[str, Any]: ...


class Pods(Protocol):
    """What happens to Pods: the fake Job controller on the sim, kwok annotations for real."""

    async def succeed_job(self, namespace: str, name: str) -> None: ...

    async def fail_pod(self, namespace: str, name: str, code: int) -> None: ...

    async def preempt(self, namespace: str, name: str) -> None: ...


@dataclasses.dataclass
class World:
    """The running cluster and the verbs the cases drive it with (in-process, same loop)."""

    backend: str
    store: Store
    pods: Pods
    api: KubeClient
    kubectl_args: tuple[str, ...]  # --server=... or --kubeconfig=...
    created: list[tuple[str, str]] = dataclasses.field(default_factory=list)

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
        await self.clear_earlier_cases()
        namespace = f"e2e-{next(_namespaces)}"
        await self.api.create(NAMESPACE_RES, {"metadata": {"name": namespace}})
        for account in sorted(_service_accounts(manifest)):
            # As a user must on a real cluster: the API server refuses a Pod whose
            # ServiceAccount does not exist (its ServiceAccount admission plugin).
            await self.api.create(ACCOUNT_RES, {"metadata": {"name": account}}, namespace)
        manifest["metadata"]["namespace"] = namespace
        if change is not None:
            change(manifest)
        await self.api.create(JOBSETS, manifest, namespace)
        name = manifest["metadata"]["name"]
        self.created.append((namespace, name))
        # The real backend reads from a watch-fed mirror: wait until it has seen the create.
        await until(lambda: bool(self.store.list(JOBSET_GVR, namespace).items),
                    f"{namespace}/{name} in the store")
        return namespace, name

    async def clear_earlier_cases(self) -> None:
        """Delete what a failed earlier case left, so its Pods hold no nodes or pools now."""
        for namespace, name in self.created:
            if self.live_pods(namespace) or self.live_jobs(namespace):
                await self.remove(namespace, name)
        self.created.clear()

    async def remove(self, namespace: str, name: str) -> None:
        """Delete the JobSet in the foreground, and wait until its Jobs and Pods are gone so
        they free their nodes for the next case."""
        with contextlib.suppress(ApiNotFound):
            await self.api.delete(JOBSETS, name, namespace=namespace, propagation="Foreground")
        await until(lambda: not self.live_jobs(namespace) and not self.live_pods(namespace),
                    f"{namespace}/{name} Jobs and Pods deleted")

    async def delete_job(self, namespace: str, name: str) -> None:
        await self.api.delete(JOB_RES, name, namespace=namespace, propagation="Foreground")

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

    def live_pods(self, namespace: str) -> list[dict[str, Any]]:
        return [p for p in self.store.list(PODS, namespace).items
                if not p["metadata"].get("deletionTimestamp")]

    def pods_of(self, namespace: str, job: str) -> list[dict[str, Any]]:
        """The Pods Job `job` owns, by completion index then name."""
        found = [p for p in self.store.list(PODS, namespace).items
                 if (p["metadata"].get("labels") or {}).get(JOB_NAME_LABEL) == job]
        return sorted(found, key=lambda p: (
            int((p["metadata"].get("annotations") or {}).get(k.JOB_COMPLETION_INDEX_KEY, 0)),
            p["metadata"]["name"]))

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
            await self.pods.succeed_job(namespace, job["metadata"]["name"])

    async def succeed_job(self, namespace: str, name: str) -> None:
        await self.pods.succeed_job(namespace, name)

    def first_pod(self, namespace: str, rjob: str, index: int) -> str:
        pods = [p for p in self.pods_of(namespace, self.job(namespace, rjob, index)
                                        ["metadata"]["name"])
                if not p["metadata"].get("deletionTimestamp")]
        assert pods, f"Job {index} of {rjob} has no Pods"
        name: str = pods[0]["metadata"]["name"]
        return name

    async def exit(self, namespace: str, rjob: str, index: int = 0, code: int = 1) -> None:
        """The main container of the first Pod of Job `index` of `rjob` exits with `code`."""
        pod = self.first_pod(namespace, rjob, index)
        await self.pods.fail_pod(namespace, pod, code)

    async def preempt(self, namespace: str, rjob: str, index: int = 0) -> None:
        """The scheduler preempts the first Pod of Job `index`: DisruptionTarget, then killed."""
        await self.pods.preempt(namespace, self.first_pod(namespace, rjob, index))

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






# --- Pods on the sim: the fake Job controller ---------------------------------------------------


@dataclasses.dataclass
class SimPods:
    sim: Sim
    jobs: JobController

    async def succeed_job(self, namespace: str, name: str) -> None:
        await self.jobs.succeed_job(namespace, name)

    async def fail_pod(self, namespace: str, name: str, code: int) -> None:
        await self.jobs.fail_pod(namespace, name, exit_code=code, in_place=False)

    async def preempt(self, namespace: str, name: str) -> None:
        pod = self.sim.store.get(PODS, name, namespace)
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        status = dict(pod["status"])
        status["phase"] = "Failed"
        status["conditions"] = [
            *[c for c in status.get("conditions") or () if c["type"] == "PodScheduled"],
            _disruption(at),
            {"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": at},
        ]
        status["containerStatuses"] = [
            {**cs, "ready": False, "state": {"terminated": {
                "exitCode": 137, "reason": "Error", "finishedAt": at}}}
            for cs in status.get("containerStatuses") or ()
        ]
        self.sim.store.update(PODS, {**pod, "status": status}, subresource="status")


def _disruption(at: str) -> dict[str, str]:
    return {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
            "message": "preempted by a higher-priority workload", "lastTransitionTime": at}


# --- Pods on the real cluster: kwok's exit annotations ------------------------------------------


@dataclasses.dataclass
class RealPods:
    api: KubeClient
    mirror: Mirror

    async def _annotate(self, namespace: str, name: str, code: int, reason: str = "") -> None:
        annotations = {EXIT_CODE_ANNOTATION: str(code)}
        if reason:
            annotations[EXIT_REASON_ANNOTATION] = reason
        with contextlib.suppress(ApiNotFound):  # already gone: nothing left to end
            await self.api.patch(POD_RES, name, {"metadata": {"annotations": annotations}},
                                 namespace=namespace, content_type=MERGE_PATCH)

    async def succeed_job(self, namespace: str, name: str) -> None:
        """Every Pod of the Job exits 0, including the ones the Job controller starts after the
        first ones finish (completions > parallelism), until the Job is Complete."""

        def finished() -> bool:
            try:
                job = self.mirror.get(JOBS, name, namespace)
            except Exception:
                return True  # deleted: nothing to finish
            return any(c.get("type") in ("Complete", "SuccessCriteriaMet", "Failed")
                       and c.get("status") == "True"
                       for c in (job.get("status") or {}).get("conditions") or ())

        ended: set[str] = set()
        deadline = time.monotonic() + 60
        while not finished() and time.monotonic() < deadline:
            for pod in self.mirror.list(PODS, namespace).items:
                meta = pod["metadata"]
                if ((meta.get("labels") or {}).get(JOB_NAME_LABEL) == name
                        and meta["name"] not in ended and not meta.get("deletionTimestamp")
                        and (pod.get("status") or {}).get("phase") == "Running"):
                    ended.add(meta["name"])
                    await self._annotate(namespace, meta["name"], 0)
            await asyncio.sleep(0.05)

    async def fail_pod(self, namespace: str, name: str, code: int) -> None:
        await self._annotate(namespace, name, code)

    async def preempt(self, namespace: str, name: str) -> None:
        """DisruptionTarget first (as the scheduler writes it), then the container is killed."""
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        await self.api.patch(POD_RES, name, {"status": {"conditions": [_disruption(at)]}},
                             namespace=namespace, subresource="status",
                             content_type="application/strategic-merge-patch+json")
        await self._annotate(namespace, name, 137)


# --- the fixtures -------------------------------------------------------------------------------


def controller_config() -> Any:
    return fast_config(controller={"workers": 4},
                       featureGates={"RestartJob": True, "InPlaceRestart": True})


@contextlib.asynccontextmanager
async def sim_world() -> AsyncIterator[World]:
    sim = Sim(port=0)
    jobs_controller = JobController(sim.store, wait_for_binding=True)
    sim.add_component(Scheduler(sim.store))
    sim.add_component(jobs_controller)
    await sim.start()
    try:
        register_crd(sim.store)
        await create_nodes(sim.store, [*parse_nodes(NODES), *cpu_pools()], datetime.now(UTC))
        controller = await start_controller(controller_config(), url=sim.url)
        try:
            async with KubeClient(for_url(sim.url), enforce_permissions=False) as api:
                yield World("sim", sim.store, SimPods(sim, jobs_controller), api,
                            (f"--server={sim.url}",))
        finally:
            await controller.stop()
    finally:
        await sim.stop()


@contextlib.asynccontextmanager
async def real_world() -> AsyncIterator[World]:
    from jobset_infra.cluster.command import controller_image
    from jobset_infra.cluster.install import install_jobset_system, system_node_install
    from jobset_infra.manifests.crd import jobset_crd
    from tests.realcluster import real_cluster

    # The CRD from the start: else the first case's foreground deletion waits up to 30 s for
    # the garbage collector to find JobSets (ClusterOptions.crds). The controller runs from its
    # image on the cluster's system node; every workload Pod lands on kwok's pools.
    with real_cluster(NODES, extra_pools=tuple(cpu_pools()), crds=(jobset_crd(),),
                      system_node=True) as cluster:
        config = controller_config().model_copy(update={
            "metrics": fast_config().metrics.model_copy(update={"bind_address": ":8443"}),
            "health": fast_config().health.model_copy(
                update={"health_probe_bind_address": ":8081"})})
        # One CPU requested: its container then weighs as much as the host's processes
        # beside it when the machine is busy (cpu.shares 1024; 250m gives 256).
        install = system_node_install(controller_image(), replicas=1, config=config,
                                      resources={"cpu_request": "1"})
        async with cluster.client() as api:
            await install_jobset_system(api, install)
            mirror = Mirror(api, MIRRORED)
            await mirror.start()
            try:
                yield World("real", mirror, RealPods(api, mirror), api,
                            (f"--kubeconfig={cluster.kubeconfig}",))
            finally:
                await mirror.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module",
                        params=["sim", pytest.param("real", marks=pytest.mark.real)])
async def world(request: pytest.FixtureRequest) -> AsyncIterator[World]:
    make = sim_world if request.param == "sim" else real_world
    with timeouts_scaled(_TIMEOUT_SCALE[request.param]):
        async with make() as w:
            yield w
