"""jobsets_at_risk: the running JobSets a pool change kills, and how each is drained."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.placement.drain import (
    AtRiskJobSet,
    Drain,
    DrainVia,
    at_risk_report,
    drain_from_annotation,
    jobsets_at_risk,
)
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.tpu.pool_changes import PoolChange, PoolChangeKind

POOL_KEY = "cloud.google.com/gke-nodepool"
REPLACED = PoolChange("v5e-0", PoolChangeKind.REPLACED, "machine_type 'a' -> 'b'")
DELETED = PoolChange("v5e-1", PoolChangeKind.DELETED, "no longer in the stack's pools")


def _jobset(name: str, *, queued: bool = False, suspended: bool = False,
            namespace: str = "default") -> dict[str, Any]:
    builder = make_jobset(name, namespace).uid(f"uid-{name}").exclusive(POOL_KEY)
    if queued:
        builder.label(c.KUEUE_QUEUE_NAME_LABEL, "tpu-queue")
    if suspended:
        builder.suspend()
    return builder.obj()


def _job(jobset: str, index: int, pool: str | None, *, key: str = POOL_KEY,
         running: bool = True, namespace: str = "default") -> dict[str, Any]:
    builder = make_job(jobset, namespace, rjob="slice", index=index, jobset_uid=f"uid-{jobset}")
    builder.annotation(c.EXCLUSIVE_KEY, key)
    if pool is not None:
        builder.node_selector(**{key: pool})
    if running:
        builder.ready(1)
    else:
        builder.completed()
    return builder.obj()


def _workload(name: str, jobset: str, namespace: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace, "ownerReferences": [
        {"kind": c.KIND, "name": jobset, "uid": f"uid-{jobset}", "controller": True}]}}


def test_a_jobset_on_a_replaced_pool_is_named_with_the_change_under_it() -> None:
    found = jobsets_at_risk([REPLACED, DELETED], [_jobset("train")],
                            [_job("train", 0, "v5e-0"), _job("train", 1, "v5e-7")])
    assert found == (AtRiskJobSet("default", "train", (REPLACED,),
                                  Drain(DrainVia.SUSPEND, "default", "train")),)
    assert at_risk_report(found) == (
        "  default/train on v5e-0 (replaced: machine_type 'a' -> 'b')")


def test_a_queued_jobset_is_drained_through_its_kueue_workload() -> None:
    [risk] = jobsets_at_risk([DELETED], [_jobset("train", queued=True)],
                             [_job("train", 0, "v5e-1")],
                             [_workload("other", "someone-else"),
                              _workload("jobset-train-1a2b3", "train")])
    assert risk.drain == Drain(DrainVia.KUEUE, "default", "jobset-train-1a2b3")


def test_a_queued_jobset_whose_workload_is_not_seen_is_suspended_itself() -> None:
    [risk] = jobsets_at_risk([DELETED], [_jobset("train", queued=True)],
                             [_job("train", 0, "v5e-1")], [])
    assert risk.drain.via is DrainVia.SUSPEND


@pytest.mark.parametrize(("jobsets", "jobs"), [
    pytest.param([_jobset("train")], [_job("train", 0, "v5e-3")],
                 id="a JobSet on pools the update keeps is not at risk"),
    pytest.param([_jobset("train")], [_job("train", 0, "v5e-0", running=False)],
                 id="a finished Job no longer holds its pool"),
    pytest.param([_jobset("train", suspended=True)], [_job("train", 0, "v5e-0")],
                 id="a suspended JobSet is not running"),
    pytest.param([_jobset("train")], [_job("train", 0, None)],
                 id="a Job not yet placed is on no pool"),
    pytest.param([_jobset("train")], [_job("train", 0, "v5e-0", key="rack")],
                 id="a Job placed on another topology key is not on a node pool"),
    pytest.param([], [_job("train", 0, "v5e-0")],
                 id="Jobs whose JobSet is gone belong to nobody to drain"),
])
def test_jobsets_not_at_risk(jobsets: list[dict[str, Any]], jobs: list[dict[str, Any]]) -> None:
    assert jobsets_at_risk([REPLACED, DELETED], jobsets, jobs) == ()


def test_jobsets_are_told_apart_by_namespace_and_listed_in_order() -> None:
    jobsets = [_jobset("b"), _jobset("a", namespace="team"), _jobset("a")]
    jobs = [_job("b", 0, "v5e-1"), _job("a", 0, "v5e-0", namespace="team"),
            _job("a", 0, "v5e-1"), _job("a", 1, "v5e-0")]
    found = jobsets_at_risk([REPLACED, DELETED], jobsets, jobs)
    assert [(r.key, [ch.pool for ch in r.changes]) for r in found] == [
        ("default/a", ["v5e-0", "v5e-1"]), ("default/b", ["v5e-1"]), ("team/a", ["v5e-0"])]


_POOLS = [f"v5e-{i}" for i in range(4)]


@settings(max_examples=40)
@given(st.sets(st.sampled_from(_POOLS)),
       st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(_POOLS),
                          st.booleans()), max_size=8))
def test_a_jobset_is_at_risk_exactly_when_a_running_job_of_it_is_on_a_changed_pool(
        changed: set[str], placed: list[tuple[str, str, bool]]) -> None:
    changes = [PoolChange(p, PoolChangeKind.DELETED, "gone") for p in sorted(changed)]
    jobs = [_job(name, i, pool, running=running) for i, (name, pool, running)
            in enumerate(placed)]
    found = jobsets_at_risk(changes, [_jobset(n) for n in "abc"], jobs)
    expected = {name for name, pool, running in placed if running and pool in changed}
    assert {r.name for r in found} == expected
    for risk in found:
        assert {ch.pool for ch in risk.changes} == {
            pool for name, pool, running in placed
            if name == risk.name and running and pool in changed}


@given(st.sampled_from(list(DrainVia)), st.text(min_size=1).filter(lambda s: ":" not in s))
def test_the_drained_annotation_says_how_to_resume(via: DrainVia, name: str) -> None:
    drain = Drain(via, "team", name)
    assert drain_from_annotation("team", drain.annotation()) == drain


@pytest.mark.parametrize("value", [
    pytest.param("", id="an empty value is not ours"),
    pytest.param("kueue", id="a value without a name is not ours"),
    pytest.param("stop:train", id="an unknown way of draining is not ours"),
])
def test_an_annotation_that_is_not_ours_resumes_nothing(value: str) -> None:
    assert drain_from_annotation("team", value) is None


# --- JobSets Kueue's TAS placed: their Jobs name no pool, their Workload's assignment does --------

HOST_KEY = "kubernetes.io/hostname"


def _tas_workload(jobset: str, slices: list[dict[str, Any]], *, levels: tuple[str, ...] = (
        POOL_KEY, HOST_KEY), admitted: bool = True, finished: bool = False) -> dict[str, Any]:
    workload = _workload(f"jobset-{jobset}", jobset)
    conditions = [{"type": "Admitted", "status": "True" if admitted else "False"}]
    if finished:
        conditions.append({"type": "Finished", "status": "True"})
    workload["status"] = {"conditions": conditions, "admission": {"podSetAssignments": [
        {"name": "slice", "topologyAssignment": {"levels": list(levels), "slices": slices}}]}}
    return workload


def _universal(pool: str, host: str, pods: int = 2) -> dict[str, Any]:
    return {"domainCount": 1, "valuesPerLevel": [{"universal": pool}, {"universal": host}],
            "podCounts": {"universal": pods}}


def _tas_job(jobset: str, index: int) -> dict[str, Any]:
    # What a TAS JobSet's Job looks like: no exclusive-topology annotation, no pool selector.
    builder = make_job(jobset, "default", rjob="slice", index=index, jobset_uid=f"uid-{jobset}")
    return builder.ready(2).obj()


@pytest.mark.parametrize(("workload", "pools"), [
    pytest.param(_tas_workload("t", [_universal("v5e-0", "h0"), _universal("v5e-1", "h1")]),
                 {"v5e-0", "v5e-1"}, id="v1beta2: one value for all of a slice's domains"),
    pytest.param(_tas_workload("t", [{
        "domainCount": 3,
        "valuesPerLevel": [{"individual": {"prefix": "v5e-", "roots": ["0", "2", "3"]}},
                           {"individual": {"prefix": "gke-", "suffix": "-x",
                                           "roots": ["a", "b", "c"]}}],
        "podCounts": {"individual": [2, 2, 2]}}]),
        {"v5e-0", "v5e-2", "v5e-3"}, id="v1beta2: a value per domain, prefix and suffix"),
    pytest.param({**_tas_workload("t", []), "status": {
        "conditions": [{"type": "Admitted", "status": "True"}],
        "admission": {"podSetAssignments": [{"topologyAssignment": {
            "levels": [POOL_KEY, HOST_KEY],
            "domains": [{"values": ["v5e-1", "h1"], "count": 2}]}}]}}},
        {"v5e-1"}, id="v1beta1: domains with their values"),
    pytest.param(_tas_workload("t", [_universal("h0", "x")], levels=(HOST_KEY, "other")),
                 {"v5e-0"}, id="hosts only: their Nodes' pool"),
    pytest.param(_tas_workload("t", [_universal("v5e-0", "h0")], admitted=False), set(),
                 id="not admitted (evicted, waiting): on no pool"),
    pytest.param(_tas_workload("t", [_universal("v5e-0", "h0")], finished=True), set(),
                 id="finished: on no pool"),
    pytest.param(_workload("w", "t"), set(), id="no status: on no pool"),
    pytest.param({**_tas_workload("t", []), "status": {
        "conditions": [{"type": "Admitted", "status": "True"}],
        "admission": {"podSetAssignments": [{"name": "slice", "flavors": {}}]}}},
        set(), id="admitted without TAS (the controller's placement): on no pool here"),
])
def test_the_pools_kueues_topology_assignment_gives_a_workload(
    workload: dict[str, Any], pools: set[str]
) -> None:
    from jobset_infra.placement.drain import tas_assigned

    assert tas_assigned(workload, POOL_KEY, {"h0": "v5e-0", "h1": "v5e-1"}) == pools


def test_a_running_tas_jobset_on_a_changed_pool_is_named_and_drained_through_kueue() -> None:
    workload = _tas_workload("tas", [_universal("v5e-0", "h0"), _universal("v5e-2", "h2")])
    found = jobsets_at_risk([REPLACED, DELETED], [_jobset("tas", queued=True)],
                            [_tas_job("tas", 0), _tas_job("tas", 1)], [workload])
    assert found == (AtRiskJobSet("default", "tas", (REPLACED,),
                                  Drain(DrainVia.KUEUE, "default", "jobset-tas")),)


@settings(max_examples=60)
@given(st.sets(st.sampled_from(_POOLS)),
       st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from(_POOLS),
                          st.sampled_from(["job", "tas", "tas-by-host"]), st.booleans()),
                max_size=8))
def test_one_rule_for_both_placements_a_jobset_is_at_risk_when_it_runs_on_a_changed_pool(
        changed: set[str], placed: list[tuple[str, str, str, bool]]) -> None:
    """Placed by the controller (a Job naming its pool) or by TAS (its admitted Workload's
    assignment, by pool or by host): at risk exactly when running on a changed pool."""
    changes = [PoolChange(p, PoolChangeKind.DELETED, "gone") for p in sorted(changed)]
    hosts = {f"host-{p}": p for p in _POOLS}
    jobs, workloads = [], []
    for i, (name, pool, how, running) in enumerate(placed):
        if how == "job":
            jobs.append(_job(name, i, pool, running=running))
            continue
        levels = (POOL_KEY, HOST_KEY) if how == "tas" else (HOST_KEY,)
        values = [{"universal": pool}, {"universal": f"host-{pool}"}] if how == "tas" \
            else [{"universal": f"host-{pool}"}]
        part = {"domainCount": 1, "valuesPerLevel": values, "podCounts": {"universal": 2}}
        workloads.append(_tas_workload(name, [part], levels=levels, admitted=running))
    found = jobsets_at_risk(changes, [_jobset(n) for n in "abc"], jobs, workloads,
                            node_pools=hosts)
    expected: dict[str, set[str]] = {}
    for name, pool, _, running in placed:
        if running and pool in changed:
            expected.setdefault(name, set()).add(pool)
    assert {r.name: {ch.pool for ch in r.changes} for r in found} == expected
