"""The benchmarked system: the sim API server in this process, our controller in another.

The sim (with its fake Job controller, garbage collector and a fixed per-request latency) runs on
this process's event loop, so the benchmark reads its store, request counts and watches directly,
with no client in between. The JobSet controller runs as the real `jobset-controller` program in
a child process against the sim's URL: its RSS and CPU time are the child's own (psutil), and the
two processes can use the machine's two cores. Reconcile counts come from the controller's
Prometheus /metrics, as an operator would read them.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil  # type: ignore[import-untyped]
from prometheus_client.parser import text_string_to_metric_families

from benchmarks import gc_probe
from jobset_infra.api import constants as c
from jobset_infra.sim.apiserver.faults import FaultInjector
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.apiserver.store import NAMESPACES
from jobset_infra.sim.cluster.job_controller import JobController
from jobset_infra.sim.command import register_crd

JOBSETS = GVR(c.GROUP, c.VERSION, "jobsets")
JOBS = GVR("batch", "v1", "jobs")
PODS = GVR("", "v1", "pods")
RECONCILES = "controller_runtime_reconcile"
RETRIES = "workqueue_retries"
_PR_SET_PDEATHSIG = 1
DEFAULT_QPS = 500.0  # the controller's default client QPS (and burst), as upstream's


class ProcessGauge:
    """CPU and memory of a child process, read from outside (psutil): both benchmarks' use."""

    popen: subprocess.Popen[bytes]
    process: psutil.Process

    def __post_init__(self) -> None:
        self.process = psutil.Process(self.popen.pid)

    def cpu_seconds(self) -> float:
        times = self.process.cpu_times()
        return float(times.user + times.system)

    def rss_bytes(self) -> int:
        return int(self.process.memory_info().rss)

    def peak_rss_bytes(self) -> int:
        """The process's peak RSS so far (Linux VmHWM; 0 where the kernel does not say)."""
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
        return 0


@dataclass
class ControllerProcess(ProcessGauge):
    """`jobset-controller` in a child process; `metrics_url` serves its Prometheus metrics,
    `gc_file` its cyclic-GC totals (see `gc_probe`)."""

    popen: subprocess.Popen[bytes]
    metrics_url: str
    gc_file: Path | None = None
    process: psutil.Process = field(init=False)

    def gc_seconds(self) -> float:
        """Seconds the child spent in cyclic GC, as of its last full collection."""
        return sum(gc_probe.read(self.gc_file)["seconds"]) if self.gc_file else 0.0

    async def metric(self, session: aiohttp.ClientSession, name: str) -> float:
        """Sum of every sample of counter `name` (all label values)."""
        async with session.get(self.metrics_url) as response:
            text = await response.text()
        return sum(
            sample.value
            for family in text_string_to_metric_families(text)
            if family.name == name
            for sample in family.samples
            if sample.name in (name, f"{name}_total")
        )

    def stop(self) -> None:
        """Stop the child, then remove the folder of its collector totals."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        if self.gc_file is not None:
            shutil.rmtree(self.gc_file.parent, ignore_errors=True)


@dataclass
class Bench:
    """A running sim + controller pair, and what the scenarios need from both."""

    sim: Sim
    jobs: JobController | None  # None: no Pods; Job status is written by the benchmark
    controller: ControllerProcess
    session: aiohttp.ClientSession
    qps: float = DEFAULT_QPS
    gc_clock: gc_probe.GcClock = field(default_factory=lambda: gc_probe.GcClock().install())

    def sim_gc_seconds(self) -> float:
        """Seconds this process (the sim side) spent in cyclic GC since the Bench started."""
        return sum(self.gc_clock.seconds)

    async def reconciles(self) -> float:
        return await self.controller.metric(self.session, RECONCILES)

    async def retries(self) -> float:
        """Work-queue requeues with backoff (errors, conflicts) so far."""
        return await self.controller.metric(self.session, RETRIES)

    def requests(self) -> Counter[str]:
        """Requests the sim served so far, by "verb resource"."""
        return Counter(self.sim.stats.snapshot())

    def create_namespace(self, name: str) -> None:
        self.sim.store.create(NAMESPACES, {"metadata": {"name": name}})

    async def quiet(self, period: float = 1.0, timeout: float = 120.0) -> float:
        """Wait until the controller has sent no write for `period` seconds; returns when."""
        deadline = time.monotonic() + timeout
        last, since = self.sim.stats.writes, time.monotonic()
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            now = time.monotonic()
            if self.sim.stats.writes != last:
                last, since = self.sim.stats.writes, now
            elif now - since >= period:
                return since
        raise TimeoutError(f"the controller kept writing for {timeout:.0f} s")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def controller_command(url: str, metrics_port: int, profile: Path | None) -> list[str]:
    """The real controller program with its default QPS/burst, no leader election; under
    cProfile when profiling, else under `gc_probe` (which only observes the collector)."""
    wrapper = ["-m", "cProfile", "-o", str(profile.resolve()), "-m"] if profile else [
        "-m", "benchmarks.gc_probe"]
    return [
        sys.executable, *wrapper, "jobset_infra.controller.runtime.main",
        f"--master={url}",
        "--leader-elect=false",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        "--metrics-secure=false",  # the harness scrapes plain HTTP on loopback
        "--health-probe-bind-address=0",
        "--log-level=error",
    ]


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the benchmark process dies, so a killed
    benchmark never leaves a controller behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


REPO = Path(__file__).resolve().parent.parent


async def start_controller(
    url: str, profile: Path | None = None, root: Path | None = None
) -> ControllerProcess:
    """Start `jobset-controller` against `url`, its `jobset_infra` from `root` (another
    checkout, for an A/B run; default this one). This checkout stays on the path after `root`,
    so a `root` holding only `jobset_infra` still finds `benchmarks.gc_probe` here."""
    port = free_port()
    gc_file = None if profile else Path(tempfile.mkdtemp(prefix="jobset-bench-")) / "gc.json"
    roots = [str(root or REPO), str(REPO), os.environ.get("PYTHONPATH")]
    path = os.pathsep.join(dict.fromkeys(filter(None, roots)))
    popen = subprocess.Popen(
        controller_command(url, port, profile),
        stdout=subprocess.DEVNULL,
        # `python -m` puts the working directory first on the path: run it in `root`, or an
        # A/B run would start this checkout's controller twice
        cwd=root or REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path,
             "BENCH_GC_OUT": str(gc_file or "")},
        # only a prctl call runs between fork and exec: no lock a thread could hold
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
    )
    proc = ControllerProcess(popen, f"http://127.0.0.1:{port}/metrics", gc_file)
    deadline = time.monotonic() + 60
    async with aiohttp.ClientSession() as session:
        while time.monotonic() < deadline:
            if popen.poll() is not None:
                raise RuntimeError(f"jobset-controller exited with {popen.returncode} at start")
            with contextlib.suppress(aiohttp.ClientError):
                await proc.metric(session, RECONCILES)
                return proc
            await asyncio.sleep(0.1)
    proc.stop()
    raise TimeoutError("jobset-controller did not serve /metrics within 60 s")


@contextlib.asynccontextmanager
async def running(
    latency: float = 0.005, profile: Path | None = None, *, pods: bool = True,
    tune_gc: bool = True, root: Path | None = None,
) -> AsyncIterator[Bench]:
    """Start the sim (fixed `latency` per request, the fake Job controller unless `pods` is
    False) and the controller (from the checkout `root`, default this one). `tune_gc`: see
    `tune_collector` (this process only)."""
    if tune_gc:
        tune_collector()
    sim = Sim(port=0)
    sim.add_hook(FaultInjector.fixed_latency(latency))
    jobs = JobController(sim.store, wait_for_binding=False) if pods else None
    if jobs is not None:
        sim.add_component(jobs)
    await sim.start()
    controller: ControllerProcess | None = None
    try:
        register_crd(sim.store)
        controller = await start_controller(sim.url, profile, root)
        async with aiohttp.ClientSession() as session:
            bench = Bench(sim, jobs, controller, session)
            try:
                yield bench
            finally:
                bench.gc_clock.uninstall()
    finally:
        if controller is not None:
            controller.stop()
        await sim.stop()


SIM_GC_THRESHOLDS = (50_000, 50, 50)


def tune_collector() -> None:
    """Make this process's cyclic GC rarer (the sim's, not the controller's). The sim stands in
    for kube-apiserver, which is Go; with Python's default thresholds (700, 10, 10) it spent
    about half its CPU in the collector at N=2048 (gc_probe), which the controller then waits on.
    The controller keeps its defaults: it is what is measured."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*SIM_GC_THRESHOLDS)


def self_cpu_seconds() -> float:
    """CPU time of this process (the sim, its Job controller and the benchmark's bookkeeping)."""
    times = psutil.Process().cpu_times()
    return float(times.user + times.system)


def jobset_manifest(name: str, namespace: str, replicas: int) -> dict[str, Any]:
    """A multislice-shaped JobSet: one replicated job of `replicas` one-pod Jobs, 3 restarts."""
    from jobset_infra.testing.jobsets import make_jobset

    return (
        make_jobset(name, namespace)
        .replicated_job("slice", replicas=replicas, parallelism=1)
        .failure_policy(max_restarts=3)
        .obj()
    )
