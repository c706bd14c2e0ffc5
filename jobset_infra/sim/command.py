"""`jobset-infra sim`: a simulated Kubernetes cluster on 127.0.0.1 for kubectl, clients and demos.

    jobset-infra sim --nodes v5e-2x4:4 --controller --kubeconfig sim.kubeconfig
    jobset-infra sim --demo [--keep]

It starts the sim API server with the JobSet CRD registered, the fake Job controller (unless
`--job-controller off`), Nodes shaped like TPU slice node pools (`--nodes`, see `nodes.py`) and,
when there are Nodes and the scheduler module exists, the sim scheduler; with `--controller` our
JobSet controller runs in the same process against it. `--latency` and `--faults` inject latency
and errors into every HTTP request (see `faults.py`). It listens on a free port unless `--port`
names one, and refuses a port something already answers on (kubectl would reach either server);
clients find it through the kubeconfig it writes. It prints the `export KUBECONFIG=...` and
kubectl lines to use and runs until Ctrl-C or SIGTERM, then stops everything and exits 0.

This module is a composition root like `jobset_infra.cli`: it wires the sim to the controller
runtime through `importlib`, so the `jobset_infra.sim` package itself depends on `api` only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib
import importlib.util
import logging
import signal
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from jobset_infra.sim.apiserver.faults import (
    Fault,
    FaultInjector,
    FaultRule,
    FaultSpecError,
    parse_rule,
)
from jobset_infra.sim.cluster.nodes import create_nodes
from jobset_infra.tool_paths import kubectl_note, shown
from jobset_infra.tpu.node_pools import NodeSpecError, PoolSpec, parse_nodes

if TYPE_CHECKING:  # imported when used: `jobset-infra validate` need not load aiohttp
    from jobset_infra.sim.apiserver.server import Sim
    from jobset_infra.sim.cluster.job_controller import JobController

CRD_FILE: Final = Path(__file__).resolve().parent.parent / "api" / "crd" / (
    "jobset.x-k8s.io_jobsets.yaml"
)
CRDS: Final = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")
DEFAULT_PORT: Final = 0  # a free one: the kubeconfig names it, so no two sims share a port
_SCHEDULER_MODULE: Final = "jobset_infra.sim.cluster.scheduler"
_RUNTIME_MODULE: Final = "jobset_infra.controller.runtime.manager"
_LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s %(message)s"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port", type=int, default=None,
        help="port on 127.0.0.1 (default: a free one, named in the kubeconfig; a port "
        "another server answers on is refused)",
    )
    parser.add_argument(
        "--controller", action="store_true",
        help="also run the JobSet controller in this process against the simulated server",
    )
    parser.add_argument(
        "--job-controller", choices=("on", "off"), default="on",
        help="turn Jobs into Pods and status (default on; off: set Job status by hand)",
    )
    parser.add_argument(
        "--nodes", default="", metavar="SPEC",
        help="pre-create Nodes, e.g. v5e-2x4:4 (4 TPU slice pools of 2 nodes) or cpu:3",
    )
    parser.add_argument(
        "--latency", type=float, default=0.0, metavar="MS",
        help="add this many milliseconds to every API request",
    )
    parser.add_argument(
        "--faults", action="append", default=[], metavar="RULE",
        help="inject faults, e.g. error:code=429,rate=0.05,verbs=create,max=100 (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault injector")
    parser.add_argument(
        "--auto-complete", type=float, default=None, metavar="SECONDS",
        help="let every Pod succeed this many seconds after it starts",
    )
    parser.add_argument("--kubeconfig", default=None, metavar="PATH",
                        help="where to write the kubeconfig (default: a temporary directory)")
    parser.add_argument(
        "--demo", action="store_true",
        help="run a 4-slice multislice JobSet on v5e TPU-like nodes, fail one slice, watch it "
        "restart and complete, then exit",
    )
    parser.add_argument(
        "--keep", action="store_true",
        help="with --demo: keep the cluster serving after the demo, for kubectl, until Ctrl-C",
    )


@dataclass(frozen=True)
class Options:
    """The command line, checked: bad input is an error message, never a traceback."""

    port: int
    controller: bool
    job_controller: bool
    pools: tuple[PoolSpec, ...]
    faults: tuple[FaultRule, ...]
    seed: int
    auto_complete: float | None
    kubeconfig: Path | None
    keep: bool = False


def options(args: argparse.Namespace) -> Options:
    """Check the arguments; raises ValueError with a message naming the flag."""
    port = args.port if args.port is not None else DEFAULT_PORT
    if args.keep and not args.demo:
        raise ValueError("--keep: only with --demo (without it the sim serves until Ctrl-C)")
    if not 0 <= port <= 65535:
        raise ValueError(f"--port {args.port}: use 0..65535 (0 picks a free port)")
    if args.latency < 0:
        raise ValueError(f"--latency {args.latency}: milliseconds must not be negative")
    if args.auto_complete is not None and args.auto_complete < 0:
        raise ValueError(f"--auto-complete {args.auto_complete}: seconds must not be negative")
    rules: list[FaultRule] = []
    if args.latency:
        rules.append(FaultRule(Fault.LATENCY, delay=args.latency / 1000))
    for text in args.faults:
        try:
            rules.append(parse_rule(text))
        except FaultSpecError as err:
            raise ValueError(f"--faults {text!r}: {err}") from None
    try:
        pools = parse_nodes(args.nodes)
    except NodeSpecError as err:
        raise ValueError(str(err)) from None
    return Options(
        port=port, controller=args.controller, job_controller=args.job_controller == "on",
        pools=pools, faults=tuple(rules), seed=args.seed, auto_complete=args.auto_complete,
        kubeconfig=Path(args.kubeconfig) if args.kubeconfig else None, keep=args.keep,
    )


def run(args: argparse.Namespace) -> int:
    try:
        opts = options(args)
    except ValueError as err:
        print(f"jobset-infra sim: {err}", file=sys.stderr)
        return 2
    if args.demo:
        from jobset_infra.sim.demo import run as run_demo

        return asyncio.run(run_demo(opts))
    try:
        return asyncio.run(serve(opts))
    except KeyboardInterrupt:  # a second Ctrl-C while shutting down
        return 0


# --- the running cluster ---------------------------------------------------------------------


@dataclass
class Cluster:
    """A started sim and what runs with it; `stop()` ends them in reverse order."""

    sim: Sim
    job_controller: JobController | None = None
    controller: Any = None  # a RunningController of jobset_infra.controller.runtime
    scheduler: bool = False
    kubeconfig: Path | None = None
    notes: list[str] = field(default_factory=list)

    async def stop(self) -> None:
        if self.controller is not None:
            with contextlib.suppress(Exception):
                await self.controller.stop()
        await self.sim.stop()


async def start_cluster(opts: Options) -> Cluster:
    """Start the sim, register the CRD, create Nodes, and start the requested components."""
    from jobset_infra.sim.apiserver.server import Sim
    from jobset_infra.sim.cluster.job_controller import JobController

    sim = Sim(port=opts.port)
    if opts.faults:
        sim.add_hook(FaultInjector(opts.faults, seed=opts.seed))
    cluster = Cluster(sim)
    scheduler = bool(opts.pools) and importlib.util.find_spec(_SCHEDULER_MODULE) is not None
    if scheduler:
        sim.add_component(importlib.import_module(_SCHEDULER_MODULE).Scheduler(sim.store))
        cluster.scheduler = True
    elif opts.pools:
        cluster.notes.append("no scheduler module: pods run without being bound to nodes")
    if opts.job_controller:
        cluster.job_controller = JobController(
            sim.store, wait_for_binding=scheduler, auto_complete_after=opts.auto_complete
        )
        sim.add_component(cluster.job_controller)
    if opts.port and (host := await answering(opts.port)):
        raise StartError(
            f"port {opts.port} already answers on {host}: another server holds it, and kubectl "
            f"could reach that one instead of this sim; stop it, or leave out --port (a free "
            "port is picked and written to the kubeconfig)")
    try:
        await sim.start()
    except OSError as err:
        raise StartError(f"cannot listen on 127.0.0.1:{opts.port}: {err.strerror or err}; "
                         "choose another --port (0 picks a free one)") from None
    try:
        register_crd(sim.store)
        await create_nodes(sim.store, opts.pools, sim.store.clock.now())
        cluster.kubeconfig = _write_kubeconfig(sim, opts.kubeconfig)
        if opts.controller:
            cluster.controller = await start_controller(sim.url)
    except BaseException:
        await cluster.stop()
        raise
    return cluster


class StartError(RuntimeError):
    """The simulated cluster could not start; the message says why and what to change."""


# Where a client on this machine may look for "the server on port N": kubectl's no-config
# default is localhost:8080, which resolves to either address.
_LOOPBACKS: Final = ("127.0.0.1", "::1")


async def answering(port: int, timeout: float = 0.5) -> str | None:
    """The loopback address on which something accepts connections to `port`, or None."""
    for host in _LOOPBACKS:
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        except (OSError, TimeoutError):
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return host
    return None


def _write_kubeconfig(sim: Sim, wanted: Path | None) -> Path:
    # Absolute: the `export KUBECONFIG=...` printed must work from any folder.
    path = (wanted or Path(tempfile.mkdtemp(prefix="jobset-infra-sim-")) / "kubeconfig").absolute()
    try:
        return sim.kubeconfig(path)
    except OSError as err:
        raise StartError(f"cannot write the kubeconfig to {path}: {err.strerror or err}; "
                         "choose another --kubeconfig") from None


def register_crd(store: Any) -> dict[str, Any]:
    """Create our JobSet CustomResourceDefinition; the sim serves jobsets at once."""
    from jobset_infra.sim.apiserver.resources import GVR

    crd = yaml.safe_load(CRD_FILE.read_text())
    created: dict[str, Any] = store.create(GVR(*CRDS), crd)
    return created


async def start_controller(url: str) -> Any:
    """Our JobSet controller against `url`: no leader election, no ports, warnings as text."""
    from jobset_infra.api.controller_config import ControllerConfig

    runtime = importlib.import_module(_RUNTIME_MODULE)
    # A plain process gets readable warnings on stderr; an embedding one (tests) keeps its own.
    logging.basicConfig(level=logging.WARNING, format=_LOG_FORMAT)
    config = ControllerConfig.from_dict({
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": "0"},
        "leaderElection": {"leaderElect": False},
        "logging": {"level": "warning", "format": "text"},
    })
    return await runtime.start_controller(config, url=url)


# The sim stands in for kube-apiserver (Go) and keeps large long-lived dict graphs (store,
# watch history) that Python's default thresholds (700, 10, 10) rescan in every full collection.
# Measured in the N=2048 benchmark, which hosts this same sim in-process: 9 full collections of
# about 0.8 s each (7.5 s of stalls, sim CPU 13.6 s) with the defaults, 1.4 s (sim CPU 11.2 s)
# after gc.freeze() and these thresholds (notes/perf.md, benchmarks/gc_probe.py).
GC_THRESHOLDS = (50_000, 50, 50)


def _tune_collector() -> None:
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def serve(opts: Options) -> int:
    try:
        cluster = await start_cluster(opts)
        _tune_collector()  # after startup: what exists now lives as long as the server
    except StartError as err:
        print(f"jobset-infra sim: {err}", file=sys.stderr)
        return 1
    try:
        await until_stopped(lambda: print(banner(cluster, opts), flush=True))
    finally:
        print("jobset-infra sim: shutting down", flush=True)
        await cluster.stop()
    return 0


async def until_stopped(started: Callable[[], None]) -> None:
    """Call `started` once Ctrl-C and SIGTERM are handled, then return on either."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        started()
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def banner(cluster: Cluster, opts: Options) -> str:
    url = cluster.sim.url
    parts = [f"jobset-infra sim: Kubernetes API at {url} (JobSet CRD jobsets.jobset.x-k8s.io "
             "registered)"]
    parts.append(f"  export KUBECONFIG={cluster.kubeconfig}")
    parts.append(f"  {shown('kubectl')} get jobsets,jobs,pods -A")
    nodes = sum(p.nodes for p in opts.pools)
    pools = ", ".join(p.name for p in opts.pools) or "none"
    parts.append(f"  nodes: {nodes} in pools {pools}" if nodes else "  nodes: none (--nodes)")
    jc = ("off (set Job status by hand)" if cluster.job_controller is None
          else "on" + (", pods wait for the scheduler" if cluster.scheduler else ""))
    parts.append(f"  job controller: {jc}")
    parts.append("  JobSet controller: " + ("running in this process" if cluster.controller
                                            else "not running (--controller)"))
    if opts.faults:
        parts.append(f"  faults: {len(opts.faults)} rule(s), seed {opts.seed}")
    parts += [f"  note: {note}" for note in [*cluster.notes, *kubectl_note()]]
    parts.append("Press Ctrl-C to stop.")
    return "\n".join(parts)
