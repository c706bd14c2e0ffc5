"""Reconcile never raises, whatever the child Jobs look like (labels edited by hand, odd status)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.types import CoreConfig, UpdateStatus, child_job_from_manifest
from jobset_infra.testing.jobsets import make_jobset

NOW = datetime(2026, 1, 1, tzinfo=UTC)

_condition = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            ["Complete", "Failed", "Failed", "FailureTarget", "Suspended", "X"]
        ),
        "status": st.sampled_from(["True", "True", "False", "Unknown"]),
        "reason": st.sampled_from(["BackoffLimitExceeded", "DeadlineExceeded", ""]),
        "message": st.text(max_size=5),
        "lastTransitionTime": st.sampled_from(["2026-01-01T00:00:00Z", "garbage", ""]),
    }
)


_LABELS = {
    c.REPLICATED_JOB_NAME_KEY: st.sampled_from(["a", "a", "b", "zz", "", None]),
    c.RESTARTS_KEY: st.sampled_from(["0", "0", "1", "x", None]),
    c.JOB_INDEX_KEY: st.sampled_from(["0", "1", "-1", "999999999999", "x", None]),
    c.JOB_RESTART_ATTEMPT_KEY: st.sampled_from(["0", "1", "-1", "x", None]),
}


@st.composite
def odd_job(draw: st.DrawFn, index: int) -> dict[str, Any]:
    labels = {k: v for k, strategy in _LABELS.items() if (v := draw(strategy)) is not None}
    owner = draw(st.sampled_from(["u", "u", "u", "other"]))
    return {
        "metadata": {
            "name": f"js-{labels.get(c.REPLICATED_JOB_NAME_KEY, 'x')}-{index}",
            "namespace": "ns",
            "uid": f"j{index}",
            "labels": labels,
            "ownerReferences": [{"uid": owner, "controller": True}],
        },
        "spec": {
            "suspend": draw(st.booleans()),
            "parallelism": draw(st.integers(-1, 3)),
            "completions": draw(st.one_of(st.none(), st.integers(-1, 3))),
        },
        "status": {
            "active": draw(st.integers(-1, 3)),
            "ready": draw(st.integers(-1, 3)),
            "succeeded": draw(st.integers(-1, 3)),
            "conditions": draw(st.lists(_condition, max_size=3)),
        },
    }


@st.composite
def odd_jobs(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [draw(odd_job(i)) for i in range(draw(st.integers(0, 6)))]


ACTIONS = [
    "RestartJob",
    "FailJobSet",
    "RestartJobSet",
    "RestartJobSetAndIgnoreMaxRestarts",
    "RestartJob",
    "RestartJobAndIgnoreMaxRestarts",
]


@given(
    jobs=odd_jobs(),
    action=st.sampled_from(ACTIONS),
    gate=st.sampled_from([True, True, False]),
    suspend=st.booleans(),
    restarts=st.sampled_from([0, 0, 1]),
)
def test_reconcile_never_raises_on_odd_jobs(
    jobs: list[dict[str, Any]], action: str, gate: bool, suspend: bool, restarts: int
) -> None:
    js = (
        make_jobset("js", "ns")
        .uid("u")
        .replicated_job("a", 2)
        .replicated_job("b", 1)
        .failure_policy(max_restarts=3)
        .rule(action, "r")
        .success_policy()
        .suspend(suspend)
        .restarts(restarts)
        .obj()
    )
    js["metadata"]["resourceVersion"] = "1"
    views = [child_job_from_manifest(j) for j in jobs]
    config = CoreConfig(FeatureGates.of({Feature.RESTART_JOB: gate}))
    plan = reconcile(observe(js, views), NOW, config)
    assert len(plan.of_type(UpdateStatus)) <= 1
    update = plan.status_update
    if update is not None:  # per-Job arrays are sized to the replicas, whatever the labels say
        replicas = {"a": 2, "b": 1}
        for entry in update.status["replicatedJobsStatus"]:
            assert len(entry.get("jobRestarts", [])) <= replicas[entry["name"]]
