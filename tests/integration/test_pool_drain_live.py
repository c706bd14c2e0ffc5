"""The stack's drain shell (`stack.live`) against the sim with our controller running.

The sim stands in for the cluster a stack deploys to: two-host v5e pool `a-0`, its fake Job
controller and scheduler, and the real controller in-process placing an exclusive JobSet. The
stack's functions talk to it over HTTP through a kubeconfig, as `pulumi up` does: `read_live`
sees the JobSet on its pool, `guard` finds it at risk when `a-0` goes, `drain` cordons `a-0`,
suspends the JobSet (`spec.suspend`: it is not queued) and returns once its Pods are gone. Then
the new pool `b-0` appears and `resume` starts the JobSet again: the controller places it on
`b-0`, since `a-0` (still there, as until the engine deletes it) is cordoned. The Kueue path
(a Workload deactivated, then active again) is the real-engine e2e's (tests/stacks/
test_pool_drain_real.py), where a real Kueue manager runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from jobset_infra.api import constants as c
from jobset_infra.manifests.workload import TpuJob, TpuTarget, WorkloadSpec, plan_workload
from jobset_infra.placement.drain import DRAINED_ANNOTATION, DrainVia
from jobset_infra.sim.cluster.nodes import create_nodes
from jobset_infra.stack.live import drain, read_live, resume
from jobset_infra.stack.pool_guard import guard
from jobset_infra.tpu.node_pools import parse_nodes
from jobset_infra.tpu.pool_changes import pool_settings
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans
from tests.integration.test_placement import (
    JOBS,
    JOBSETS,
    NODES,
    PODS,
    POOL,
    Cluster,
    controller,
    start_cluster,
)
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)
OLD, NEW = "a=v5e-2x4:1", "b=v5e-2x4:1"
NS = "default"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    started = await start_cluster(OLD)
    try:
        yield started
    finally:
        await started.sim.stop()


def _kubeconfig(url: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sim",
        "clusters": [{"name": "sim", "cluster": {"server": url}}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim"}}],
        "users": [{"name": "sim", "user": {}}]})


def _train() -> dict[str, Any]:
    [plan] = tpu_plans(parse_pools_text(OLD))
    container = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}
    job = TpuJob("slice", container, TpuTarget.from_plan(plan), slices=1)
    return dict(plan_workload(WorkloadSpec(name="train", replicated_jobs=[job])).manifest)


def _pools_of(cluster: Cluster) -> set[str]:
    """The pools the train JobSet's running Pods are on."""
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"][POOL]
             for n in cluster.store.list(NODES).items}
    return {nodes.get(p["spec"].get("nodeName", ""), "?")
            for p in cluster.store.list(PODS, NS).items
            if (p["metadata"].get("labels") or {}).get(c.JOBSET_NAME_KEY) == "train"
            and (p.get("status") or {}).get("phase") == "Running"}


def _pools(text: str) -> dict[str, dict[str, str]]:
    return pool_settings(tpu_plans(parse_pools_text(text)))


async def test_drain_stops_the_jobset_and_resume_starts_it_on_the_new_pool(
        cluster: Cluster) -> None:
    kubeconfig = _kubeconfig(cluster.sim.url)
    async with controller(cluster):
        cluster.store.create(JOBSETS, _train())
        await until(lambda: _pools_of(cluster) == {"a-0"}, timeout=30, what="train on a-0")

        view = await read_live(kubeconfig, None, "jobset-system")
        assert view.record is None and view.workloads == []  # no record yet; no Kueue API
        decision = guard(_pools(OLD), _pools(NEW), view.jobsets, view.jobs, view.workloads,
                         drain=True)
        [risk] = decision.drains
        assert (risk.key, risk.drain.via) == ("default/train", DrainVia.SUSPEND)

        await drain(kubeconfig, None, ["a-0"], decision.drains, timeout=30)
        assert all(n["spec"].get("unschedulable") for n in cluster.store.list(NODES).items
                   if n["metadata"]["labels"][POOL] == "a-0")
        jobset = cluster.store.get(JOBSETS, "train", NS)
        assert jobset["spec"]["suspend"] is True
        assert jobset["metadata"]["annotations"][DRAINED_ANNOTATION] == "suspend:train"
        assert not any((j.get("status") or {}).get("active")
                       for j in cluster.store.list(JOBS, NS).items)

        await create_nodes(cluster.store, parse_nodes(NEW), datetime.now(UTC))
        assert await resume(kubeconfig, None) == ["default/train"]
        await until(lambda: _pools_of(cluster) == {"b-0"}, timeout=30,
                    what="train running again, on the new pool b-0")
        jobset = cluster.store.get(JOBSETS, "train", NS)
        assert DRAINED_ANNOTATION not in (jobset["metadata"].get("annotations") or {})
        assert await resume(kubeconfig, None) == []  # nothing left marked
