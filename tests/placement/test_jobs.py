"""Occupancy views of existing Jobs and placement requests of new ones."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.placement import (
    Occupancy,
    QuantityError,
    asks_exclusive_placement,
    job_view_from_manifest,
    request_from_job_manifest,
)
from tests.placement.builders import POOL_KEY, TOPO_KEY, TPU, make_job


@pytest.mark.parametrize(
    ("job", "want_holds"),
    [
        pytest.param(make_job("j").on("pool-a").obj(), True, id="running job holds its domain"),
        pytest.param(
            make_job("j").on("pool-a").suspended().obj(),
            False,
            id="suspended job releases its domain",
        ),
        pytest.param(
            make_job("j").on("pool-a").finished().obj(),
            False,
            id="completed job releases its domain",
        ),
        pytest.param(
            make_job("j").on("pool-a").finished("Failed").obj(),
            False,
            id="failed job releases its domain",
        ),
        pytest.param(
            make_job("j").on("pool-a").deleting().obj(),
            False,
            id="job being deleted releases its domain",
        ),
        pytest.param(make_job("j").obj(), False, id="job without a domain selector holds nothing"),
    ],
)
def test_job_view_holds_domain(job: dict[str, Any], want_holds: bool) -> None:
    view = job_view_from_manifest(job)
    assert view is not None
    assert view.holds_domain is want_holds
    assert view.key == "default/j"
    assert view.owner == "default/js"


def test_job_without_the_annotation_has_no_view() -> None:
    assert job_view_from_manifest(make_job("j").not_exclusive().on("pool-a").obj()) is None


def test_request_reads_pods_resources_selector_and_tolerations() -> None:
    job = make_job("js-w-0").pods(4).chips(4).priority_class("high").obj()
    request = request_from_job_manifest(job, POOL_KEY)
    assert request.key == "default/js-w-0"
    assert request.pods == 4
    assert request.per_pod == {TPU: 4000, "pods": 1000}
    assert request.node_selector[TOPO_KEY] == "2x4"
    assert request.tolerations[0].key == TPU
    assert request.scope == "class:high"
    assert request.pinned is None


def test_requests_override_limits_and_init_containers_raise_the_floor() -> None:
    job = make_job("j").obj()
    pod = job["spec"]["template"]["spec"]
    pod["containers"] = [
        {"name": "a", "resources": {"limits": {"cpu": "2"}, "requests": {"cpu": "1"}}},
        {"name": "b", "resources": {"requests": {"cpu": "500m"}}},
    ]
    pod["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
    assert request_from_job_manifest(job, POOL_KEY).per_pod["cpu"] == 3000


def test_user_selector_on_the_topology_key_pins_the_job() -> None:
    request = request_from_job_manifest(make_job("j").on("pool-b").obj(), POOL_KEY)
    assert request.pinned == "pool-b"
    assert POOL_KEY not in request.node_selector


def test_our_previous_assignment_is_a_preference_not_a_pin() -> None:
    request = request_from_job_manifest(make_job("j").on("pool-b").obj(), POOL_KEY, "pool-b")
    assert request.pinned is None
    assert request.previous == "pool-b"


def test_parallelism_above_completions_counts_completions() -> None:
    job = make_job("j").obj()
    job["spec"]["parallelism"], job["spec"]["completions"] = 8, 2
    assert request_from_job_manifest(job, POOL_KEY).pods == 2


def test_bad_resource_quantity_names_the_job_and_field() -> None:
    job = make_job("js-w-0").obj()
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {TPU: "four"}}
    with pytest.raises(QuantityError, match=r"job js-w-0: spec.template.spec.containers\[0\]"):
        request_from_job_manifest(job, POOL_KEY)


def test_occupancy_keeps_the_latest_view_of_each_job() -> None:
    running = job_view_from_manifest(make_job("j").on("pool-a").obj())
    suspended = job_view_from_manifest(make_job("j").on("pool-a").suspended().obj())
    assert running is not None and suspended is not None
    assert len(Occupancy.from_views([running])) == 1
    assert len(Occupancy.from_views([running, suspended])) == 0
    assert len(Occupancy.from_views([suspended, running])) == 1


@pytest.mark.parametrize(
    ("parallelism", "completions", "want_pods"),
    [
        pytest.param(None, None, 1, id="unset parallelism is one pod"),
        pytest.param(4, None, 4, id="parallelism without completions"),
        pytest.param("x", 3, 1, id="a malformed parallelism counts as unset"),
        pytest.param(0, 5, 0, id="zero parallelism needs no hosts"),
    ],
)
def test_pod_count(parallelism: object, completions: object, want_pods: int) -> None:
    job = make_job("j").obj()
    job["spec"]["parallelism"], job["spec"]["completions"] = parallelism, completions
    assert request_from_job_manifest(job, POOL_KEY).pods == want_pods


@pytest.mark.parametrize("job", [
    pytest.param(make_job("j").on("pool-a").obj(), id="an exclusive Job"),
    pytest.param(make_job("j").on("pool-a").suspended().obj(), id="a suspended exclusive Job"),
    pytest.param({"metadata": {"name": "j"}}, id="a Job without the annotation"),
    pytest.param({"metadata": {"annotations": {c.EXCLUSIVE_KEY: ""}}}, id="an empty topology key"),
])
def test_asks_exclusive_placement_is_whether_the_job_has_a_view(job: dict[str, Any]) -> None:
    """The controller decodes a create's answer only for the Jobs with a view (what it holds
    in flight): the annotations alone tell."""
    assert asks_exclusive_placement(job) is (job_view_from_manifest(job) is not None)
