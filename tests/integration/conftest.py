"""Integration harness: an API server (the sim, or the real kube-apiserver in envtest's shape)
and the real controller in-process over real HTTP.

Every test using `cluster` runs once per backend: `sim`, and `envtest` (etcd + kube-apiserver
built by `make tools`; without them *skipped*, never counted as passed, and failed under
JOBSET_REQUIRE_REAL=1 as in CI). Like upstream's envtest suite, the
tests set Job status by hand (no Job controller); on envtest, where no garbage collector runs, the
harness finishes foreground deletions itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.defaulting_policy import defaulting_policy, defaulting_policy_binding
from jobset_infra.api.defaults import default
from jobset_infra.cluster import install
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.core.job_view import parse_time
from jobset_infra.controller.runtime.auth import ClusterAccess, for_url
from jobset_infra.controller.runtime.caches import ForeignJob
from jobset_infra.controller.runtime.kube import (
    MERGE_PATCH,
    AlreadyExistsError,
    KubeClient,
    NotFoundError,
)
from jobset_infra.controller.runtime.manager import RunningController, run_controller
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, SERVICES, Resource
from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import JobSetBuilder
from tests.integration import envtest
from tests.realcluster import real_cluster
from tests.waiting import until

T = TypeVar("T")
CRD_FILE = Path(__file__).parents[2] / "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
_names = itertools.count()


def fast_config(**sections: Any) -> ControllerConfig:
    """Controller config for tests: no ports, no election, 2 workers (sections override)."""
    data: dict[str, Any] = {
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": "0"},
        "controller": {"workers": 2},
        "logging": {"level": "warning"},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value}
    return ControllerConfig.from_dict(data)


async def quiescent(cluster: Cluster, ctl: RunningController, name: str = "js") -> bool:
    """The controller has caught up with JobSet `name`: its caches hold the server's latest
    JobSet and Jobs (our own writes' watch events included) and no key is queued, delayed or
    being processed. Tests wait on this instead of sleeping "long enough"."""
    js = await cluster.jobset(name)
    controller = ctl.controller
    cached = controller.jobsets.get(f"{cluster.namespace}/{name}")
    if js is None or cached is None:
        return False
    if cached["metadata"].get("resourceVersion") != js["metadata"]["resourceVersion"]:
        return False
    for job in (await cluster.api.list(JOBS, cluster.namespace))["items"]:
        entry = controller.jobs.store.get(f"{cluster.namespace}/{job['metadata']['name']}")
        if isinstance(entry, ForeignJob):
            continue  # not a child: only its name is cached, not its version
        if entry is None or entry.child.resource_version != job["metadata"]["resourceVersion"]:
            return False
    queue = controller.queue
    return len(queue) == 0 and not queue.processing and queue.pending_delayed() == 0


async def reconciled(ctl: RunningController, key: str, times: int = 1) -> None:
    """Queue `key` and wait until the controller has finished `times` more reconciles."""
    for _ in range(times):
        done = _reconciled_past(ctl, ctl.controller.reconciles)
        ctl.controller.queue.add(key)
        await until(done, f"a reconcile of {key}")


def _reconciled_past(ctl: RunningController, count: int) -> Callable[[], bool]:
    """Whether the controller has finished more than `count` reconciles."""
    return lambda: ctl.controller.reconciles > count


def manifest(builder: JobSetBuilder) -> dict[str, Any]:
    """The JobSet as a user submits it, after upstream's defaulting (our CRD + defaults)."""
    dumped: dict[str, Any] = default(builder.model()).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    return dumped


@dataclass
class Cluster:
    """A test's view of the API server: an unrestricted client and a fresh namespace."""

    backend: str
    access: ClusterAccess
    api: KubeClient
    namespace: str
    has_gc: bool
    sim: Any = None
    controllers: list[RunningController] = field(default_factory=list)

    async def start_controller(
        self, config: ControllerConfig | None = None, identity: str | None = None
    ) -> RunningController:
        config = config or fast_config(controller={"watchNamespace": self.namespace})
        ctl = await _start(config, self.access, identity)
        self.controllers.append(ctl)
        return ctl

    async def create_jobset(self, builder: JobSetBuilder) -> dict[str, Any]:
        body = manifest(builder)
        body["metadata"]["namespace"] = self.namespace
        return await self.api.create(JOBSETS, body, self.namespace)

    async def jobset(self, name: str) -> dict[str, Any] | None:
        try:
            return await self.api.request("GET", JOBSETS.path(self.namespace, name))
        except NotFoundError:
            return None

    async def jobs(self, live_only: bool = True) -> list[dict[str, Any]]:
        await self.collect_garbage()
        items = (await self.api.list(JOBS, self.namespace))["items"]
        if live_only:
            items = [j for j in items if not j["metadata"].get("deletionTimestamp")]
        return sorted(items, key=lambda j: j["metadata"]["name"])

    async def job_names(self) -> list[str]:
        return [j["metadata"]["name"] for j in await self.jobs()]

    async def services(self) -> list[str]:
        items = (await self.api.list(SERVICES, self.namespace))["items"]
        return sorted(s["metadata"]["name"] for s in items)

    async def set_job_status(self, name: str, change: str) -> None:
        """Mark Job `name` "ready", "completed" or "failed", as the Job controller would."""
        job = await self.api.request("GET", JOBS.path(self.namespace, name))
        now = datetime.now(UTC)  # a finish before the start is refused (Kubernetes 1.31+)
        # startTime is immutable once set on an unsuspended Job: keep the one a first call wrote
        # (a second call in another second was refused with 422)
        started = parse_time((job.get("status") or {}).get("startTime")) or now
        step = getattr(job_from(job).started(started), change)
        status = (step() if change == "ready" else step(now)).obj()["status"]
        spec = job.get("spec") or {}
        if change == "completed" and spec.get("completionMode") == "Indexed":
            # A real API server checks completedIndexes against completions for Indexed Jobs.
            n = int(spec.get("completions") or 1)
            status["completedIndexes"] = "0" if n == 1 else f"0-{n - 1}"
        await self.api.patch(
            JOBS,
            name,
            {"status": status},
            namespace=self.namespace,
            content_type=MERGE_PATCH,
            subresource="status",
        )

    async def collect_garbage(self) -> None:
        """Without a garbage collector (envtest), finish foreground deletions of Jobs."""
        if self.has_gc:
            return
        for job in (await self.api.list(JOBS, self.namespace))["items"]:
            meta = job["metadata"]
            if meta.get("deletionTimestamp") and meta.get("finalizers"):
                await self.api.patch(
                    JOBS, meta["name"], {"metadata": {"finalizers": None}}, namespace=self.namespace
                )

    async def events(self, reason: str | None = None) -> list[dict[str, Any]]:
        items = (await self.api.list(EVENTS, self.namespace))["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]

    async def condition(self, name: str, type_: str) -> dict[str, Any] | None:
        js = await self.jobset(name) or {}
        for cond in (js.get("status") or {}).get("conditions") or ():
            if cond["type"] == type_ and cond["status"] == "True":
                return dict(cond)
        return None


async def _start(
    config: ControllerConfig, access: ClusterAccess, identity: str | None
) -> RunningController:
    from jobset_infra.controller.runtime.manager import start_controller

    return await start_controller(config, access=access, identity=identity)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A hung integration test fails after 90 s instead of eating the CI budget (default 300 s).
    A test marked `sim_only(reason)` needs something only the sim has (fault injection, request
    counts, a garbage collector in envtest's shape): its envtest case is deselected, not skipped,
    so the envtest tier reports no skips."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if "tests/integration/" in str(item.fspath) and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(90))
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("cluster") if callspec is not None else None
        (dropped if backend == "envtest" and item.get_closest_marker("sim_only") else kept).append(
            item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def envtest_server() -> Iterator[RunningCluster]:
    """etcd + kube-apiserver from `make tools` (skipped without them, failed with
    JOBSET_REQUIRE_REAL=1)."""
    with real_cluster(apiserver_only=True) as server:
        yield server


@pytest.fixture(scope="session")
def shared_sim() -> Iterator[Any]:
    """One sim for the session (registering the CRD compiles its schema: ~1 s); tests are
    isolated by namespace. It runs on its own thread; tests reach it over HTTP only."""
    from jobset_infra.sim.apiserver.server import SimThread
    from jobset_infra.sim.command import register_crd

    with SimThread(port=0) as sim:
        sim.call(register_crd)
        yield sim


@pytest.fixture(params=["sim", pytest.param("envtest", marks=pytest.mark.envtest)])
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    """An API server with our CRD, a fresh namespace and an admin client; controllers started
    through it are stopped afterwards."""
    namespace = f"it-{next(_names)}"
    if request.param == "sim":
        sim = request.getfixturevalue("shared_sim")
        async with KubeClient(for_url(sim.url), enforce_permissions=False) as api:
            await api.create(NAMESPACES, {"metadata": {"name": namespace}})
            c = Cluster("sim", for_url(sim.url), api, namespace, has_gc=True, sim=sim)
            try:
                yield c
            finally:
                await _stop_all(c)
        return
    server: RunningCluster = request.getfixturevalue("envtest_server")
    async with KubeClient(server.access(), enforce_permissions=False) as api:
        await _install_crd(api)
        await api.create(NAMESPACES, {"metadata": {"name": namespace}})
        c = Cluster("envtest", server.access(), api, namespace, has_gc=False)
        try:
            yield c
        finally:
            await _stop_all(c)


async def _stop_all(c: Cluster) -> None:
    for ctl in c.controllers:
        await asyncio.wait_for(ctl.stop(), 20)  # a hanging shutdown is a failure, not a stall


async def _install_crd(api: KubeClient) -> None:
    crd = yaml.safe_load(CRD_FILE.read_text())
    with contextlib.suppress(AlreadyExistsError):  # installed by an earlier test
        await api.create(CRDS, crd)

    async def established() -> bool:
        got = await api.request("GET", CRDS.path(None, crd["metadata"]["name"]))
        conds = (got.get("status") or {}).get("conditions") or ()
        if not any(c["type"] == "Established" and c["status"] == "True" for c in conds):
            return False
        return await install.crd_served(api, got)  # Established comes before creates work

    await envtest.wait_established(established)
    # upstream's webhook defaults the CRD cannot express, as the install has them
    await install.apply_all(api, [defaulting_policy(), defaulting_policy_binding()])


@pytest.fixture
async def controller(cluster: Cluster) -> AsyncIterator[RunningController]:
    ctl = await cluster.start_controller()
    await ctl.wait_leader(5)
    yield ctl


__all__ = ["Cluster", "fast_config", "manifest", "run_controller"]
