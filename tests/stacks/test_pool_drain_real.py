"""Pool changes under a running JobSet, with the real engine on the real local cluster (real).

The `local` stack owns one TPU slice pool as kwok Nodes (`jobset-infra:kwok_pools`, the local
stand-in for a GKE node pool), and a queued one-slice JobSet runs on it, submitted as a user
would (not a resource of the stack). Renaming the pool (`a=...` -> `b=...`: pool `a-0` deleted,
`b-0` created) is a pool change under the JobSet: `pulumi preview` fails naming the JobSet, the
pool and the opt-in. With `jobset-infra:drain_jobsets: true`, `pulumi up` suspends it through
Kueue (its Workload deactivated), deletes the old pool, creates the new one, and resumes it: its
Pods run again on the new pool's Nodes. docs/resilience.md, "Pool changes that know about
running JobSets".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.cluster.engine import EngineError
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.resources import (
    CONFIGMAPS,
    JOBSETS,
    NODES,
    PODS,
    WORKLOADS,
)
from jobset_infra.manifests.workload import TpuJob, TpuTarget, WorkloadSpec, plan_workload
from jobset_infra.placement.drain import DRAINED_ANNOTATION
from jobset_infra.stack.pool_guard import DRAIN_KEY, POOL_RECORD, parse_pool_record
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.pool_changes import pool_settings
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans
from tests.realcluster import real_cluster
from tests.realpulumi import engine_or_skip, run, stack_engine
from tests.waiting import until_sync

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(900)]

LOCAL = "local"
OLD, NEW = "a=v5e-2x4:1", "b=v5e-2x4:1"
CONTAINER = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}


def _train() -> dict[str, Any]:
    [plan] = tpu_plans(parse_pools_text(OLD))
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(plan), slices=1)
    spec = WorkloadSpec(name="train", replicated_jobs=[job], queue="tpu-queue",
                        failure_policy={"maxRestarts": 0})
    return dict(plan_workload(spec).manifest)


def _pools_running(cluster: RunningCluster) -> set[str]:
    """The pools of the Nodes that the JobSet's Pods run on."""
    async def look(api: KubeClient) -> set[str]:
        nodes = {n["metadata"]["name"]: n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL]
                 for n in (await api.list(NODES))["items"]}
        pods = (await api.list(PODS, "default", "jobset.sigs.k8s.io/jobset-name=train"))["items"]
        return {nodes.get(p["spec"].get("nodeName", ""), "?") for p in pods
                if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")}

    found: set[str] = run(look, cluster)
    return found


def _get(cluster: RunningCluster, res: Any, name: str) -> dict[str, Any]:
    async def get(api: KubeClient) -> dict[str, Any]:
        return await api.get(res, name, "default")

    found: dict[str, Any] = run(get, cluster)
    return found


def test_preview_names_the_jobset_a_pool_change_kills_and_the_drain_resumes_it(
        tmp_path: Path) -> None:
    engine_or_skip()
    started = time.monotonic()
    with real_cluster("cpu:2", system_node=True) as cluster:
        engine = stack_engine(cluster, tmp_path / "project", LOCAL)
        for key, value in (("nodes", "cpu:2"), ("kwok_pools", OLD), ("workload.enabled", "false")):
            engine.config_set(LOCAL, f"jobset-infra:{key}", value, path=True)
        engine.up(LOCAL)
        run(lambda api: api.create(JOBSETS, _train()), cluster)
        until_sync(lambda: _pools_running(cluster) == {"a-0"}, timeout=120, every=1.0,
                   what="train's Pods running on pool a-0")

        engine.config_set(LOCAL, "jobset-infra:kwok_pools", NEW)
        with pytest.raises(EngineError) as refused:
            engine.preview(LOCAL)
        said = " ".join(str(refused.value).split())
        assert "would kill 1 running JobSet(s)" in said
        assert "default/train on a-0 (deleted: no longer in the stack's pools)" in said
        assert f"pulumi config set {DRAIN_KEY} true" in said
        assert _pools_running(cluster) == {"a-0"}  # a preview changes nothing

        engine.config_set(LOCAL, DRAIN_KEY, "true")
        update = engine.up(LOCAL)
        assert update.outputs["drainedJobSets"] == ["default/train"]
        assert update.outputs["resumedJobSets"] == ["default/train"]
        ops = update.ops()
        assert ops["gke-sim-a-0-node-0"] == "delete" and ops["gke-sim-b-0-node-0"] == "create"
        until_sync(lambda: _pools_running(cluster) == {"b-0"}, timeout=120, every=1.0,
                   what="train's Pods running again, on the new pool b-0")
        jobset = _get(cluster, JOBSETS, "train")
        assert DRAINED_ANNOTATION not in (jobset["metadata"].get("annotations") or {})
        assert jobset["spec"].get("suspend") is not True
        [workload] = [w for w in run(lambda api: api.list(WORKLOADS, "default"), cluster)["items"]
                      if w["metadata"]["ownerReferences"][0]["name"] == "train"]
        assert workload["spec"].get("active", True) is True
        record = run(lambda api: api.get(CONFIGMAPS, POOL_RECORD, "jobset-system"), cluster)
        assert parse_pool_record(record["data"])[0] == pool_settings(
            tpu_plans(parse_pools_text(NEW)))  # the next preview compares with the new pool
    print(f"pool drain e2e: {time.monotonic() - started:.0f} s")
