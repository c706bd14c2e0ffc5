"""The real path in one go: the local cluster, `pulumi up -s local`, the JobSet to Completed.

`deploy_up(options)` (what `make up` / `jobset-infra deploy up` runs):

1. the cluster: reuse the running one of that name, else start it with the stack's node pools
   (`jobset-infra:nodes`), pods that finish by themselves (`auto_complete_seconds`) and the
   system node the stack's controller and Kueue run on, the controller and kueue images
   imported (root and the node tools: docs/cluster.md);
2. `pulumi up -s <stack>` with the real engine (`cluster.engine`, through the Automation API),
   the CLI's output streamed line by line and a count of the resources it changed at the end;
   the stack's state lives in the cluster folder (`<cluster>/pulumi`), so a new cluster starts
   from an empty stack;
3. the stack's JobSet (its `jobsetName`/`jobsetNamespace` outputs) watched until it finishes,
   one progress line whenever what Kueue and the controller report changes.

`deploy_down` destroys the stack and stops the cluster. Progress goes to a callback (`say`);
the CLI's own lines to `echo` (default: printed as they come).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from jobset_infra.cluster.engine import Engine, engine_env
from jobset_infra.cluster.local import (
    ClusterOptions,
    RunningCluster,
    default_folder,
    load_state,
    start_cluster,
)
from jobset_infra.controller.runtime.kube import ApiError, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import JOBSETS, WORKLOADS

Progress = Callable[[str], None]
NAMESPACE_KEY: Final = "jobset-infra"
DEFAULT_NODES: Final = "cpu:3"
SYSTEM_IMAGES: Final = ("controller", "kueue")


class DeployError(RuntimeError):
    """The real path stopped; the message says where and what to look at."""


@dataclass(frozen=True)
class DeployOptions:
    project: Path
    stack: str = "local"
    cluster_name: str = "local"
    auto_complete_seconds: float | None = 10.0
    watch_timeout: float = 600.0
    watch: bool = True


def find_project(start: Path) -> Path:
    """The folder holding Pulumi.yaml, from `start` upwards."""
    for folder in (start, *start.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    raise DeployError(f"no Pulumi.yaml in {start} or above; run from the repository")


def stack_config(project: Path, stack: str) -> dict[str, Any]:
    """The committed config of `stack` (`jobset-infra:<key>` -> value)."""
    meta = yaml.safe_load((project / "Pulumi.yaml").read_text()) or {}
    path = project / meta.get("stackConfigDir", ".") / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        raise DeployError(f"no stack file {path}")
    config: dict[str, Any] = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    return config


def state_folder(cluster: RunningCluster) -> Path:
    return cluster.layout.folder / "pulumi"


def engine_for(project: Path, cluster: RunningCluster) -> Engine:
    state = state_folder(cluster)
    return Engine(project, state, engine_env(state))


def ensure_cluster(options: DeployOptions, config: Mapping[str, Any],
                   say: Progress) -> RunningCluster:
    """The running cluster of that name, else a new one with the stack's node pools."""
    folder = default_folder(options.cluster_name)
    existing = load_state(folder)
    if existing is not None and all(existing.running().values()):
        say(f"reusing the running cluster {options.cluster_name} at {existing.url}")
        return existing
    nodes = str(config.get(f"{NAMESPACE_KEY}:nodes") or DEFAULT_NODES)
    # The stack's JobSetSystem and Kueue run on the system node, from these images.
    return start_cluster(ClusterOptions(nodes=nodes, folder=folder, name=options.cluster_name,
                                        auto_complete_seconds=options.auto_complete_seconds,
                                        system_node=True, images=SYSTEM_IMAGES),
                         progress=say)


def check_stack_targets(config: Mapping[str, Any], cluster: RunningCluster) -> None:
    """The stack's kubeconfig must be this cluster's, or `pulumi up` goes elsewhere."""
    configured = config.get(f"{NAMESPACE_KEY}:kubeconfig")
    if configured and Path(str(configured)).expanduser().resolve() != cluster.kubeconfig.resolve():
        raise DeployError(
            f"{NAMESPACE_KEY}:kubeconfig is {configured}, but cluster "
            f"{cluster.layout.folder.name} lives at {cluster.kubeconfig}; use that cluster "
            "name or set the stack's kubeconfig to it"
        )


def deploy_up(options: DeployOptions, say: Progress = print,
              echo: Progress = print) -> dict[str, Any]:
    """Cluster, `pulumi up`, the JobSet watched to its end; the stack outputs."""
    started = time.monotonic()
    config = stack_config(options.project, options.stack)
    cluster = ensure_cluster(options, config, say)
    check_stack_targets(config, cluster)
    engine = engine_for(options.project, cluster)
    engine.select(options.stack)
    say(f"pulumi up -s {options.stack} (the real engine; state in {state_folder(cluster)})")
    update = engine.up(options.stack, echo=echo)
    say(f"pulumi up: {change_line(update.ops())} in {update.seconds:.0f} s")
    outputs = dict(update.outputs)
    if drained := drain_line(outputs):
        say(drained)
    if options.watch and outputs.get("jobsetName"):
        final = asyncio.run(watch_jobset(cluster, str(outputs["jobsetNamespace"]),
                                         str(outputs["jobsetName"]), options.watch_timeout, say))
        say(f"JobSet {outputs['jobsetName']}: {final}")
    say(f"done in {time.monotonic() - started:.0f} s")
    return outputs


def deploy_down(options: DeployOptions, say: Progress = print, echo: Progress = print) -> None:
    """`pulumi destroy` of the stack, then the cluster stopped and its folder removed."""
    cluster = load_state(default_folder(options.cluster_name))
    if cluster is None:
        say(f"no cluster {options.cluster_name}; nothing to destroy")
        return
    if all(cluster.running().values()) and (state_folder(cluster) / "backend").exists():
        engine = engine_for(options.project, cluster)
        engine.select(options.stack)
        destroyed = engine.destroy(options.stack, echo=echo)
        say(f"pulumi destroy: {change_line(destroyed.ops())} in {destroyed.seconds:.0f} s")
    say(f"stopped {', '.join(cluster.stop()) or 'nothing'}")


def drain_line(outputs: Mapping[str, Any]) -> str:
    """What the update drained for a pool change and resumed (`drainedJobSets` and
    `resumedJobSets`, docs/resilience.md); empty when nothing. Pure."""
    drained, resumed = outputs.get("drainedJobSets") or [], outputs.get("resumedJobSets") or []
    if not drained and not resumed:
        return ""
    return (f"pool change: drained {', '.join(drained) or 'none'}; resumed on the new pools "
            f"{', '.join(resumed) or 'none'}")


def change_line(ops: Mapping[str, str]) -> str:
    """`3 create, 1 replace` for the resources an engine command changed; pure."""
    counts = Counter(ops.values())
    return ", ".join(f"{n} {op}" for op, n in sorted(counts.items())) or "no changes"


async def watch_jobset(cluster: RunningCluster, namespace: str, name: str, timeout: float,
                       say: Progress) -> str:
    """Print a line whenever the JobSet's progress changes; return how it ended."""
    deadline = time.monotonic() + timeout
    last = ""
    async with cluster.client() as api:
        while time.monotonic() < deadline:
            line, finished = await _progress(api, namespace, name)
            if line != last:
                say(f"  {namespace}/{name}: {line}")
                last = line
            if finished:
                return finished
            await asyncio.sleep(1.0)
    raise DeployError(f"JobSet {namespace}/{name} did not finish within {timeout:g} s "
                      f"(last: {last}); look with kubectl (KUBECONFIG={cluster.kubeconfig})")


async def _progress(api: KubeClient, namespace: str, name: str) -> tuple[str, str]:
    try:
        jobset = await api.get(JOBSETS, name, namespace)
    except NotFoundError:
        return "not created yet", ""
    try:
        workloads = (await api.list(WORKLOADS, namespace=namespace))["items"]
    except ApiError:
        workloads = []
    mine = [w for w in workloads
            if any(o.get("uid") == jobset["metadata"]["uid"]
                   for o in w["metadata"].get("ownerReferences") or [])]
    return progress_line(jobset, mine)


def progress_line(jobset: Mapping[str, Any], workloads: Sequence[Mapping[str, Any]],
                  ) -> tuple[str, str]:
    """One line about a JobSet and its Kueue Workloads, and its end ("" while it runs). Pure."""
    status = jobset.get("status") or {}
    true = [c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"]
    finished = next((c for c in ("Completed", "Failed") if c in true), "")
    parts = [f"suspended={bool((jobset.get('spec') or {}).get('suspend'))}"]
    for wl in workloads:
        admission = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue")
        parts.append(f"workload {wl['metadata']['name']} "
                     f"{'admitted by ' + admission if admission else 'pending'}")
    jobs = status.get("replicatedJobsStatus") or []
    if jobs:
        counts = ", ".join(f"{j['name']}: {j.get('active', 0)} active/{j.get('ready', 0)} ready/"
                           f"{j.get('succeeded', 0)} succeeded" for j in jobs)
        parts.append(f"jobs {counts}")
    if true:
        parts.append("conditions " + ",".join(sorted(true)))
    return "; ".join(parts), finished
