"""`jobset-infra cluster up | down | status`: the real Kubernetes control plane on this machine.

    jobset-infra cluster up --nodes v5e-2x4:4 --controller
    export KUBECONFIG=$(jobset-infra cluster status --kubeconfig)
    jobset-infra cluster down

`up` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (built by
`make tools`) on loopback, creates Nodes shaped like GKE node pools, and with `--controller`
installs our CRD, RBAC and controller Deployment, whose Pods then run from the controller image
on one real node tainted for system Pods (or on `--real-nodes`), with their ServiceAccount's
token; `--kueue` installs Kueue from its chart as it ships, its manager Pod from the `kueue`
image on that node too; `--system-node` starts that node with both images and installs nothing
(for `pulumi up -s local`). Without any of them, nothing of ours runs: kwok's Pods are fiction.
It returns once everything is healthy and leaves the processes running; `down` stops them by PID
and removes the cluster folder (`--keep-files` keeps logs and certificates).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jobset_infra.cluster.local import RunningCluster
    from jobset_infra.controller.runtime.kube import KubeClient


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    up = sub.add_parser("up", help="start a cluster and return when it is healthy")
    _common(up)
    up.add_argument("--nodes", default=None, metavar="SPEC",
                    help="kwok's Nodes as GKE node pools, e.g. v5e-2x4:4 (4 TPU slice pools of "
                         "2 nodes) or cpu:3 (default; none with --real-nodes), comma-separated "
                         "as for `sim --nodes`")
    up.add_argument("--real-nodes", type=int, default=0, metavar="N",
                    help="also start N real nodes (kubelet, containerd, runc, CNI bridge; one "
                         "kube-proxy and CoreDNS) whose Pods run for real; needs root, `make "
                         "tools` and Debian's runc and nftables (docs/cluster.md)")
    up.add_argument("--image", action="append", default=[], metavar="NAME",
                    help="with --real-nodes: build (if not cached) and import this image of "
                         "`jobset-infra image build` into the nodes; repeatable")
    up.add_argument("--controller", action="store_true",
                    help="install the JobSet CRD, RBAC and our controller, from its image "
                         "(on the real nodes, or on one real node for system Pods; root)")
    up.add_argument("--kueue", action="store_true",
                    help="install Kueue from its chart as it ships, its manager from the "
                         "`kueue` image (on the real nodes, or on the one real node for system "
                         "Pods; root)")
    up.add_argument("--system-node", action="store_true",
                    help="one real node tainted for system Pods, the controller and kueue "
                         "images imported: what a Pulumi stack's JobSetSystem and Kueue run on "
                         "(`pulumi up -s local`); implied by --controller and --kueue without "
                         "--real-nodes; root")
    up.add_argument("--auto-complete", type=float, default=None, metavar="SECONDS",
                    help="every Job's Pod succeeds this many seconds after it starts running "
                         "(default: Pods run until annotated, see docs/cluster.md)")
    down = sub.add_parser("down", help="stop every process of a cluster and remove its files")
    _common(down)
    down.add_argument("--keep-files", action="store_true",
                      help="keep the cluster folder (logs, certificates, kubeconfig)")
    status = sub.add_parser("status", help="show whether each component runs")
    _common(status)
    status.add_argument("-o", "--output", choices=("text", "json"), default="text",
                        help="text (default) or json: one object on stdout for scripts")
    status.add_argument("--kubeconfig", action="store_true", dest="print_kubeconfig",
                        help="print only the kubeconfig path (for export KUBECONFIG=...)")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="local",
                        help="cluster name, so several can run at once (default: local)")
    parser.add_argument("--dir", type=Path, default=None, metavar="FOLDER",
                        help="cluster folder (default: ~/.cache/jobset-infra/clusters/NAME)")


def run(args: argparse.Namespace) -> int:
    from jobset_infra.cluster.binaries import MissingBinaryError
    from jobset_infra.cluster.images.debian import ImageBuildError
    from jobset_infra.cluster.kueue_system import KueueInstallError
    from jobset_infra.cluster.processes import ComponentError
    from jobset_infra.cluster.realnode import RealNodeError
    from jobset_infra.tpu.node_pools import NodeSpecError

    try:
        if args.action == "up":
            with _sigterm_interrupts():
                return _up(args)
        if args.action == "down":
            return _down(args)
        return _status(args)
    except (MissingBinaryError, ComponentError, NodeSpecError, TimeoutError, RealNodeError,
            ImageBuildError, KueueInstallError) as err:
        print(f"jobset-infra cluster {args.action}: {err}", file=sys.stderr)
        return 1
    except Terminated:
        print("jobset-infra cluster up: stopped by SIGTERM; what it had started is stopped",
              file=sys.stderr)
        return 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM during `up`, raised where it is, so `start_cluster` stops what it started as
    after Ctrl-C: the processes run in their own session, out of the signal's reach."""


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(f"signal {signum}")


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # only it may set handlers
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _folder(args: argparse.Namespace) -> Path:
    from jobset_infra.cluster.local import default_folder

    folder: Path = args.dir or default_folder(args.name)
    return folder


def _up(args: argparse.Namespace) -> int:
    from jobset_infra.cluster.local import ClusterOptions, start_cluster

    def say(line: str) -> None:
        print(f"[cluster] {line}", flush=True)

    from jobset_infra.manifests.crd import jobset_crd

    # With --controller the JobSet CRD is served before the controllers start, so the garbage
    # collector knows JobSets from the first (ClusterOptions.crds).
    nodes = args.nodes if args.nodes is not None else ("" if args.real_nodes else "cpu:3")
    # The controller runs from its image, as the Deployment ships it: on the real nodes, or
    # without them on one real node tainted for system Pods beside kwok's pools.
    system = (args.controller or args.kueue or args.system_node) and not args.real_nodes
    images = (*args.image, *(("controller",) if args.controller or args.system_node else ()),
              *(("kueue",) if args.kueue or args.system_node else ()))
    options = ClusterOptions(nodes=nodes, folder=_folder(args), name=args.name,
                             real_nodes=args.real_nodes, images=tuple(dict.fromkeys(images)),
                             system_node=system, auto_complete_seconds=args.auto_complete,
                             crds=(jobset_crd(),) if args.controller or args.kueue else ())
    cluster = start_cluster(options, progress=say)
    if args.controller:
        from jobset_infra.cluster.install import (
            install_jobset_system,
            local_install,
            system_node_install,
        )

        image = controller_image()
        install = system_node_install(image) if system else local_install(image=image)
        say(f"installing the JobSet CRD, RBAC and controller into {install.namespace}")

        _install_or_stop(cluster, lambda api: install_jobset_system(api, install, timeout=300))
        say(f"controller running from {install.image} on the "
            f"{'system node' if system else 'real nodes'}")
    if args.kueue:
        _install_kueue(cluster, system, say)
    cluster.hand_over()  # it outlives this process, until `cluster down`
    from jobset_infra.tool_paths import kubectl_note, shown  # one way to name our tools

    kubectl, cli = shown("kubectl"), shown("jobset-infra")
    lines = [
        f"export KUBECONFIG={cluster.kubeconfig}",
        f"{kubectl} get nodes -L cloud.google.com/gke-nodepool",
        f"{kubectl} apply -f examples/jax-cpu/jobset.yaml   # runs for real (--image workload)"
        if args.real_nodes else
        f"{kubectl} annotate pod POD jobset-infra.dev/exit-code=0   # a Pod's containers exit",
        f"{cli} cluster down{_name_flag(args)}   # stop it all",
        *kubectl_note(),
    ]
    print("\n" + "\n".join(lines) + "\n")
    return 0


def _install_or_stop(cluster: RunningCluster,
                     install: Callable[[KubeClient], Awaitable[object]]) -> None:
    """Run `install` with a client of the new cluster; if it fails, stop the cluster (its files
    kept for the logs) before the error goes on, so a failed `up` leaves nothing running."""

    async def _run() -> None:
        async with cluster.client() as api:
            await install(api)

    try:
        asyncio.run(_run())
    except BaseException:
        cluster.stop(keep_files=True)
        raise


def _install_kueue(cluster: RunningCluster, system: bool, say: Callable[[str], None]) -> None:
    from jobset_infra.cluster.kueue_system import (
        chart_folder,
        install_kueue,
        kueue_image,
        system_node_kueue,
    )
    from jobset_infra.manifests.kueue_spec import KueueInstall, parse_kueue_install

    image = kueue_image()
    version = KueueInstall.model_fields["version"].default
    install = system_node_kueue(image) if system else parse_kueue_install(
        image=image, chart_path=str(chart_folder(version)))
    say(f"installing Kueue {install.version} from its chart into {install.namespace}")
    began = time.monotonic()

    _install_or_stop(cluster, lambda api: install_kueue(api, install, cluster.kubeconfig,
                                                        timeout=300))
    say(f"Kueue running from {image} on the {'system node' if system else 'real nodes'}, "
        f"available {time.monotonic() - began:.1f} s after its install began")


def controller_image() -> str:
    """The controller image by digest (`repository@sha256:...`), from the image cache (the
    real-node start built it, if it had to)."""
    from jobset_infra.cluster.images.build import build_images

    return build_images(["controller"])["controller"].by_digest


def _name_flag(args: argparse.Namespace) -> str:
    parts = []
    if args.name != "local":
        parts.append(f" --name {args.name}")
    if args.dir is not None:
        parts.append(f" --dir {args.dir}")
    return "".join(parts)


def _down(args: argparse.Namespace) -> int:
    from jobset_infra.cluster.local import load_state, sweep_stale

    folder = _folder(args)
    cluster = load_state(folder)
    if cluster is None:
        print(f"no cluster recorded in {folder}; nothing to stop")
    else:
        stopped = cluster.stop(keep_files=args.keep_files)
        kept = f"; files kept in {folder}" if args.keep_files else ""
        print(f"stopped {', '.join(stopped) or 'nothing (all had exited)'}{kept}")
    if os.geteuid() == 0:  # only root makes real nodes, and only root can remove their bridges
        sweep_stale()
    return 0


def _status(args: argparse.Namespace) -> int:
    from jobset_infra.cluster.local import load_state

    folder = _folder(args)
    cluster = load_state(folder)
    as_json = getattr(args, "output", "text") == "json"
    if cluster is None:
        message = f"no cluster recorded in {folder}; start one with `jobset-infra cluster up`"
        if as_json:
            print(json.dumps({"name": args.name, "folder": str(folder), "recorded": False,
                              "running": False, "error": message}, indent=2))
        print(message, file=sys.stderr)
        return 1
    if args.print_kubeconfig:
        print(cluster.kubeconfig)
        return 0
    running = cluster.running()
    if as_json:
        print(json.dumps({
            "name": args.name, "folder": str(folder), "recorded": True,
            "running": all(running.values()), "url": cluster.url,
            "kubeconfig": str(cluster.kubeconfig),
            "components": [{"name": p.name, "pid": p.pid, "running": running[p.name]}
                           for p in cluster.processes],
            "nodePools": [pool.name for pool in cluster.pools],
        }, indent=2))
        return 0 if all(running.values()) else 1
    print(f"cluster {args.name} at {cluster.url}, kubeconfig {cluster.kubeconfig}")
    for name, up in running.items():
        print(f"  {name:<24} {'running' if up else 'NOT RUNNING'}")
    return 0 if all(running.values()) else 1
