"""The whole platform from one `StackConfig`: cluster, slice pools, JobSet API, Kueue, a JobSet.

`build_platform(config)` is what `stacks/__main__.py` runs:

- platform `local`: an explicit Kubernetes provider from the configured kubeconfig file and
  context (never the ambient one), JobSetSystem, Kueue and a demo JobSet. With TPU pools in
  `nodes` (the cluster's own, e.g. kwok Nodes from `jobset-infra cluster up --nodes v5e-2x4:4`)
  they are the controller's placement domains, Kueue gets a TPU queue holding their chips and
  the JobSet is a queued TPU JobSet on whole slices; without, Kueue has no queues and the JobSet
  is CPU-only;
- platform `gke`: GkeCluster, TpuSlicePools, JobSetSystem (pools declared as placement domains),
  Kueue with a TPU queue holding the pools' chips, and a TPU JobSet on whole slices. With
  `kubeconfig` set, only the Kubernetes half, onto that cluster, whose pools are the planned
  ones (no GCP resource; the real-engine test runs v5e-multislice so on kwok pools).

`read_config()` collects the stack's config as Pulumi hands it to a program.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s
from pulumi.runtime.config import CONFIG, get_config_env

from jobset_infra.components.gke_cluster import GkeCluster
from jobset_infra.components.jobset import JobSet, JobSetArgs, tpu_job
from jobset_infra.components.jobset_system import ImageBuild, JobSetSystem, JobSetSystemArgs
from jobset_infra.components.kueue import Kueue, KueueArgs
from jobset_infra.components.tpu_slice_pools import TpuSlicePools, TpuSlicePoolsArgs
from jobset_infra.stack.config import (
    StackConfig,
    StackConfigError,
    WorkloadSettings,
    load_stack_config,
    placeholder_problems,
)
from jobset_infra.stack.pool_drain import LIVE, Live, PoolChangeGuard, kwok_pools
from jobset_infra.tpu.pools import SlicePoolsPlan

__all__ = ["PLAN_CONTEXT_ENV", "PLAN_KUBECONFIG_ENV", "Platform", "build_platform",
           "read_config", "run"]

PLAN_KUBECONFIG_ENV: Final = "JOBSET_INFRA_PLAN_KUBECONFIG"
"""Set by `jobset-infra plan --kubeconfig PATH` for its run: under Pulumi's mocks the pool
guard reads that cluster, as `pulumi preview` reads the stack's own (never drains: a preview)."""
PLAN_CONTEXT_ENV: Final = "JOBSET_INFRA_PLAN_CONTEXT"


@dataclass
class Platform:
    """What `build_platform` created (for tests and programs that add more)."""

    provider: k8s.Provider
    system: JobSetSystem
    kueue: Kueue | None
    workload: JobSet | None
    cluster: GkeCluster | None = None
    pools: TpuSlicePools | None = None
    guard: PoolChangeGuard | None = None


def read_config() -> dict[str, Any]:
    """Return every config value the program was given (`project:key` -> value)."""
    return {**get_config_env(), **CONFIG.get()}


def run() -> Platform:
    """Read and validate the stack config, build the platform, export its outputs."""
    config = load_stack_config(read_config())
    refuse_placeholders(config)
    platform = build_platform(config, live=_live())
    _export(platform)
    return platform


def refuse_placeholders(config: StackConfig) -> None:
    """Placeholders left in a gke stack: warnings at preview (so `plan` and `pulumi preview` of
    the committed stacks still show everything), an error on update, before any resource is
    registered, listing them all: nothing would be created in a project that is not yours."""
    problems = placeholder_problems(config)
    if problems and not pulumi.runtime.is_dry_run():
        raise StackConfigError(problems)
    for problem in problems:
        pulumi.log.warn(f"{problem} (`pulumi up` refuses this)")


def _under_mocks() -> bool:
    return isinstance(pulumi.runtime.settings.get_monitor(), pulumi.runtime.mocks.MockMonitor)


def _live() -> Live | None:
    """The cluster reads of the pool guard: the stack's cluster under the engine; under Pulumi's
    mocks (`jobset-infra plan`) none, unless `plan --kubeconfig` names a cluster to read."""
    if not _under_mocks():
        return LIVE
    path = os.environ.get(PLAN_KUBECONFIG_ENV)
    if not path:
        return None
    return replace(LIVE, kubeconfig=Path(path).read_text(encoding="utf-8"),
                   context=os.environ.get(PLAN_CONTEXT_ENV) or None)


def build_platform(config: StackConfig, live: Live | None = None) -> Platform:
    """Create every resource the config describes; `live` reads and drains the cluster's
    running JobSets around pool changes (None: nothing is read, nothing drained)."""
    if config.existing_cluster:
        return _existing(config, live)
    return _gke(config, live)


def _existing(config: StackConfig, live: Live | None) -> Platform:
    """The Kubernetes half onto a cluster whose node pools already exist (or, with
    `kwok_pools`, kwok Nodes the stack creates as its own pools)."""
    kubeconfig = _kubeconfig_text(config)
    provider = _kubeconfig_provider(config, kubeconfig)
    plans = config.pool_plans()
    system = _system(config, provider, pools=plans)
    guard = PoolChangeGuard(config, provider, kubeconfig=kubeconfig or "",
                            context=config.context, system=system, live=live)
    pools = kwok_pools(config, kubeconfig or "", after=guard.anchor)
    kueue = _kueue(config, provider, pools=plans, after=[system.crd, guard.anchor])
    guard.finish(changed=pools, ready=_ready(system, kueue))
    workload = (_tpu_workload(config, provider, system, kueue, plans[0]) if plans
                else _cpu_workload(config, provider, system, kueue))
    return Platform(provider, system, kueue, workload, guard=guard)


def _gke(config: StackConfig, live: Live | None) -> Platform:
    cluster = GkeCluster("gke", config.cluster_spec())
    system = _system(config, cluster.provider, pools=(config.slice_pools_plan(),))
    guard = PoolChangeGuard(config, cluster.provider, kubeconfig=cluster.kubeconfig,
                            context=None, system=system, live=live)
    pools = TpuSlicePools(
        "tpu", TpuSlicePoolsArgs.for_cluster(cluster, config.slice_pools_spec()),
        opts=pulumi.ResourceOptions(depends_on=[guard.anchor]),
    )
    kueue = _kueue(config, cluster.provider, pools=(pools.plan,), after=[system.crd, guard.anchor])
    guard.finish(changed=[*pools.pools], ready=_ready(system, kueue))
    workload = _tpu_workload(config, cluster.provider, system, kueue, pools)
    return Platform(cluster.provider, system, kueue, workload, cluster, pools, guard)


def _ready(system: JobSetSystem, kueue: Kueue | None) -> list[pulumi.Resource]:
    return [*system.ready_resources, *(kueue.ready_resources if kueue is not None else ())]


def _kubeconfig_text(config: StackConfig) -> str | None:
    path = Path(os.path.expanduser(config.kubeconfig or "~/.kube/config"))
    return path.read_text() if path.is_file() else None


def _kubeconfig_provider(config: StackConfig, kubeconfig: str | None) -> k8s.Provider:
    path = Path(os.path.expanduser(config.kubeconfig or "~/.kube/config"))
    # The file's contents (not its path) go to the provider, so the state never depends on
    # whatever KUBECONFIG happens to point at when someone runs `pulumi up` later.
    if kubeconfig is None and not pulumi.runtime.is_dry_run():
        raise FileNotFoundError(
            f"jobset-infra:kubeconfig: {path} does not exist; create the cluster (jobset-infra "
            "cluster up, or kind create cluster) or set jobset-infra:kubeconfig to your file"
        )
    if kubeconfig is None:
        pulumi.log.warn(f"jobset-infra:kubeconfig: {path} does not exist (fine for a preview)")
    return k8s.Provider(
        "local-k8s",
        kubeconfig=pulumi.Output.secret(kubeconfig or "apiVersion: v1\nkind: Config\n"),
        context=config.context,
    )


def _system(
    config: StackConfig, provider: k8s.Provider, pools: tuple[SlicePoolsPlan, ...]
) -> JobSetSystem:
    settings = config.controller
    build = None
    if settings.build is not None:
        assert config.project is not None and config.region is not None  # gke-only, checked
        build = ImageBuild(
            project=config.project,
            location=config.cluster_spec().region,
            tag=settings.build.tag,
            repository=settings.build.repository,
            context=settings.build.context,
        )
    return JobSetSystem(
        "jobset",
        JobSetSystemArgs(
            provider=provider, image=settings.image, build=build, pools=pools,
            retain_crd=settings.retain_crd, **settings.options()
        ),
    )


def _kueue(
    config: StackConfig,
    provider: k8s.Provider,
    pools: tuple[SlicePoolsPlan, ...],
    after: Sequence[pulumi.Resource],
) -> Kueue | None:
    if not config.kueue.enabled:
        return None
    return Kueue(
        "kueue",
        KueueArgs(
            provider=provider,
            pools=pools,
            queues=config.kueue.queues,
            install=config.kueue.install,
            install_only=not pools,
            # The stack owns the platform: it creates the team namespaces its queues serve.
            create_namespaces=True,
            placement=config.placement,
        ),
        # After the JobSet CRD, so Kueue's JobSet integration finds the API when it starts;
        # not after the controller's rollout, so the two Deployments become ready side by side
        # (the first `up` of the local stack: 20 s less, docs/stacks.md).
        opts=pulumi.ResourceOptions(depends_on=list(after)),
    )


def _container(settings: WorkloadSettings) -> dict[str, Any]:
    """Return the demo's container: image, command and env (TPU resources are derived later)."""
    container: dict[str, Any] = {
        "name": "main",
        "image": settings.image,
        "command": list(settings.command),
    }
    if settings.env:
        container["env"] = [
            {"name": name, "value": value} for name, value in sorted(settings.env.items())
        ]
    return container


def _tpu_workload(
    config: StackConfig,
    provider: k8s.Provider,
    system: JobSetSystem,
    kueue: Kueue | None,
    pools: TpuSlicePools | SlicePoolsPlan,
) -> JobSet | None:
    settings = config.workload
    if settings is None or not settings.enabled:
        return None
    jobs = [tpu_job(pools, _container(settings), slices=settings.slices)]
    return _jobset(config, provider, system, kueue, jobs, pools=[pools])


def _cpu_workload(
    config: StackConfig, provider: k8s.Provider, system: JobSetSystem, kueue: Kueue | None
) -> JobSet | None:
    settings = config.workload
    if settings is None or not settings.enabled:
        return None
    container = {
        **_container(settings),
        "resources": {"requests": {"cpu": settings.cpu, "memory": settings.memory}},
    }
    rjob = {
        "name": "worker",
        "replicas": settings.replicas,
        "template": {
            "spec": {
                "parallelism": settings.parallelism,
                "completions": settings.parallelism,
                "backoffLimit": 0,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            }
        },
    }
    return _jobset(config, provider, system, kueue, [rjob], pools=[])


def _jobset(
    config: StackConfig,
    provider: k8s.Provider,
    system: JobSetSystem,
    kueue: Kueue | None,
    replicated_jobs: list[Any],
    *,
    pools: list[TpuSlicePools | SlicePoolsPlan],
) -> JobSet:
    settings = config.workload
    assert settings is not None
    queued = config.queued
    return JobSet(
        settings.name,
        JobSetArgs(
            provider=provider,
            name=settings.name,
            replicated_jobs=replicated_jobs,
            namespace=settings.namespace,
            failure_policy={"maxRestarts": settings.max_restarts},
            ttl_seconds_after_finished=settings.ttl_seconds_after_finished,
            queue=config.kueue.queues.local_queue_name if queued else None,
            priority_class=settings.priority_class,
            placement=config.placement,
            system=system,
            kueue=kueue,
            pools=pools,
        ),
    )


def _export(platform: Platform) -> None:
    """Export what `pulumi stack output` should show: where things are and what to watch."""
    pulumi.export("controllerNamespace", platform.system.namespace)
    pulumi.export("controllerImage", platform.system.image)
    if platform.cluster is not None:
        pulumi.export("clusterName", platform.cluster.name)
        pulumi.export("kubeconfig", platform.cluster.kubeconfig)
    if platform.pools is not None:
        pulumi.export("slicePools", platform.pools.pool_names)
        pulumi.export("tpuChips", platform.pools.total_chips)
    if platform.kueue is not None:
        pulumi.export("localQueue", platform.kueue.local_queue_name)
    if platform.guard is not None:
        pulumi.export("drainedJobSets", platform.guard.drained)
        if platform.guard.resumed is not None:
            pulumi.export("resumedJobSets", platform.guard.resumed)
    if platform.workload is not None:
        pulumi.export("jobsetName", platform.workload.name)
        pulumi.export("jobsetNamespace", platform.workload.namespace)
        pulumi.export("childJobs", platform.workload.child_job_names)
