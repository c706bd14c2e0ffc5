"""Read what `explain` needs from a cluster: gets and lists only (the shell around diagnosis).

One JobSet, its Jobs and pods, the Nodes and every Job (who holds which pool), the controller's
slice-health ledger, and, when Kueue serves its API, the JobSet's Workload, its LocalQueue and
ClusterQueue and the Workloads admitted there. Anything the caller may not read (403) or that
does not exist (404) is left out and the diagnosis says what it could not see.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.resilience import LEDGER_CONFIGMAP, LEDGER_KEY
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.kube_errors import ForbiddenError, NotFoundError
from jobset_infra.controller.runtime.resources import (
    CONFIGMAPS,
    JOBS,
    JOBSETS,
    NODES,
    PODS,
    WORKLOADS,
    Resource,
)
from jobset_infra.explain.diagnosis import Gathered
from jobset_infra.placement.pool_health import HealthPolicy

__all__ = ["CLUSTER_QUEUES", "LOCAL_QUEUES", "WORKLOADS", "gather"]

_KUEUE_GROUP, _KUEUE_VERSION = c.KUEUE_API_VERSION.split("/")
LOCAL_QUEUES = Resource(_KUEUE_GROUP, _KUEUE_VERSION, "localqueues", "LocalQueue")
CLUSTER_QUEUES = Resource(_KUEUE_GROUP, _KUEUE_VERSION, "clusterqueues", "ClusterQueue",
                          namespaced=False)


async def _maybe_get(api: KubeClient, res: Resource, name: str,
                     namespace: str | None = None) -> dict[str, Any] | None:
    try:
        return await api.get(res, name, namespace)
    except (NotFoundError, ForbiddenError):
        return None


async def _maybe_list(api: KubeClient, res: Resource, namespace: str | None = None,
                      selector: str = "") -> list[dict[str, Any]] | None:
    try:
        items: list[dict[str, Any]] = (await api.list(res, namespace, selector))["items"]
    except (NotFoundError, ForbiddenError):
        return None
    return items


async def gather(api: KubeClient, namespace: str, name: str, *, controller_namespace: str,
                 policy: HealthPolicy, now: datetime | None = None) -> Gathered:
    """Return what the diagnosis reads about JobSet `namespace/name` (NotFoundError if none)."""
    jobset = await api.get(JOBSETS, name, namespace)
    selector = f"{c.JOBSET_NAME_KEY}={name}"
    jobs, pods, nodes, all_jobs, ledger, workloads = await asyncio.gather(
        _maybe_list(api, JOBS, namespace, selector), _maybe_list(api, PODS, namespace, selector),
        _maybe_list(api, NODES), _maybe_list(api, JOBS),
        _maybe_get(api, CONFIGMAPS, LEDGER_CONFIGMAP, controller_namespace),
        _maybe_list(api, WORKLOADS))
    uid = jobset["metadata"].get("uid")
    workload = next((w for w in workloads or () if any(
        o.get("uid") == uid for o in w["metadata"].get("ownerReferences") or ())), None)
    local_queue = cluster_queue = None
    if workload is not None and (queue := (workload.get("spec") or {}).get("queueName")):
        local_queue = await _maybe_get(api, LOCAL_QUEUES, queue, namespace)
        cq = ((local_queue or {}).get("spec") or {}).get("clusterQueue")
        cluster_queue = await _maybe_get(api, CLUSTER_QUEUES, cq) if cq else None
    return Gathered(
        jobset=jobset, now=now or datetime.now(UTC), jobs=jobs or (), pods=pods or (),
        nodes=nodes, all_jobs=all_jobs or (),
        ledger=((ledger or {}).get("data") or {}).get(LEDGER_KEY), policy=policy,
        kueue=workloads is not None, workload=workload, workloads=workloads or (),
        local_queue=local_queue, cluster_queue=cluster_queue)
