"""The core's slim Job view and the Plan helpers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import (
    ChildJob,
    CreateJob,
    EmitEvent,
    ObjectRef,
    Plan,
    RequeueAfter,
    UpdateStatus,
    child_job_from_manifest,
    format_time,
    parse_time,
)
from jobset_infra.testing.jobs import make_job

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def test_view_keeps_what_the_core_reads() -> None:
    manifest = (
        make_job("js", "ns", rjob="w", index=2, jobset_uid="u1", parallelism=4)
        .node_selector(pool="a")
        .started(T0)
        .ready(3)
        .obj()
    )
    manifest["spec"]["template"]["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    view = child_job_from_manifest(manifest)
    assert view.name == "js-w-2"
    assert view.namespace == "ns"
    assert view.controller_uid == "u1"
    assert view.labels[c.JOB_INDEX_KEY] == "2"
    assert view.template_labels[c.REPLICATED_JOB_NAME_KEY] == "w"
    assert (view.parallelism, view.completions) == (4, 4)
    assert view.node_selector == {"pool": "a"}
    assert view.tolerations == ({"key": "k", "operator": "Exists"},)
    assert view.start_time == T0
    assert (view.active, view.ready, view.succeeded, view.failed) == (3, 3, 0, 0)


def test_view_reads_conditions_with_times() -> None:
    view = make_job("js").failed(at=T0, reason="DeadlineExceeded", message="too slow").view()
    failed = view.condition("Failed")
    assert failed is not None
    assert (failed.reason, failed.message, failed.last_transition_time) == (
        "DeadlineExceeded",
        "too slow",
        T0,
    )
    assert view.condition("Complete") is None


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param({}, id="empty object"),
        pytest.param({"metadata": None, "spec": None, "status": None}, id="null sections"),
        pytest.param(
            {"metadata": {"labels": "x", "ownerReferences": [1]}, "status": {"active": "2"}},
            id="wrong types everywhere",
        ),
    ],
)
def test_view_never_raises_on_odd_shapes(manifest: dict[str, Any]) -> None:
    view = child_job_from_manifest(manifest)
    assert isinstance(view, ChildJob)
    assert view.active == 0


def test_time_round_trips_at_second_precision() -> None:
    assert format_time(T0) == "2026-03-01T12:00:00Z"
    assert parse_time("2026-03-01T12:00:00Z") == T0
    assert parse_time("yesterday") is None


def test_plan_helpers() -> None:
    ref = ObjectRef("JobSet", c.API_VERSION, "ns", "js", "u")
    status = UpdateStatus("ns", "js", "7", {"restarts": 0})
    plan = Plan(
        (
            CreateJob({"metadata": {"name": "js-w-0"}}),
            status,
            EmitEvent("Normal", "R", "m", ref),
            RequeueAfter(5),
            RequeueAfter(2),
        )
    )
    assert not plan.is_empty
    assert plan.requeue_after == 2
    assert plan.status_update is status
    assert [a.name for a in plan.of_type(CreateJob)] == ["js-w-0"]
    assert Plan((RequeueAfter(1),)).is_empty
