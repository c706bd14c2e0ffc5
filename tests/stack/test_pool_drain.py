"""The stack program's pool guard under Pulumi's mocks, with a fake cluster (stack.pool_drain).

What the program registers and in which order (the pools wait for the drain record), what it
says at preview, and what it asks the cluster to do at update: the decision itself is tested in
tests/stack/test_pool_guard.py, tests/placement/test_drain.py and tests/tpu/test_pool_changes.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest

from jobset_infra.api import constants as c
from jobset_infra.placement.drain import AtRiskJobSet
from jobset_infra.plan.offline import OfflineRun, ProgramError, run_offline
from jobset_infra.stack.config import load_stack_config
from jobset_infra.stack.pool_drain import DRAIN_STEP, Live
from jobset_infra.stack.pool_guard import DRAIN_KEY, POOL_RECORD, LiveView, pool_record_data
from jobset_infra.stack.program import build_platform
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.tpu.pool_changes import pool_settings
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans

NODE = "kubernetes:core/v1:Node"
CONFIGMAP = "kubernetes:core/v1:ConfigMap"
POOL_KEY = "cloud.google.com/gke-nodepool"


@dataclass
class FakeCluster:
    """The cluster as `Live` sees it, and what the program asked of it."""

    record: dict[str, str] | None = None
    jobsets: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    drained: list[tuple[list[str], list[str]]] = field(default_factory=list)
    resumes: int = 0
    unreachable: bool = False
    drain_fails: bool = False

    def live(self) -> Live:
        async def read(_kubeconfig: str, _context: str | None, _ns: str) -> LiveView:
            if self.unreachable:
                raise ConnectionRefusedError(111, "Connection refused")
            return LiveView(self.jobsets, self.jobs, self.workloads, self.record)

        async def drain(_kubeconfig: str, _context: str | None, pools: Sequence[str],
                        at_risk: Sequence[AtRiskJobSet]) -> None:
            if self.drain_fails:
                raise TimeoutError("default/train still has running Jobs after 300 s")
            self.drained.append((list(pools), [r.key for r in at_risk]))

        async def resume(_kubeconfig: str, _context: str | None) -> list[str]:
            self.resumes += 1
            return ["default/train"]

        return Live(read, drain, resume)

    def running(self, pool: str) -> FakeCluster:
        """A queued JobSet `train` running one exclusive Job on `pool`."""
        self.jobsets.append(make_jobset("train").uid("uid-train").label(
            c.KUEUE_QUEUE_NAME_LABEL, "tpu-queue").obj())
        job = make_job("train", rjob="slice", jobset_uid="uid-train")
        self.jobs.append(job.annotation(c.EXCLUSIVE_KEY, POOL_KEY)
                         .node_selector(**{POOL_KEY: pool}).ready(1).obj())
        self.workloads.append({"metadata": {"name": "jobset-train-1", "namespace": "default",
                                            "ownerReferences": [{"kind": c.KIND,
                                                                 "uid": "uid-train"}]}})
        return self


def _config(tmp_path: Path, kwok_pools: str, *, drain: bool = False) -> dict[str, Any]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    return {
        "platform": "local", "kubeconfig": str(kubeconfig), "nodes": "cpu:2",
        "kwok_pools": kwok_pools, "drain_jobsets": drain,
        "controller": {"image": "jobset-infra.local/jobset-controller:0.1.0"},
        "kueue": {"install": {"version": "0.19.2"}},
    }


def _run(raw: dict[str, Any], cluster: FakeCluster, *, preview: bool = True) -> OfflineRun:
    config = load_stack_config({f"jobset-infra:{k}": json.dumps(v) if not isinstance(v, str)
                                else v for k, v in raw.items()})
    return run_offline(lambda: build_platform(config, live=cluster.live()), stack="local",
                       preview=preview)


def _recorded(text: str) -> dict[str, str]:
    return pool_record_data(pool_settings(tpu_plans(parse_pools_text(text))))


@pytest.mark.slow
def test_the_pools_wait_for_the_drain_step_and_the_pool_record_for_them(
        tmp_path: Path) -> None:
    run = _run(_config(tmp_path, "a=v5e-2x4:2"), FakeCluster())
    anchor = run.named("pool-drain-step", CONFIGMAP)
    assert anchor.inputs["metadata"]["name"] == DRAIN_STEP
    nodes = run.of_type(NODE)
    assert sorted(n.name for n in nodes) == [f"gke-sim-a-{p}-node-{i}" for p in (0, 1)
                                             for i in (0, 1)]
    assert all(anchor.urn in n.dependencies for n in nodes)
    record = run.named("pool-record", CONFIGMAP)
    assert record.inputs["metadata"]["name"] == POOL_RECORD
    assert record.inputs["data"] == _recorded("a=v5e-2x4:2")
    assert {n.urn for n in nodes} <= set(record.dependencies)


def test_a_kwok_pools_node_carries_its_shape_for_kwok(tmp_path: Path) -> None:
    run = _run(_config(tmp_path, "a=v5e-2x4:1"), FakeCluster())
    node = run.named("gke-sim-a-0-node-0", NODE).inputs
    assert node["metadata"]["labels"][POOL_KEY] == "a-0"
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert node["status"]["allocatable"]["google.com/tpu"] == "4"


def test_a_pool_change_under_a_running_jobset_fails_preview_with_the_list_and_the_fix(
        tmp_path: Path) -> None:
    cluster = FakeCluster(record=_recorded("a=v5e-2x4:1")).running("a-0")
    with pytest.raises(ProgramError) as failed:
        _run(_config(tmp_path, "b=v5e-2x4:1"), cluster)
    # A RunError all the way up: the language host prints it as one error, no traceback.
    assert isinstance(failed.value.__cause__, pulumi.RunError)
    message = str(failed.value)
    assert "would kill 1 running JobSet(s)" in message
    assert "default/train on a-0 (deleted: no longer in the stack's pools)" in message
    assert f"pulumi config set {DRAIN_KEY} true" in message
    assert cluster.drained == []


def test_with_the_opt_in_preview_lists_the_jobsets_and_drains_nothing(tmp_path: Path) -> None:
    cluster = FakeCluster(record=_recorded("a=v5e-2x4:1")).running("a-0")
    run = _run(_config(tmp_path, "b=v5e-2x4:1", drain=True), cluster)
    [warning] = [w for w in run.warnings() if "default/train" in w]
    assert "suspends them first and resumes them on the new pools" in warning
    assert (cluster.drained, cluster.resumes) == ([], 0)


@pytest.mark.slow
def test_with_the_opt_in_an_update_drains_before_the_pools_and_resumes_after(
        tmp_path: Path) -> None:
    cluster = FakeCluster(record=_recorded("a=v5e-2x4:1")).running("a-0")
    _run(_config(tmp_path, "b=v5e-2x4:1", drain=True), cluster, preview=False)
    assert cluster.drained == [(["a-0"], ["default/train"])]
    assert cluster.resumes == 1


def test_a_change_of_pools_nothing_runs_on_goes_ahead(tmp_path: Path) -> None:
    cluster = FakeCluster(record=_recorded("a=v5e-2x4:2")).running("a-0")
    run = _run(_config(tmp_path, "a=v5e-2x4:1"), cluster)  # deletes a-1; train is on a-0
    assert not [w for w in run.warnings() if "JobSet" in w]


@pytest.mark.slow
def test_a_gke_stacks_slice_pools_wait_for_the_drain_step() -> None:
    from tests.stacks.stack_runs import run_stack

    run = run_stack("v5e-multislice")
    anchor = run.named("pool-drain-step", CONFIGMAP)
    pools = [r for r in run.of_type("gcp:container/nodePool:NodePool")
             if r.parent_type == "jobset-infra:index:TpuSlicePools"]
    assert sorted(p.name for p in pools) == ["v5e-0", "v5e-1", "v5e-2", "v5e-3"]
    assert all(anchor.urn in p.dependencies for p in pools)
    record = run.named("pool-record", CONFIGMAP)
    assert {p.urn for p in pools} <= set(record.dependencies)


def test_a_cluster_that_cannot_be_read_is_a_warning_at_preview_and_an_error_on_update(
        tmp_path: Path) -> None:
    cluster = FakeCluster(unreachable=True)
    run = _run(_config(tmp_path, "a=v5e-2x4:1"), cluster)
    assert any("cannot read the cluster's JobSets" in w for w in run.warnings())
    with pytest.raises(ProgramError, match="which running JobSets this update's pool changes "
                                           "would kill is unknown; nothing was changed"):
        _run(_config(tmp_path, "a=v5e-2x4:1"), cluster, preview=False)


def test_a_drain_that_fails_stops_the_update_before_any_pool_changes(tmp_path: Path) -> None:
    cluster = FakeCluster(record=_recorded("a=v5e-2x4:1"), drain_fails=True).running("a-0")
    with pytest.raises(ProgramError) as failed:
        _run(_config(tmp_path, "b=v5e-2x4:1", drain=True), cluster, preview=False)
    assert str(failed.value).startswith(
        "draining before the pool change failed (default/train still has running Jobs after "
        "300 s); no pool was changed")
    assert cluster.resumes == 0
