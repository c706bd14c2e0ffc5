"""The real local cluster: etcd, kube-apiserver, controller-manager, scheduler and kwok on loopback.

`start_cluster(options)` writes the certificates and config files, starts every process in
order and waits for each to be healthy, creates kwok-managed Nodes shaped like GKE node pools
(from the same `--nodes` spec as the sim), and waits until they are Ready and the `default`
ServiceAccount exists (before that, the API server refuses every Pod; those waits are
`cluster/readiness.py`). CRDs in `options.crds`
are served before kube-controller-manager starts (see `ClusterOptions.crds`). It returns a
`RunningCluster`; `stop()` (or `jobset-infra cluster down`, from the state file) ends it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import datetime
import json
import secrets
import shutil
import ssl
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jobset_infra.cluster import kwok_stages, nodehost, nodeup, pki, readiness, realnode, stale
from jobset_infra.cluster.binaries import Tools, cache_root, find_tools
from jobset_infra.cluster.layout import (
    Layout,
    Ports,
    Tuning,
    kubeconfig,
    plan_processes,
    scheduler_config,
)
from jobset_infra.cluster.processes import (
    ComponentError,
    Started,
    alive,
    free_port,
    free_ports,
    kill,
    start,
    stop,
    wait_healthy,
)
from jobset_infra.controller.runtime.auth import ClusterAccess
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.tpu.node_pools import PoolSpec, parse_nodes

STATE_VERSION = 1
THROWAWAY_GRACE = 2.0  # seconds a real-node cluster's control plane gets to stop on SIGTERM
Progress = Callable[[str], None]


@dataclass(frozen=True)
class ClusterOptions:
    nodes: str = "cpu:3"
    folder: Path | None = None  # default: <cache>/clusters/<name>
    name: str = "local"
    auto_complete_seconds: float | None = None
    start_timeout: float = 120.0
    # envtest's shape: etcd and kube-apiserver only (no Job controller, no garbage collector,
    # no scheduler, no Nodes), for tests that set Job status by hand as upstream's do.
    apiserver_only: bool = False
    # Client limits of the controller-manager and scheduler, Job syncs, extra apiserver flags
    # (benchmarks/real lifts the limits and adds an audit policy); defaults as `cluster up`.
    tuning: Tuning = field(default_factory=Tuning)
    # Pools beyond the `nodes` spec (tests shape a few by hand, e.g. several CPU pools).
    extra_pools: tuple[PoolSpec, ...] = ()
    # CustomResourceDefinitions applied, and Established, before kube-controller-manager starts.
    # Its garbage collector reads which resources the API serves when it starts, then every
    # 30 s; until it knows a resource, a foreground deletion of one of its objects waits (a
    # JobSet deleted in the first half minute after its CRD appeared: 24 s here).
    crds: tuple[Mapping[str, Any], ...] = ()
    # Real nodes (kubelet, containerd, CNI; one kube-proxy and CoreDNS) beside kwok's, and the
    # images of `jobset-infra image build` imported into them besides the pause image.
    real_nodes: int = 0
    images: tuple[str, ...] = ()
    # Instead of workload nodes: one real node tainted for system Pods (`realnode.SYSTEM_NODE_
    # LABEL`: the controller's and Kueue's, which select and tolerate it) beside kwok's pools
    # of any kind; kwok's untainted pools keep the workloads.
    system_node: bool = False

    @property
    def node_count(self) -> int:
        """How many real nodes the cluster runs."""
        return self.real_nodes or (1 if self.system_node else 0)


@dataclass
class RunningCluster:
    layout: Layout
    processes: list[Started]
    pools: tuple[PoolSpec, ...]
    versions: dict[str, str] = field(default_factory=dict)
    options: ClusterOptions | None = None  # what `start_cluster` was given (None: from state)
    real: realnode.RealNodes | None = None

    @property
    def url(self) -> str:
        return self.layout.url

    @property
    def kubeconfig(self) -> Path:
        return self.layout.kubeconfig

    def access(self) -> ClusterAccess:
        """Admin access (client certificate in system:masters) for our own HTTP client."""
        return admin_access(self.layout)

    def client(self, **kwargs: Any) -> KubeClient:
        return KubeClient(self.access(), enforce_permissions=False, **kwargs)

    def running(self) -> dict[str, bool]:
        return {p.name: alive(p) for p in self.processes}

    def hand_over(self) -> None:
        """No process owns the cluster any more (`cluster up` returns and leaves it running
        until `cluster down`): a sweep then takes it only once every process of it is gone."""
        if self.real is not None:
            nodehost.write_record(self.real, owner=None)

    def stop(self, keep_files: bool = False) -> list[str]:
        stopped: list[str] = []
        names: frozenset[str] = frozenset()
        if self.real is not None:
            # The nodes and their containers first: a controller Pod still running holds its
            # watches open, and kube-apiserver's graceful stop waited for them (11 s, then
            # SIGKILL). Then mounts, cgroups, bridges: all before the folder goes.
            names = self.real.process_names()
            stopped = stop([p for p in self.processes if p.name in names])
            nodehost.teardown(self.real)
        # With real nodes kube-apiserver keeps the `kubernetes` Service's endpoint through a
        # lease, and its graceful stop hung in removing it until SIGKILL (10 s), etcd 7 s more
        # after it; nothing of a cluster being stopped needs that endpoint any more.
        grace = THROWAWAY_GRACE if self.real is not None else 10.0
        stopped += stop([p for p in self.processes if p.name not in names], grace=grace)
        if not keep_files:
            shutil.rmtree(self.layout.folder, ignore_errors=True)
        return stopped

    def restart(self, name: str, *, crash: bool = True, tools: Tools | None = None) -> float:
        """Stop component `name` (SIGKILL when `crash`: a process lost, not shut down) and
        start it again as `start_cluster` did, with its data (etcd's folder) kept; return the
        seconds from the stop until it is healthy again. For the chaos tests."""
        options = self.options or ClusterOptions()
        spec = next(s for s in plan_processes(self.layout, tools or find_tools(), options.tuning)
                    if s.name == name)
        index, old = next((i, p) for i, p in enumerate(self.processes) if p.name == name)
        began = time.monotonic()
        if crash:
            kill(old)
        else:
            stop([old])
        started = start(spec, self.layout.log(name))
        self.processes[index] = started
        _write_state(self, options)
        wait_healthy(started, spec.health_url, _health_context(self.layout, name),
                     options.start_timeout, headers=_health_headers(self.layout, name))
        return time.monotonic() - began


def default_folder(name: str) -> Path:
    return cache_root() / "clusters" / name


def admin_access(layout: Layout) -> ClusterAccess:
    p = layout.pki
    context = ssl.create_default_context(cafile=str(p.ca_cert))
    context.load_cert_chain(str(p.client_cert(pki.ADMIN)), str(p.client_key(pki.ADMIN)))
    return ClusterAccess(host=layout.url, ssl_context=context)


def start_cluster(options: ClusterOptions, progress: Progress = print,
                  tools: Tools | None = None) -> RunningCluster:
    """Start the whole control plane and its Nodes; raise ComponentError with a log tail."""
    pools = () if options.apiserver_only else _pools(options, progress)
    tools = tools or find_tools(apiserver_only=options.apiserver_only)
    node_bins = nodeup.node_binaries() if options.node_count else {}
    folder = options.folder or default_folder(options.name)
    if options.node_count:
        sweep_stale(progress)  # a killed real-node cluster's bridges would collide with ours
    _claim(folder)
    layout = Layout(folder=folder, ports=_ports(), admin_token=secrets.token_urlsafe(24))
    real = None
    if options.node_count:
        ports = free_ports(realnode.needed_ports(options.node_count))
        real = realnode.plan(folder, options.node_count, ports,
                             system=not options.real_nodes)
        nodehost.preflight(real)
        real = nodehost.claim_slot(real)
        layout = dataclasses.replace(layout, node_network=realnode.node_network(real))
    _write_files(layout, options, real)
    cluster = RunningCluster(layout, [], pools, options=options, real=real)
    started_at = time.monotonic()
    try:
        if real is not None:
            nodehost.prepare(real)
            _write_state(cluster, options)
        specs = plan_processes(layout, tools, options.tuning)
        for spec in specs[:2] if options.apiserver_only else specs:
            progress(f"starting {spec.name}")
            started = start(spec, layout.log(spec.name))
            cluster.processes.append(started)
            _write_state(cluster, options)
            wait_healthy(started, spec.health_url, _health_context(layout, spec.name),
                         options.start_timeout, headers=_health_headers(layout, spec.name))
            if spec.name == "kube-apiserver" and options.crds:
                progress(f"serving {len(options.crds)} CRDs before the controllers start")
                _run(_apply(cluster, options.crds))
        if not options.apiserver_only:
            progress(f"creating {sum(p.nodes for p in pools)} Nodes in {len(pools)} pools")
            _run(_kwok_nodes_ready(cluster, options.start_timeout))
            if real is not None:
                _start_real_nodes(cluster, real, node_bins, options, progress)
            else:
                _write_state(cluster, options)
    except BaseException:
        cluster.stop(keep_files=True)
        raise
    progress(f"cluster ready in {time.monotonic() - started_at:.1f} s at {layout.url}")
    return cluster


def _pools(options: ClusterOptions, progress: Progress) -> tuple[PoolSpec, ...]:
    pools = (*parse_nodes(options.nodes), *options.extra_pools)
    if options.real_nodes:
        return realnode.beside_real_nodes(pools)
    return with_system_pool(pools, progress)


def _start_real_nodes(cluster: RunningCluster, real: realnode.RealNodes,
                      bins: Mapping[str, Path], options: ClusterOptions,
                      progress: Progress) -> None:
    from jobset_infra.cluster.images.build import build_images

    began = time.monotonic()
    built = build_images([nodeup.SANDBOX_IMAGE, *options.images], progress)
    sandbox = built[nodeup.SANDBOX_IMAGE].spec.reference
    nodeup.write_files(cluster.layout, real, bins, sandbox)
    _run(_apply(cluster, realnode.coredns_rbac()))

    def register(started: Started) -> None:
        cluster.processes.append(started)
        _write_state(cluster, options)

    nodeup.start_nodes(cluster.layout, real, {b.digest: b.archive for b in built.values()},
                       sandbox_image=sandbox, register=register, progress=progress,
                       timeout=options.start_timeout, bins=bins)
    _run(_real_nodes_ready(cluster, real, options.start_timeout))
    progress(f"{len(real.nodes)} real nodes Ready in {time.monotonic() - began:.1f} s")


async def _apply(cluster: RunningCluster, objects: Sequence[Mapping[str, Any]]) -> None:
    from jobset_infra.cluster.install import apply_all

    async with cluster.client() as api:
        await apply_all(api, objects)


async def _kwok_nodes_ready(cluster: RunningCluster, timeout: float) -> None:
    async with cluster.client() as api:
        await readiness.kwok_nodes_ready(api, cluster, cluster.pools, timeout)


async def _real_nodes_ready(cluster: RunningCluster, real: realnode.RealNodes,
                            timeout: float) -> None:
    async with cluster.client() as api:
        await readiness.until(lambda: readiness.nodes_ready(api, {n.name for n in real.nodes}),
                              timeout, f"{len(real.nodes)} real Nodes Ready (kubelet)", cluster)



def with_system_pool(pools: tuple[PoolSpec, ...], progress: Progress) -> tuple[PoolSpec, ...]:
    """`pools`, plus GKE's one-node default CPU pool when every pool is tainted: a GKE cluster
    always keeps an untainted pool for system Pods, and our controller's Pods need one."""
    if any(not pool.taints for pool in pools):
        return pools
    progress("adding GKE's default-pool (cpu:1) for system Pods: every pool asked for is "
             "tainted")
    return (*pools, *parse_nodes("cpu:1"))


def _run(work: Coroutine[Any, Any, None]) -> None:
    """Run `work` to completion, also when called from inside a running event loop (a test's):
    then on a thread of its own, as `asyncio.run` cannot nest."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(work)
        return
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, work).result()


def _claim(folder: Path) -> None:
    state = folder / "state.json"
    if state.exists():
        existing = load_state(folder)
        if existing is not None and any(existing.running().values()):
            raise ComponentError(
                f"a cluster is already running from {folder}; stop it with "
                f"`jobset-infra cluster down` (or pass --name for a second one)"
            )
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)


def _ports() -> Ports:
    chosen: set[int] = set()
    while len(chosen) < 6:
        chosen.add(free_port())
    etcd_client, etcd_peer, apiserver, kcm, scheduler, kwok = sorted(chosen)
    return Ports(etcd_client, etcd_peer, apiserver, kcm, scheduler, kwok)


def _write_files(layout: Layout, options: ClusterOptions,
                 real: realnode.RealNodes | None = None) -> None:
    clients: tuple[pki.Identity, ...] = pki.CLIENTS
    serving_ips: tuple[str, ...] = ()
    if real is not None:
        clients = (*clients, pki.APISERVER_KUBELET_CLIENT, pki.FRONT_PROXY_CLIENT,
                   realnode.PROXY_IDENTITY,
                   realnode.COREDNS_IDENTITY, *(n.identity for n in real.nodes))
        serving_ips = (real.address, *(n.gateway for n in real.nodes),
                       real.kubernetes_service_ip)
    pki.write_pki(layout.pki.folder, datetime.datetime.now(datetime.UTC), clients, serving_ips)
    layout.token_file.write_text(f'{layout.admin_token},jobset-infra-admin-token,admin-token,'
                                 f'"system:masters"\n')
    layout.token_file.chmod(0o600)
    for who in pki.CLIENTS:
        path = layout.component_kubeconfig(who)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(kubeconfig(layout, who)))
    layout.kubeconfig.write_text(yaml.safe_dump(kubeconfig(layout, pki.ADMIN)))
    layout.scheduler_config.write_text(yaml.safe_dump(scheduler_config(layout, options.tuning)))
    layout.kwok_config.write_text(yaml.safe_dump_all(
        kwok_stages.stages(options.auto_complete_seconds), sort_keys=False))


def _health_context(layout: Layout, name: str) -> ssl.SSLContext | None:
    if name == "kube-apiserver":
        return ssl.create_default_context(cafile=str(layout.pki.ca_cert))
    if name in ("kube-controller-manager", "kube-scheduler"):
        # They serve /healthz with a certificate they make themselves at start-up.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return None


def _health_headers(layout: Layout, name: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {layout.admin_token}"} if name == "kube-apiserver" else {}


# --- the state file: what `down` and `status` read -------------------------------------------


def _write_state(cluster: RunningCluster, options: ClusterOptions) -> None:
    layout = cluster.layout
    state = {
        "version": STATE_VERSION,
        "name": options.name,
        "url": layout.url,
        "nodes": options.nodes,
        "ports": layout.ports.__dict__,
        "admin_token": layout.admin_token,
        "processes": [{"name": p.name, "pid": p.pid, "binary": p.binary, "log": str(p.log)}
                      for p in cluster.processes],
    }
    if cluster.real is not None:
        state["real_nodes"] = cluster.real.to_state()
    layout.state_file.write_text(json.dumps(state, indent=2) + "\n")
    layout.state_file.chmod(0o600)


def load_state(folder: Path) -> RunningCluster | None:
    """The cluster recorded in `folder`, or None when there is no (readable) state file."""
    try:
        state = json.loads((folder / "state.json").read_text())
        layout = Layout(folder=folder, ports=Ports(**state["ports"]),
                        admin_token=state["admin_token"])
        processes = [Started(p["name"], int(p["pid"]), p["binary"], Path(p["log"]))
                     for p in state["processes"]]
        pools = parse_nodes(state["nodes"])
        real = realnode.from_state(folder, state["real_nodes"]) if "real_nodes" in state \
            else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if real is not None:  # its API server listens on the first gateway (`Layout.url`)
        layout = dataclasses.replace(layout, node_network=realnode.node_network(real))
    return RunningCluster(layout, processes, pools, real=real)


def sweep_stale(progress: Progress = print) -> list[Path]:
    """Find the real-node clusters of this machine that were killed (their owner, or every
    process they started, gone: `stale.is_stale`) and remove what they left: their
    processes still running, containers, mounts, cgroups, bridges, kube-proxy's table; the
    kernel tunables put back. Their folders (logs) stay. Returns the folders swept."""
    swept = []
    for record in nodehost.records():
        cluster = load_state(record.folder)
        processes = cluster.processes if cluster is not None else []
        running = [p for p in processes if alive(p)]
        if not stale.is_stale(nodehost.owner_alive(record),
                              [p in running for p in processes]):
            continue
        stopped = stop(running, grace=5.0)
        real = cluster.real if cluster is not None and cluster.real is not None \
            else realnode.footprint(record.folder, record.count)
        nodehost.teardown(real)
        also = f"; stopped {', '.join(stopped)}" if stopped else ""
        progress(f"swept what the killed real-node cluster of {record.folder} left (bridges "
                 f"{', '.join(real.bridges)}, cgroups, mounts, containers){also}")
        swept.append(record.folder)
    return swept
