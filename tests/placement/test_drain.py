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
