"""The stack's drain shell (`stack.live`) against the sim with our controller running.

The sim stands in for the cluster a stack deploys to: two-host v5e pool `a-0`, its fake Job
controller and scheduler, and the real controller in-process placing an exclusive JobSet. The
stack's functions talk to it over HTTP through a kubeconfig, as `pulumi up` does: `read_live`
sees the JobSet on its pool, `guard` finds it at risk when `a-0` goes, `drain` cordons `a-0`,
suspends the JobSet (`spec.suspend`: it is not queued) and returns once its Pods are gone. Then
the new pool `b-0` appears and `resume` starts the JobSet again: the controller places it on
`b-0`, since `a-0` (still there, as until the engine deletes it) is cordoned. A queued JobSet
goes the same way through its Workload (`spec.active` false, then true), with a stand-in for
Kueue's manager; the real one runs in the real-engine e2e (tests/stacks/test_pool_drain_real.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from jobset_infra.api import constants as c
from jobset_infra.controller.runtime.kube import MERGE_PATCH
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

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]
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


# A stand-in for Kueue's Workload CRD (any content), and for its manager's one rule the drain
# relies on: a deactivated Workload's JobSet is suspended, an active one's is not.
WORKLOAD_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "workloads.kueue.x-k8s.io"},
    "spec": {"group": "kueue.x-k8s.io", "scope": "Namespaced",
             "names": {"plural": "workloads", "singular": "workload", "kind": "Workload",
                       "listKind": "WorkloadList"},
             "versions": [{"name": "v1beta2", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {
                               "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


async def _kueue_stand_in(cluster: Cluster, workloads: Any) -> None:
    while True:
        workload = cluster.store.get(workloads, "jobset-train-1", NS)
        jobset = cluster.store.get(JOBSETS, "train", NS)
        suspend = workload["spec"].get("active") is False
        if bool(jobset["spec"].get("suspend")) != suspend:
            cluster.store.patch(JOBSETS, "train", NS, MERGE_PATCH, {"spec": {"suspend": suspend}})
        await asyncio.sleep(0.1)


async def test_a_queued_jobset_is_drained_and_resumed_through_its_workload(
        cluster: Cluster) -> None:
    from jobset_infra.sim.apiserver.resources import GVR
    from tests.integration.test_placement import CRDS

    workloads = GVR("kueue.x-k8s.io", "v1beta2", "workloads")
    cluster.store.create(CRDS, WORKLOAD_CRD)
    kubeconfig = _kubeconfig(cluster.sim.url)
    async with controller(cluster):
        train = _train()
        train["metadata"].setdefault("labels", {})[c.KUEUE_QUEUE_NAME_LABEL] = "tpu-queue"
        created = cluster.store.create(JOBSETS, train)
        cluster.store.create(workloads, {
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "jobset-train-1", "namespace": NS, "ownerReferences": [
                {"apiVersion": c.API_VERSION, "kind": c.KIND, "name": "train",
                 "uid": created["metadata"]["uid"], "controller": True}]},
            "spec": {"active": True, "queueName": "tpu-queue"}})
        kueue = asyncio.create_task(_kueue_stand_in(cluster, workloads))
        try:
            await until(lambda: _pools_of(cluster) == {"a-0"}, timeout=30, what="train on a-0")
            view = await read_live(kubeconfig, None, "jobset-system")
            decision = guard(_pools(OLD), _pools(NEW), view.jobsets, view.jobs, view.workloads,
                             drain=True)
            [risk] = decision.drains
            assert (risk.drain.via, risk.drain.name) == (DrainVia.KUEUE, "jobset-train-1")
            await drain(kubeconfig, None, ["a-0"], decision.drains, timeout=30)
            assert cluster.store.get(workloads, "jobset-train-1", NS)["spec"]["active"] is False
            assert _pools_of(cluster) == set()
            await create_nodes(cluster.store, parse_nodes(NEW), datetime.now(UTC))
            assert await resume(kubeconfig, None) == ["default/train"]
            assert cluster.store.get(workloads, "jobset-train-1", NS)["spec"]["active"] is True
            await until(lambda: _pools_of(cluster) == {"b-0"}, timeout=30,
                        what="train running again, on the new pool b-0")
            assert not kueue.done()  # the stand-in ran throughout (did not die on an error)
        finally:
            kueue.cancel()
