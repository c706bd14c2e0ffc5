"""stack.pool_guard: refuse, drain or go ahead, what preview says, and the pool record."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.placement.drain import DrainVia
from jobset_infra.stack.pool_guard import (
    DRAIN_KEY,
    POOL_RECORD_KEY,
    guard,
    parse_pool_record,
    pool_record_data,
)
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.tpu.pool_changes import pool_settings
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans

POOL_KEY = "cloud.google.com/gke-nodepool"


def _pools(text: str) -> dict[str, dict[str, str]]:
    return pool_settings(tpu_plans(parse_pools_text(text)))


def _running(pool: str, *, queued: bool) -> tuple[list[Any], list[Any], list[Any]]:
    jobset = make_jobset("train").uid("uid-train")
    if queued:
        jobset.label(c.KUEUE_QUEUE_NAME_LABEL, "tpu-queue")
    job = make_job("train", rjob="slice", jobset_uid="uid-train").annotation(
        c.EXCLUSIVE_KEY, POOL_KEY).node_selector(**{POOL_KEY: pool}).ready(1)
    workload = {"metadata": {"name": "jobset-train-1", "namespace": "default",
                             "ownerReferences": [{"kind": c.KIND, "uid": "uid-train"}]}}
    return [jobset.obj()], [job.obj()], [workload]


def test_without_the_opt_in_a_jobset_at_risk_refuses_the_update_naming_it_and_the_fix() -> None:
    decision = guard(_pools("v5e-2x4:2"), _pools("v5e-2x4:1"),
                     *_running("v5e-2x4-1", queued=False), drain=False)
    assert decision.refused and decision.drains == ()
    assert decision.message() == (
        "this update would kill 1 running JobSet(s) by changing the slice pools they run on:\n"
        "  default/train on v5e-2x4-1 (deleted: no longer in the stack's pools)\n"
        "to let `pulumi up` suspend them first and resume them on the new pools, set "
        f"{DRAIN_KEY}: true (pulumi config set {DRAIN_KEY} true); or stop them yourself, or "
        "keep the pools as they are")


@pytest.mark.parametrize(("queued", "via"), [
    pytest.param(True, DrainVia.KUEUE, id="a queued JobSet is drained through its Workload"),
    pytest.param(False, DrainVia.SUSPEND, id="any other JobSet through spec.suspend"),
])
def test_with_the_opt_in_the_jobsets_at_risk_are_drained(queued: bool, via: DrainVia) -> None:
    decision = guard(_pools("v5e-2x4:2"), _pools("v5e-2x4:1"),
                     *_running("v5e-2x4-1", queued=queued), drain=True)
    assert not decision.refused
    [risk] = decision.drains
    assert risk.drain.via is via
    assert decision.message().startswith(
        f"this update changes slice pools under 1 running JobSet(s); {DRAIN_KEY} is set")


@pytest.mark.parametrize(("previous", "current"), [
    pytest.param(None, "b=v5e-2x4:1", id="no record yet: no pool is known to change"),
    pytest.param("v5e-2x4:2", "v5e-2x4:2", id="the same pools change nothing"),
    pytest.param("v5e-2x4:1", "v5e-2x4:2", id="a new pool kills nothing"),
])
def test_nothing_at_risk_goes_ahead_silently(previous: str | None, current: str) -> None:
    decision = guard(_pools(previous) if previous else None, _pools(current),
                     *_running("v5e-2x4-0", queued=True), drain=False)
    assert (decision.refused, decision.at_risk, decision.message()) == (False, (), "")


def test_the_record_reads_back_what_was_written() -> None:
    pools = _pools("v5e-2x4:2+1")
    assert parse_pool_record(pool_record_data(pools)) == (pools, "")


@pytest.mark.parametrize(("data", "problem"), [
    pytest.param(None, "", id="no ConfigMap is no record"),
    pytest.param({}, "", id="an empty ConfigMap is no record"),
    pytest.param({POOL_RECORD_KEY: "{"}, "is not JSON", id="a broken record is said"),
    pytest.param({POOL_RECORD_KEY: json.dumps({"p": {"zone": 1}})}, "is not a mapping",
                 id="a record of the wrong shape is said"),
])
def test_a_record_that_cannot_be_read_counts_as_none(data: dict[str, str] | None,
                                                      problem: str) -> None:
    found, said = parse_pool_record(data)
    assert found is None and problem in said and bool(said) == bool(problem)


def test_without_a_record_the_nodes_of_the_stacks_pools_stand_in_for_it() -> None:
    from datetime import UTC, datetime

    from jobset_infra.tpu.node_pools import node_manifests, parse_nodes

    nodes = node_manifests(parse_nodes("v5e-2x4:2,other=v5e-2x4:1"), datetime(2026, 1, 1,
                                                                              tzinfo=UTC))
    decision = guard(None, _pools("v5e-2x4:1"), *_running("v5e-2x4-1", queued=False),
                     drain=False, nodes=nodes, groups={"v5e-2x4"})
    assert decision.refused
    assert [c.pool for c in decision.changes] == ["v5e-2x4-1"]  # not other-0: not the stack's
