"""What the components would reject at preview, checked on a `StackConfig` under its keys.

`semantic_problems(config)` runs, after the config's shape is valid, the checks the components
run when the program builds them (cluster spec, slice pools, controller install, Kueue queues)
and the ones only the whole stack can see: a workload its queue would never admit, a placement
mode its pools cannot give (Kueue TAS on pools that start empty without queued provisioning),
queued-provisioning pools whose nodes nothing would ever request. One line per problem, each
naming the key (`jobset-infra:slices.topology: ...`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from jobset_infra.manifests.controller_spec import parse_install
from jobset_infra.manifests.kueue_spec import check_queue_namespaces
from jobset_infra.tpu.cluster import validate_cluster_spec
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.spec import SlicePoolsError

if TYPE_CHECKING:  # config.py imports this module: the type only, to keep imports one-way
    from jobset_infra.stack.config import StackConfig

__all__ = ["NAMESPACE", "semantic_problems"]

NAMESPACE = "jobset-infra"
"""The project's config namespace: keys are `jobset-infra:<field>`."""


def semantic_problems(config: StackConfig) -> list[str]:
    """Return what the components would reject at preview, each under its config key."""
    checks: list[tuple[str, Callable[[], object]]] = [
        ("controller", lambda: _check_controller(config)),
        ("kueue", lambda: _check_kueue(config)),
    ]
    if config.platform == "gke":
        checks.append(("cluster", lambda: validate_cluster_spec(config.cluster_spec())))
    problems = [line for key, check in checks for line in _problems_of(key, check)]
    if config.platform == "gke" and not any(p.startswith(f"{NAMESPACE}:cluster") for p in problems):
        slices = _problems_of("slices", config.slice_pools_plan)
        problems += slices or _problems_of("workload", lambda: _check_workload_fits(config))
    elif config.platform == "local" and config.pool_plans():
        problems += _problems_of("workload", lambda: _check_workload_fits(config))
    if not problems:  # the pools plan: what the whole stack would do with them
        problems += _problems_of("placement", lambda: _check_placement(config))
        problems += _queued_provisioning_problems(config)
    return problems


def _check_workload_fits(config: StackConfig) -> None:
    workload = config.workload
    if workload is None or not workload.enabled:
        return
    if config.queued and workload.namespace not in config.kueue.queues.namespaces:
        # Kueue would never admit it: no LocalQueue in that namespace, the JobSet stays suspended.
        raise SlicePoolsError(
            "namespace",
            f"{workload.namespace!r} has no LocalQueue; add it to {NAMESPACE}:kueue.namespaces "
            "or run the workload in one of them",
        )
    if workload.slices is None:
        return
    # The demo JobSet runs on the first TPU pools the stack has.
    available = config.pool_plans()[0].slices
    where = "slices.slices" if config.platform == "gke" else "nodes"
    if workload.slices > available:
        raise SlicePoolsError(
            "slices",
            f"{workload.slices} slices requested but the stack has {available} "
            f"({NAMESPACE}:{where}); lower it or add slices",
        )


def _problems_of(key: str, check: Callable[[], object]) -> list[str]:
    try:
        check()
    except SlicePoolsError as exc:
        # The tpu specs name their field, and word the fix they suggest as stack keys here
        # (`jobset-infra:slices.multislice: false`, not the Python `multislice=False`).
        return [exc.for_stack(f"{NAMESPACE}:{key}")]
    except ValueError as exc:
        return [f"{NAMESPACE}:{key}: {line}" for line in str(exc).splitlines()]
    return []


def _check_controller(config: StackConfig) -> None:
    image = config.controller.image or "registry.invalid/jobset-controller:build"
    parse_install(image=image, **config.controller.options())


def _check_kueue(config: StackConfig) -> None:
    check_queue_namespaces(config.kueue.queues, config.kueue.install)


def _check_placement(config: StackConfig) -> None:
    """Kueue TAS needs Kueue, and nodes to count: it places pods on Ready nodes only, so pools
    that start empty get nodes under TAS only through a ProvisioningRequest check."""
    if config.placement is not Placer.KUEUE_TAS or not config.pool_plans():
        return
    if not config.kueue.enabled:
        raise ValueError(
            "kueue-tas: Kueue's Topology-Aware Scheduling places the slices, but kueue.enabled "
            "is false; enable Kueue or set placement: controller"
        )
    empty = [p for p in config.pool_plans()
             if p.initial_node_count == 0 and not p.queued_provisioning]
    if empty:
        names = ", ".join(p.name for p in empty)
        raise ValueError(
            f"kueue-tas: pools {names} start with no nodes (flex-start or autoscaling from 0), "
            "and Kueue TAS counts only Ready nodes, so it would never admit a slice there; set "
            f"{NAMESPACE}:slices.queued_provisioning: true (TPU v6e, TPU7x: nodes come through "
            "Kueue's ProvisioningRequest check before TAS places them), or placement: controller"
        )


def _queued_provisioning_problems(config: StackConfig) -> list[str]:
    """Queued-provisioning pools get nodes only through ProvisioningRequests, which Kueue's
    admission check creates for admitted workloads: without Kueue, or with the demo workload
    outside the queue, nothing would ever ask for their nodes."""
    if not any(plan.queued_provisioning for plan in config.pool_plans()):
        return []
    why = ("slices.queued_provisioning: the pools get nodes only through ProvisioningRequests, "
           "which Kueue's admission check creates")
    if not config.kueue.enabled:
        return [f"{NAMESPACE}:kueue.enabled: false, but {why}; enable Kueue or drop "
                "queued_provisioning"]
    workload = config.workload
    if workload is not None and workload.enabled and workload.queued is False:
        return [f"{NAMESPACE}:workload.queued: false, but {why} for queued workloads; queue it "
                "or drop queued_provisioning"]
    return []
