"""The chaos tier's world: the real local control plane (etcd, kube-apiserver, the controller
manager with the real Job controller and garbage collector, the scheduler, kwok Nodes), our CRD
and RBAC applied as the JobSetSystem component renders them, and our controller run as two
`jobset-controller` processes with the ServiceAccount's token (so RBAC, APF and every answer are
the real server's), restarted when they exit, as a kubelet restarts a container.

The processes run from the source tree this file is in (`cwd` = its repository), so the same
tests run against older code from an older checkout (how the tier was seen failing before each
fix). Pods are kwok's: a test ends one by annotating it with an exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import ControllerConfig, LogFormat
from jobset_infra.cluster.install import apply, apply_all, local_install
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION
from jobset_infra.cluster.layout import token_kubeconfig
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.cluster.processes import free_port
from jobset_infra.controller.runtime.kube import MERGE_PATCH, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, Resource
from jobset_infra.manifests.controller_spec import ControllerInstall
from jobset_infra.manifests.jobset_system import SystemObjects
from tests.chaos.invariants import attempt_of
from tests.waiting import until

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
PODS = Resource("", "v1", "pods", "Pod")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                    "ClusterRoleBinding", namespaced=False)
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


# --- the controller, as two supervised processes ------------------------------------------------


@dataclass
class Replica:
    """One `jobset-controller` process slot; `exits` counts ends (a crash loop shows here)."""

    name: str
    health_port: int
    metrics_port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    exits: list[int] = field(default_factory=list)

    def readyz(self) -> tuple[int, str]:
        return http_get(f"http://127.0.0.1:{self.health_port}/readyz")

    def healthz(self) -> tuple[int, str]:
        return http_get(f"http://127.0.0.1:{self.health_port}/healthz")

    def kill(self) -> None:
        """SIGKILL: a crashed pod, no Lease release. The supervisor starts it again."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)


class Fleet:
    """Replicas run with the ServiceAccount's kubeconfig; an exited one is started again after
    1 s, doubling to 8 s (a kubelet's restart backoff, shortened)."""

    def __init__(self, folder: Path, kubeconfig: Path, config: ControllerConfig,
                 names: tuple[str, ...] = ("a", "b")) -> None:
        self.folder = folder
        self.kubeconfig = kubeconfig
        self.config_file = folder / "config.yaml"
        self.replicas = {n: Replica(n, free_port(), free_port(), folder / f"{n}.log")
                         for n in names}
        self._config = config
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._tasks = [asyncio.create_task(self._supervise(r)) for r in self.replicas.values()]

    async def stop(self) -> None:
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for replica in self.replicas.values():
            if replica.process is not None and replica.process.poll() is None:
                replica.process.send_signal(signal.SIGTERM)
                try:
                    await asyncio.to_thread(replica.process.wait, 10)
                except subprocess.TimeoutExpired:
                    replica.process.kill()
                    await asyncio.to_thread(replica.process.wait)

    def _argv(self, replica: Replica) -> list[str]:
        config = self._config.model_copy(update={
            "health": self._config.health.model_copy(update={
                "health_probe_bind_address": f"127.0.0.1:{replica.health_port}"}),
            "metrics": self._config.metrics.model_copy(update={
                "bind_address": f"127.0.0.1:{replica.metrics_port}"}),
        })
        path = self.folder / f"{replica.name}.config.yaml"
        path.write_text(config.to_yaml())
        return [sys.executable, "-m", "jobset_infra.controller.runtime.main",
                f"--config={path}", f"--kubeconfig={self.kubeconfig}"]

    async def _supervise(self, replica: Replica) -> None:
        delay = 1.0
        while not self._stopping:
            started = time.monotonic()
            with replica.log.open("ab") as out:
                replica.process = subprocess.Popen(
                    self._argv(replica), cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                    env={**os.environ, "POD_NAME": replica.name},
                )
            code = await asyncio.to_thread(replica.process.wait)
            replica.exits.append(code)
            delay = 1.0 if time.monotonic() - started > 30 else min(8.0, delay * 2)
            await asyncio.sleep(delay)

    def describe(self, lines: int = 8) -> str:
        """Each replica's exits and last log lines (for a failure message)."""
        parts = []
        for replica in self.replicas.values():
            text = replica.log.read_text(errors="replace") if replica.log.exists() else ""
            tail = "\n    ".join(text.splitlines()[-lines:])
            parts.append(f"replica {replica.name}: exits {replica.exits}; log tail:\n    {tail}")
        return "\n".join(parts)

    def logs(self, name: str) -> list[dict[str, Any]]:
        lines = self.replicas[name].log.read_text(errors="replace").splitlines()
        return [json.loads(x) for x in lines if x.startswith("{")]


# --- the control plane with our system on it ----------------------------------------------------


@dataclass
class Plane:
    cluster: RunningCluster
    api: KubeClient
    install: ControllerInstall
    objects: SystemObjects
    fleet: Fleet | None = None

    @property
    def namespace(self) -> str:
        return self.install.namespace

    async def install_system(self, *, without_binding: bool = False) -> None:
        """Apply the CRD, namespace, ServiceAccount, roles and bindings (not the Deployment:
        the Fleet runs the processes); `without_binding` leaves the ClusterRoleBinding out."""
        objects = [self.objects.crd, *self.objects.prerequisites(),
                   self.objects.metrics_reader_role]
        if without_binding:
            objects.remove(self.objects.cluster_role_binding)
        await apply_all(self.api, objects)

    async def apply(self, manifest: Mapping[str, Any]) -> None:
        await apply(self.api, manifest)

    async def token(self, account: str, namespace: str | None = None) -> str:
        path = ACCOUNTS.path(namespace or self.namespace, account, "token")
        answer = await self.api.request("POST", path, body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}})
        token: str = answer["status"]["token"]
        return token

    async def without_binding(self) -> None:
        """Back to the state before any controller ran: the fleet stopped (SIGTERM: the leader
        releases its Lease) and the ClusterRoleBinding deleted. The RBAC-at-start scenario
        starts from here whichever test of the shared cluster ran before it."""
        if self.fleet is not None:
            await self.fleet.stop()
            self.fleet = None
        binding = self.objects.cluster_role_binding["metadata"]["name"]
        with contextlib.suppress(NotFoundError):
            await self.api.delete(BINDINGS, binding, propagation=None)

    async def start_fleet(self, config: ControllerConfig) -> Fleet:
        folder = self.cluster.layout.folder / "replicas"
        folder.mkdir(parents=True, exist_ok=True)
        kubeconfig = folder / "kubeconfig"
        user = f"system:serviceaccount:{self.namespace}:{self.install.name}"
        token = await self.token(self.install.name)
        kubeconfig.write_text(yaml.safe_dump(token_kubeconfig(self.cluster.layout, user, token)))
        self.fleet = Fleet(folder, kubeconfig, config)
        self.fleet.start()
        return self.fleet

    async def leader(self) -> str:
        """The replica holding the Lease ("" when none does)."""
        name = self.install.config.leader_election.resource_name
        try:
            lease = await self.api.get(LEASES, name, self.namespace)
        except NotFoundError:
            return ""
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        return holder.split("_", 1)[0]

    async def namespace_for(self, name: str) -> str:
        await self.api.create(NAMESPACES, {"metadata": {"name": name}})

        async def account() -> bool:
            try:
                await self.api.get(ACCOUNTS, "default", name)
            except NotFoundError:
                return False
            return True

        await until(account, f"the default ServiceAccount of {name}", timeout=60)
        return name

    async def create_jobset(self, namespace: str, name: str, replicas: int,
                            max_restarts: int = 3) -> None:
        await self.api.create(JOBSETS, jobset(namespace, name, replicas, max_restarts), namespace)

    async def jobs(self, namespace: str) -> list[dict[str, Any]]:
        return list((await self.api.list(JOBS, namespace))["items"])

    async def live_jobs(self, namespace: str, attempt: int) -> list[dict[str, Any]]:
        return [j for j in await self.jobs(namespace)
                if not j["metadata"].get("deletionTimestamp")
                and attempt_of(j) == attempt]

    async def running_pods(self, namespace: str, job: str) -> list[dict[str, Any]]:
        pods = await self.api.list(PODS, namespace, label_selector=f"{JOB_NAME_LABEL}={job}")
        return [p for p in pods["items"] if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]

    async def all_running(self, namespace: str, replicas: int, attempt: int,
                          timeout: float = 90) -> None:
        seen: list[dict[str, Any]] = []

        async def running() -> bool:
            seen[:] = await self.jobs(namespace)
            jobs = [j for j in seen if not j["metadata"].get("deletionTimestamp")
                    and attempt_of(j) == attempt]
            if len(jobs) != replicas:
                return False
            return all((j.get("status") or {}).get("ready", 0) >= 1 for j in jobs)

        def explain() -> str:
            jobs = "\n".join(f"  {j['metadata']['name']} attempt {attempt_of(j)} ready "
                              f"{(j.get('status') or {}).get('ready', 0)}"
                              f"{' deleting' if j['metadata'].get('deletionTimestamp') else ''}"
                              for j in seen)
            fleet = self.fleet.describe() if self.fleet is not None else "no fleet"
            return f"Jobs in {namespace}:\n{jobs}\n{fleet}"

        await until(running, f"{replicas} Jobs of attempt {attempt} running in {namespace}",
                    timeout=timeout, explain=explain)

    async def end_pods(self, namespace: str, job: str, code: int) -> None:
        """The Job's running pods exit with `code` (kwok's exit annotation)."""
        for pod in await self.running_pods(namespace, job):
            with contextlib.suppress(NotFoundError):
                await self.api.patch(
                    PODS, pod["metadata"]["name"],
                    {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: str(code)}}},
                    namespace=namespace, content_type=MERGE_PATCH)

    async def succeed_all(self, namespace: str, attempt: int) -> None:
        for job in await self.live_jobs(namespace, attempt):
            await self.end_pods(namespace, job["metadata"]["name"], 0)

    async def jobset(self, namespace: str, name: str) -> dict[str, Any]:
        return await self.api.get(JOBSETS, name, namespace)

    async def finished(self, namespace: str, name: str, timeout: float = 90) -> dict[str, Any]:
        async def done() -> dict[str, Any] | None:
            js = await self.jobset(namespace, name)
            return js if (js.get("status") or {}).get("terminalState") else None

        return await until(done, f"{namespace}/{name} to finish", timeout=timeout)


def jobset(namespace: str, name: str, replicas: int, max_restarts: int) -> dict[str, Any]:
    """`replicas` one-pod Jobs that fail on their first failed pod (backoffLimit 0)."""
    pod = {"restartPolicy": "Never",
           "containers": [{"name": "main", "image": "registry.local/worker:1"}]}
    return {
        "apiVersion": c.API_VERSION, "kind": c.KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "failurePolicy": {"maxRestarts": max_restarts},
            "replicatedJobs": [{"name": "w", "replicas": replicas, "template": {"spec": {
                "parallelism": 1, "completions": 1, "backoffLimit": 0,
                "template": {"spec": pod}}}}],
        },
    }


def chaos_install() -> ControllerInstall:
    return local_install(replicas=2)


def chaos_config(install: ControllerInstall) -> ControllerConfig:
    """The install's config (leader election on, upstream's 15 s / 10 s / 2 s Lease) with JSON
    logs, as the Deployment runs it."""
    config = install.config
    return config.model_copy(update={
        "leader_election": config.leader_election.model_copy(update={"leader_elect": True}),
        "logging": config.logging.model_copy(update={"format": LogFormat.JSON}),
    })
