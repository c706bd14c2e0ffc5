"""Suspend and resume of child Jobs, including the upstream bugs fixed on resume."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.controller.core.suspend_resume import resume_job, suspend_jobs
from jobset_infra.testing.jobs import JobBuilder, make_job

T = datetime(2026, 1, 1, tzinfo=UTC)


def suspended_job() -> JobBuilder:
    return make_job("js", "ns", rjob="w").suspend().started(T)


def template(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, Any]] | None = None,
    gates: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "main", "image": "busybox"}]}
    if node_selector is not None:
        pod["nodeSelector"] = node_selector
    if tolerations is not None:
        pod["tolerations"] = tolerations
    if gates is not None:
        pod["schedulingGates"] = gates
    meta: dict[str, Any] = {}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"spec": {"template": {"metadata": meta, "spec": pod}}}


def test_suspend_only_touches_jobs_not_yet_suspended() -> None:
    jobs = [
        make_job("js", rjob="w", index=0).ready().view(),
        make_job("js", rjob="w", index=1).suspend().view(),
    ]
    updates = suspend_jobs(jobs)
    assert [(u.name, u.patch) for u in updates] == [("js-w-0", {"spec": {"suspend": True}})]


def test_resume_clears_start_time_and_unsuspends() -> None:
    update = resume_job(suspended_job().view(), template())
    assert update.clear_start_time is True
    assert update.patch["spec"]["suspend"] is False


def test_resume_without_start_time_does_not_touch_status() -> None:
    update = resume_job(make_job("js", rjob="w").suspend().view(), template())
    assert update.clear_start_time is False


def test_resume_merges_labels_and_annotations_template_wins_and_controller_keys_stay() -> None:
    job = suspended_job().label("team", "old").view()
    update = resume_job(
        job, template(labels={"team": "new", "kueue": "yes"}, annotations={"a": "1"})
    )
    meta = update.patch["spec"]["template"]["metadata"]
    assert meta == {"labels": {"team": "new", "kueue": "yes"}, "annotations": {"a": "1"}}
    # a merge patch: keys not mentioned (the controller's labels) are untouched
    assert c.JOBSET_NAME_KEY not in meta["labels"]


@pytest.mark.parametrize(
    ("job_selector", "template_selector", "want_patch"),
    [
        pytest.param({}, {"pool": "b"}, {"pool": "b"}, id="new nodeSelector keys are added"),
        pytest.param(
            {"pool": "a", "zone": "z1"},
            {"pool": "b"},
            {"pool": "b", "zone": None},
            id=(
                "stale nodeSelector keys Kueue removed from the template are removed (upstream "
                "keeps them)"
            ),
        ),
        pytest.param(
            {"pool": "b"}, {"pool": "b"}, None, id="unchanged nodeSelector is not patched"
        ),
    ],
)
def test_resume_node_selector(
    job_selector: dict[str, str],
    template_selector: dict[str, str],
    want_patch: dict[str, Any] | None,
) -> None:
    job = suspended_job().node_selector(**job_selector).view()
    patch = resume_job(job, template(node_selector=template_selector)).patch
    got = patch["spec"].get("template", {}).get("spec", {}).get("nodeSelector")
    assert got == want_patch


def test_resume_keeps_node_selector_keys_the_controller_owns() -> None:
    job = (
        make_job("js", "ns", rjob="w")
        .suspend()
        .node_selector(**{c.NAMESPACED_JOB_KEY: "ns_js-w-0", "zone": "z"})
        .annotation(c.EXCLUSIVE_KEY, "rack")
        .annotation(c.NODE_SELECTOR_STRATEGY_KEY, "t")
        .view()
    )
    patch = resume_job(job, template(), {"rack": "r7"}).patch
    assert patch["spec"]["template"]["spec"]["nodeSelector"] == {"zone": None, "rack": "r7"}


def test_resume_tolerations_are_an_ordered_union() -> None:
    """Upstream merges as a set (random order); we keep the Job's order, then the template's."""
    t1, t2, t3 = ({"key": k, "operator": "Exists"} for k in ("k1", "k2", "k3"))
    job = suspended_job().tolerations(t2, t1).view()
    patch = resume_job(job, template(tolerations=[t3, t1])).patch
    assert patch["spec"]["template"]["spec"]["tolerations"] == [t2, t1, t3]
    unchanged = resume_job(job, template(tolerations=[t1])).patch
    assert "template" not in unchanged["spec"]


def test_resume_adds_scheduling_gates() -> None:
    gate = {"name": "kueue.x-k8s.io/topology"}
    patch = resume_job(suspended_job().view(), template(gates=[gate])).patch
    assert patch["spec"]["template"]["spec"]["schedulingGates"] == [gate]
