"""The two controllers under test, as processes beside the real local cluster.

Both run out of cluster with a kubeconfig of their own: a client certificate for a user named
after the peer (`jobset-bench-ours`, `jobset-bench-upstream`) in system:masters, signed by the
cluster's CA, so the API server's audit log attributes every request (`audit.py`) and RBAC is
not what is measured. `install` puts the peer's CRD (and for upstream, its webhooks) on a fresh
cluster; `start` runs the controller and returns once it is ready to serve (for upstream: its
webhooks registered and answering through the API server).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import aiohttp
import psutil  # type: ignore[import-untyped]
import yaml

from benchmarks.cluster import ProcessGauge
from benchmarks.real import certs, upstream
from jobset_infra.cluster import install
from jobset_infra.cluster.binaries import find
from jobset_infra.cluster.layout import kubeconfig as cluster_kubeconfig
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.cluster.pki import Identity
from jobset_infra.cluster.processes import free_port
from jobset_infra.controller.runtime.kube import ApiError, InvalidError, KubeClient
from jobset_infra.controller.runtime.resources import JOBSETS, Resource

REPO: Final = Path(__file__).resolve().parents[2]
OUR_CRD: Final = REPO / "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"
PODS: Final = Resource("", "v1", "pods", "Pod")
MUTATING: Final = Resource("admissionregistration.k8s.io", "v1",
                           "mutatingwebhookconfigurations", "MutatingWebhookConfiguration",
                           namespaced=False)
VALIDATING: Final = Resource("admissionregistration.k8s.io", "v1",
                             "validatingwebhookconfigurations", "ValidatingWebhookConfiguration",
                             namespaced=False)
START_TIMEOUT: Final = 90.0
_PR_SET_PDEATHSIG: Final = 1


@dataclass(frozen=True)
class Limits:
    """The controller's client rate limit (token bucket)."""

    qps: float
    burst: int

    @property
    def label(self) -> str:
        return f"{self.qps:g}/{self.burst}"


@dataclass
class ControllerProcess(ProcessGauge):
    """A running controller: CPU and memory read from outside (psutil, /proc)."""

    name: str
    popen: subprocess.Popen[bytes]
    metrics: Callable[[aiohttp.ClientSession], Any]  # -> awaitable metrics text
    log: Path
    process: psutil.Process = field(init=False)

    def peak_rss_bytes(self) -> int:
        """The kernel's high-water mark of resident memory (VmHWM) over the process's life."""
        for line in Path(f"/proc/{self.popen.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return self.rss_bytes()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the benchmark dies, so no controller is
    ever left behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(argv: list[str], log: Path, env: Mapping[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd=cwd,
            # only a prctl call runs between fork and exec: no lock a thread could hold
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
        )


def write_kubeconfig(cluster: RunningCluster, user: str, folder: Path) -> Path:
    """A kubeconfig for `user` (a fresh client certificate signed by the cluster CA)."""
    p = cluster.layout.pki
    cert, key = certs.client_identity(p.ca_cert, p.ca_key, user, folder)
    who = Identity(user, user)
    config = cluster_kubeconfig(cluster.layout, who)
    config["users"] = [{"name": user, "user": {"client-certificate": str(cert),
                                                "client-key": str(key)}}]
    path = folder / f"{user}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


async def _until(check: Callable[[], Any], what: str, proc: subprocess.Popen[bytes],
                 log: Path, timeout: float = START_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what}: the process exited with {proc.returncode}; see {log}")
        with contextlib.suppress(aiohttp.ClientError, ApiError, OSError):
            if await check():
                return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{what} did not happen within {timeout:g} s; see {log}")


async def _http_ok(url: str, ssl_context: ssl.SSLContext | bool = False) -> bool:
    async with aiohttp.ClientSession() as session, session.get(url, ssl=ssl_context) as r:
        return r.status == 200


class Peer(Protocol):
    name: str
    user: str

    async def install(self, api: KubeClient) -> None: ...

    async def start(self, cluster: RunningCluster, api: KubeClient, limits: Limits,
                    folder: Path, profile: Path | None = None) -> ControllerProcess: ...

    def version(self) -> str: ...


class Ours:
    """jobset-controller (this repository), no webhooks: defaults and validation live in our
    CRD's schema (OpenAPI defaults, CEL rules)."""

    user = "jobset-bench-ours"

    def __init__(self, root: Path = REPO, name: str = "ours") -> None:
        # `root`: the checkout whose jobset_infra runs (an A/B run compares two of them)
        self.root = root
        self.name = name

    async def install(self, api: KubeClient) -> None:
        await install.apply_all(api, [yaml.safe_load(OUR_CRD.read_text())])

    def command(self, kubeconfig: Path, limits: Limits, health: int, metrics: int,
                profile: Path | None) -> list[str]:
        wrapper = ["-m", "cProfile", "-o", str(profile), "-m"] if profile else ["-m"]
        return [
            sys.executable, *wrapper, "jobset_infra.controller.runtime.main",
            f"--kubeconfig={kubeconfig}", "--leader-elect=false",
            f"--health-probe-bind-address=127.0.0.1:{health}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
            f"--kube-api-qps={limits.qps:g}", f"--kube-api-burst={limits.burst}",
            "--log-level=error",
        ]

    async def start(self, cluster: RunningCluster, api: KubeClient, limits: Limits,
                    folder: Path, profile: Path | None = None) -> ControllerProcess:
        kubeconfig = write_kubeconfig(cluster, self.user, folder)
        health, metrics = free_port(), free_port()
        log = folder / f"{self.name}.log"
        env = {**_environ(), "PYTHONPATH": str(self.root), "PYTHONUNBUFFERED": "1"}
        # `python -m` puts its working directory first on sys.path, ahead of PYTHONPATH: run it
        # in `root`, or an A/B run started in one checkout would run that checkout twice.
        popen = spawn(self.command(kubeconfig, limits, health, metrics, profile), log, env,
                      cwd=self.root)
        await _until(lambda: _http_ok(f"http://127.0.0.1:{health}/readyz"),
                     "our controller ready", popen, log)
        return ControllerProcess(self.name, popen, _secure_metrics(cluster, metrics), log)

    def version(self) -> str:
        from importlib.metadata import version

        return f"jobset-infra {version('jobset-infra')} (CPython {sys.version.split()[0]})"


def _secure_metrics(cluster: RunningCluster,
                    port: int) -> Callable[[aiohttp.ClientSession], Awaitable[str]]:
    """Scrape /metrics as both controllers serve it: HTTPS with a self-signed certificate, the
    caller authenticated by TokenReview and authorized by SubjectAccessReview (the admin's token;
    each scrape costs both controllers the same two reviews)."""
    token = cluster.layout.admin_token
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # each controller's own self-signed metrics cert

    async def text(session: aiohttp.ClientSession) -> str:
        async with session.get(f"https://127.0.0.1:{port}/metrics", ssl=insecure,
                               headers={"Authorization": f"Bearer {token}"}) as response:
            return await response.text()

    return text


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


class Upstream:
    """Upstream JobSet's manager (sigs.k8s.io/jobset, the version tools/jobset pins)."""

    name = "upstream"
    user = "jobset-bench-upstream"

    def __init__(self) -> None:
        self.module_version = upstream.pinned_version()
        self.folder = upstream.module_dir(self.module_version)
        self.binary = find(upstream.BINARY)

    async def install(self, api: KubeClient) -> None:
        await install.apply_all(api, [upstream.crd(self.folder)])

    async def start(self, cluster: RunningCluster, api: KubeClient, limits: Limits,
                    folder: Path, profile: Path | None = None) -> ControllerProcess:
        if profile is not None:
            raise ValueError("upstream's manager exposes no profiler; profile ours only")
        kubeconfig = write_kubeconfig(cluster, self.user, folder)
        pki = certs.webhook_pki(folder / "webhook-certs")
        webhook, health, metrics = free_port(), free_port(), free_port()
        config = folder / "upstream-config.yaml"
        config.write_text(yaml.safe_dump(upstream.manager_config(
            webhook, pki.folder, f"127.0.0.1:{metrics}", f"127.0.0.1:{health}")))
        log = folder / "upstream.log"
        popen = spawn(upstream.command(self.binary, config, kubeconfig, limits.qps,
                                       limits.burst), log)
        await _until(lambda: _http_ok(f"http://127.0.0.1:{health}/readyz"),
                     "upstream's manager ready (webhook server started)", popen, log)
        for document in upstream.webhook_configurations(self.folder, webhook, pki.ca_pem):
            res = MUTATING if document["kind"] == MUTATING.kind else VALIDATING
            await api.request("PATCH", res.path(None, document["metadata"]["name"]),
                              body=document, content_type=install.APPLY,
                              params={"fieldManager": "jobset-bench", "force": "true"})
        await _until(lambda: _webhooks_answer(api), "upstream's webhooks called by the API "
                     "server", popen, log)
        return ControllerProcess(self.name, popen, _secure_metrics(cluster, metrics), log)

    def version(self) -> str:
        return upstream.build_info(self.binary)


_PROBE_JOBSET: Final = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "webhook-probe", "namespace": "default"},
    "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
        "parallelism": 1, "completions": 1, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}]},
}
_PROBE_FOLLOWER: Final = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "webhook-probe-1", "namespace": "default",
                 "labels": {"jobset.sigs.k8s.io/jobset-name": "webhook-probe"},
                 "annotations": {"jobset.sigs.k8s.io/jobset-name": "webhook-probe",
                                 "alpha.jobset.sigs.k8s.io/exclusive-topology":
                                     "cloud.google.com/gke-nodepool",
                                 "batch.kubernetes.io/job-completion-index": "1"}},
    "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
}


async def _webhooks_answer(api: KubeClient) -> bool:
    """Both registrations live: a dry-run JobSet comes back defaulted (mutating webhook) and a
    dry-run follower Pod without its leader is refused (validating Pod webhook)."""
    dry = {"dryRun": "All"}
    created = await api.request("POST", JOBSETS.path("default"), body=_PROBE_JOBSET,
                                params=dry)
    if "successPolicy" not in created.get("spec", {}):
        return False
    try:
        await api.request("POST", PODS.path("default"), body=_PROBE_FOLLOWER, params=dry)
    except (InvalidError, ApiError) as err:
        return "follower" in str(err) or "leader" in str(err)
    return False


PEERS: Final[Mapping[str, Callable[[], Peer]]] = {"ours": Ours, "upstream": Upstream}
