"""Jobs stranded on a pool lost before their pods started (controller/core/stranded_jobs.py):
moved off it when a healthy pool or a hot spare has room, left alone otherwise."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api.resilience import SPARE_POOL_LABEL
from jobset_infra.controller.core import reconcile
from jobset_infra.controller.core.child_jobs import construct_jobs
from jobset_infra.controller.core.pod_view import PodView
from jobset_infra.controller.core.stranded_jobs import stranded_candidates, stranded_jobs
from jobset_infra.controller.core.types import (
    CoreConfig,
    CreateJob,
    DeleteJob,
    Manifest,
    Observed,
    child_job_from_manifest,
)
from jobset_infra.placement import Occupancy, SlimNode, job_view_from_manifest
from jobset_infra.placement.inputs import PlacementInputs
from jobset_infra.testing.jobs import job_from
from tests.controller.core.test_slice_health import _jobset
from tests.placement.builders import POOL_KEY, tpu_node

T0 = datetime(2026, 12, 7, 6, 0, 0, tzinfo=UTC)


def _nodes(pools: int, spares: int = 0, *, not_ready: tuple[str, ...] = (),
           cordoned: tuple[str, ...] = (), gone: tuple[str, ...] = ()) -> list[SlimNode]:
    nodes = []
    names = [f"pool-{p}" for p in range(pools)] + [f"spare-{s}" for s in range(spares)]
    for pool in names:
        if pool in gone:
            continue
        for n in range(2):
            node = tpu_node(f"{pool}-node-{n}", pool, ready=pool not in not_ready,
                            unschedulable=pool in cordoned)
            if pool.startswith("spare"):
                node = replace(node, labels={**node.labels, SPARE_POOL_LABEL: "true"})
            nodes.append(node)
    return nodes


def _jobs(js: Any, pools: list[str], **state: Any) -> list[Manifest]:
    jobs = list(construct_jobs(js, js.spec.replicated_jobs[0], (), 0))
    out = []
    for job, pool in zip(jobs, pools, strict=True):
        job["spec"]["template"]["spec"]["nodeSelector"][POOL_KEY] = pool
        builder = job_from(job).uid(f"uid-{job['metadata']['name']}").active(2)
        if state.get("ready"):
            builder = builder.ready(2)
        out.append(builder.obj())
    return out


def _observed(js: Any, jobs: list[Manifest], nodes: list[SlimNode],
              pods: tuple[PodView, ...] | None = (),
              others: tuple[Manifest, ...] = ()) -> Observed[Any]:
    views = [v for v in (job_view_from_manifest(j) for j in (*jobs, *others)) if v is not None]
    inputs = PlacementInputs(tuple(nodes), occupancy=Occupancy.from_views(views))
    return Observed(jobset=js, jobs=tuple(child_job_from_manifest(j) for j in jobs),
                    placement=inputs, pods=pods)


def _moved(observed: Observed[Any]) -> list[str]:
    return [job.name for job in stranded_jobs(observed.jobs, observed, CoreConfig())]


@pytest.mark.parametrize(("nodes", "moved"), [
    pytest.param(_nodes(3, not_ready=("pool-1",)), ["js-slice-1"],
                 id="its pool NotReady, a free healthy pool: moved"),
    pytest.param(_nodes(2, 1, not_ready=("pool-1",)), ["js-slice-1"],
                 id="its pool NotReady, only the spare free: moved (onto the spare)"),
    pytest.param(_nodes(3, cordoned=("pool-1",)), ["js-slice-1"],
                 id="its pool cordoned: moved"),
    pytest.param(_nodes(3, gone=("pool-1",)), ["js-slice-1"],
                 id="its pool's nodes all gone: moved"),
    pytest.param(_nodes(2, not_ready=("pool-1",)), [],
                 id="nowhere to go (no free pool, no spare): left to wait for its pool"),
    pytest.param(_nodes(3), [], id="every pool healthy: nothing moves"),
])
def test_a_job_whose_pool_was_lost_before_its_pods_started_moves_when_there_is_room(
    nodes: list[SlimNode], moved: list[str]
) -> None:
    js = _jobset()
    observed = _observed(js, _jobs(js, ["pool-0", "pool-1"]), nodes)
    assert _moved(observed) == moved


def test_a_job_whose_pods_were_ready_is_not_moved() -> None:
    js = _jobset()
    observed = _observed(js, _jobs(js, ["pool-0", "pool-1"], ready=True),
                         _nodes(3, not_ready=("pool-1",)))
    assert _moved(observed) == []


def test_without_pods_to_go_by_nothing_moves() -> None:
    """A pod running when its Node went NotReady is unready too: the status cannot tell."""
    js = _jobset()
    observed = _observed(js, _jobs(js, ["pool-0", "pool-1"]), _nodes(3, not_ready=("pool-1",)),
                         pods=None)
    assert [j.name for j in stranded_candidates(observed.jobs, observed.placement,
                                                CoreConfig())] == ["js-slice-1"]
    assert _moved(observed) == []


@pytest.mark.parametrize(("started", "moved"), [
    pytest.param(False, ["js-slice-1"], id="its pods unscheduled: not started, moved"),
    pytest.param(True, [], id="a pod past Pending: started, left to its failure policy"),
])
def test_a_pod_past_pending_counts_as_started(
    started: bool, moved: list[str]
) -> None:
    js = _jobset()
    pods = tuple(PodView(f"js-slice-1-{i}", "default", "js", job="js-slice-1", started=started)
                 for i in range(2))
    observed = _observed(js, _jobs(js, ["pool-0", "pool-1"]),
                         _nodes(3, not_ready=("pool-1",)), pods=pods)
    assert _moved(observed) == moved


@pytest.mark.parametrize(("pod", "started"), [
    pytest.param({}, False, id="just created, no status"),
    pytest.param({"status": {"phase": "Pending"}}, False, id="Pending, not scheduled"),
    pytest.param({"spec": {"nodeName": "n"}, "status": {"phase": "Pending"}}, False,
                 id="bound to a host whose kubelet never started it: still Pending"),
    pytest.param({"spec": {"nodeName": "n"}, "status": {"phase": "Running"}}, True,
                 id="Running (also on a host gone NotReady since)"),
    pytest.param({"status": {"phase": "Failed"}}, True, id="Failed: it ran"),
    pytest.param({"status": {"phase": "Unknown"}}, True, id="Unknown: it may run"),
])
def test_a_pod_has_started_once_past_pending(pod: dict[str, Any], started: bool) -> None:
    from jobset_infra.controller.core.pod_view import pod_view_from_manifest

    assert pod_view_from_manifest({"metadata": {"name": "p"}, **pod}).started is started


def test_the_free_pool_held_by_another_jobset_is_no_room() -> None:
    js = _jobset()
    other = _jobset(name="other", replicas=1)
    held = _jobs(other, ["pool-2"])
    observed = _observed(js, _jobs(js, ["pool-0", "pool-1"]), _nodes(3, not_ready=("pool-1",)),
                         others=tuple(held))
    assert _moved(observed) == []


def test_reconcile_deletes_the_stranded_job_and_places_it_again_on_the_spare() -> None:
    js = _jobset()
    nodes = _nodes(2, 1, not_ready=("pool-1",))
    jobs = _jobs(js, ["pool-0", "pool-1"])
    plan = reconcile(_observed(js, jobs, nodes), T0, CoreConfig())
    deleted = [(a.name, a.uid) for a in plan.of_type(DeleteJob)]
    assert deleted == [("js-slice-1", "uid-js-slice-1")]
    assert not plan.of_type(CreateJob)
    # once it is gone, the next pass creates it again, on the spare
    plan = reconcile(_observed(js, jobs[:1], nodes), T0, CoreConfig())
    [create] = plan.of_type(CreateJob)
    assert create.manifest["spec"]["template"]["spec"]["nodeSelector"][POOL_KEY] == "spare-0"


@settings(max_examples=150, deadline=None)
@given(pools=st.integers(2, 5), spares=st.integers(0, 2),
       lost=st.sets(st.integers(0, 4), max_size=3), ready=st.booleans())
def test_a_job_moves_only_off_a_lost_pool_and_only_when_the_restart_tiers_have_room(
    pools: int, spares: int, lost: set[int], ready: bool
) -> None:
    js = _jobset()
    names = [f"pool-{p}" for p in range(pools) if p in lost]
    nodes = _nodes(pools, spares, not_ready=tuple(names))
    observed = _observed(js, _jobs(js, ["pool-0", "pool-1"], ready=ready), nodes)
    moved = _moved(observed)
    on_lost = [f"js-slice-{i}" for i in (0, 1) if i in lost]
    free_healthy = pools - 2 - len([p for p in lost if 2 <= p < pools])
    room = free_healthy + (spares if on_lost else 0)
    if ready or not on_lost or room < len(on_lost):
        assert moved == []
    else:
        assert moved == on_lost
