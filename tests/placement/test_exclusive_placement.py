"""The core's exclusive placement step: new and resumed Jobs, every strategy, all or nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import PlacementDomain, PlacementMode
from jobset_infra.controller.core import exclusive_placement as step
from jobset_infra.controller.core import reconcile
from jobset_infra.controller.core.child_jobs import construct_jobs
from jobset_infra.controller.core.types import (
    CoreConfig,
    CreateJob,
    Manifest,
    Observed,
    UpdateJob,
    child_job_from_manifest,
)
from jobset_infra.placement import Occupancy, SlimNode, job_view_from_manifest
from jobset_infra.placement.inputs import PlacementInputs
from jobset_infra.placement.strategy import Strategy
from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import make_jobset
from tests.placement.builders import (
    ACCEL_KEY,
    POOL_KEY,
    TOPO_KEY,
    TPU,
    make_job,
    tpu_node,
    tpu_pools,
)

CONFIG = CoreConfig()
T0 = datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC)


def _tpu_jobset(name: str = "js", replicas: int = 4, pods: int = 2, **kw: Any) -> Any:
    builder = (
        make_jobset(name)
        .uid(f"uid-{name}")
        .exclusive(POOL_KEY)
        .replicated_job("slice", replicas=replicas, parallelism=pods)
        .pod_spec(
            "slice",
            containers=[{"name": "main", "image": "jax", "resources": {"limits": {TPU: "4"}}}],
            nodeSelector={ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: kw.get("topology", "2x4")},
            tolerations=[{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
        )
    )
    if kw.get("suspend"):
        builder = builder.suspend()
    if "annotations" in kw:
        for key, value in kw["annotations"].items():
            builder = builder.annotation(key, value)
    for type_, status, reason in kw.get("conditions", ()):
        builder = builder.condition(type_, status, reason, "message")
    return builder.model()


def _observed(js: Any, inputs: PlacementInputs | None, jobs: tuple[Manifest, ...] = ()) -> Observed:
    return Observed(
        jobset=js, jobs=tuple(child_job_from_manifest(j) for j in jobs), placement=inputs
    )


def _new_jobs(js: Any) -> tuple[Manifest, ...]:
    return construct_jobs(js, js.spec.replicated_jobs[0], (), 0)


def _inputs(
    nodes: list[SlimNode] | None = None,
    held: tuple[Manifest, ...] = (),
    mode: PlacementMode = PlacementMode.AUTO,
    declared: tuple[PlacementDomain, ...] = (),
) -> PlacementInputs:
    views = [v for v in (job_view_from_manifest(j) for j in held) if v is not None]
    nodes = tpu_pools(4, 2) if nodes is None else nodes
    return PlacementInputs(tuple(nodes), declared, Occupancy.from_views(views), mode)


def _domains(created: tuple[Manifest, ...]) -> list[str | None]:
    return [j["spec"]["template"]["spec"].get("nodeSelector", {}).get(POOL_KEY) for j in created]


def test_four_replicas_get_one_pool_each() -> None:
    js = _tpu_jobset()
    decision = step.place_new_jobs(_new_jobs(js), _observed(js, _inputs()), CONFIG)
    assert _domains(decision.create) == ["pool-0", "pool-1", "pool-2", "pool-3"]
    assert [j["metadata"]["name"] for j in decision.create] == [f"js-slice-{i}" for i in range(4)]
    assert decision.hold == ()
    (cond,) = decision.conditions
    assert (cond.type, cond.status) == (c.CONDITION_PLACEMENT_PENDING, "False")


def test_second_jobset_is_held_with_a_condition_saying_why() -> None:
    first = _tpu_jobset("first")
    placed = step.place_new_jobs(_new_jobs(first), _observed(first, _inputs()), CONFIG).create
    second = _tpu_jobset("second", replicas=1)
    decision = step.place_new_jobs(
        _new_jobs(second), _observed(second, _inputs(held=placed)), CONFIG
    )
    assert decision.create == ()
    assert decision.hold == ("second-slice-0",)
    assert decision.requeue_after is not None and decision.requeue_after > 0
    (cond,) = decision.conditions
    assert (cond.status, cond.reason, cond.event_type) == (
        "True",
        c.PLACEMENT_NO_FIT_REASON,
        "Warning",
    )
    assert "busy: pool-0 (held by default/first-slice-0)" in cond.message
    assert "4 exist" in cond.message


_WAITING = [(c.CONDITION_PLACEMENT_PENDING, "True", c.PLACEMENT_NO_FIT_REASON)]


@pytest.mark.parametrize(
    ("outcome", "conditions", "want"),
    [
        pytest.param(
            "suspend",
            _WAITING,
            ("False", c.JOBSET_SUSPENDED_REASON),
            id="a JobSet suspended while it waited for domains no longer says it waits for them",
        ),
        pytest.param(
            "fail",
            _WAITING,
            ("False", c.JOBSET_FAILED_REASON),
            id="a JobSet that failed while later Jobs waited for domains no longer waits",
        ),
        pytest.param(
            "complete",
            _WAITING,
            ("False", c.JOBSET_COMPLETED_REASON),
            id="a JobSet that completed while later Jobs waited for domains no longer waits",
        ),
        pytest.param("suspend", [], None, id="a JobSet that never waited gets no such condition"),
    ],
)
def test_a_stopped_jobset_no_longer_waits_for_domains(
    outcome: str, conditions: list[tuple[str, str, str]], want: tuple[str, str] | None
) -> None:
    busy = tuple(make_job(f"o-{i}", "o").on(f"pool-{i}").obj() for i in range(4))
    js = _tpu_jobset(replicas=1, suspend=outcome == "suspend", conditions=conditions)
    children: tuple[Manifest, ...] = ()
    if outcome != "suspend":
        (child,) = _new_jobs(js)
        child["metadata"]["uid"] = "uid-child"
        finished = job_from(child)
        children = ((finished.failed() if outcome == "fail" else finished.completed()).obj(),)
    plan = reconcile(_observed(js, _inputs(held=busy), children), T0, CONFIG)
    assert plan.status_update is not None
    pending = [
        (x["status"], x["reason"])
        for x in plan.status_update.status["conditions"]
        if x["type"] == c.CONDITION_PLACEMENT_PENDING
    ]
    assert pending == ([want] if want else [])


def test_no_partial_jobset_is_started() -> None:
    other = make_job("other-w-0", "other").on("pool-1").obj()
    js = _tpu_jobset()
    decision = step.place_new_jobs(_new_jobs(js), _observed(js, _inputs(held=(other,))), CONFIG)
    assert decision.create == ()
    assert len(decision.hold) == 4


def test_jobs_created_suspended_get_no_domain_yet() -> None:
    js = _tpu_jobset(suspend=True)
    inputs = _inputs(held=tuple(make_job(f"o-{i}", "o").on(f"pool-{i}").obj() for i in range(4)))
    decision = step.place_new_jobs(_new_jobs(js), _observed(js, inputs), CONFIG)
    assert _domains(decision.create) == [None] * 4
    assert decision.hold == () and decision.conditions == ()


def _suspended_children(js: Any, domains: list[str | None]) -> tuple[Manifest, ...]:
    jobs = []
    for job, domain in zip(_new_jobs(js), domains, strict=True):
        job["metadata"]["uid"] = f"uid-{job['metadata']['name']}"
        job["spec"]["suspend"] = True
        if domain:
            job["spec"]["template"]["spec"]["nodeSelector"][POOL_KEY] = domain
        jobs.append(job)
    return tuple(jobs)


def test_resume_prefers_each_jobs_previous_pool() -> None:
    js = _tpu_jobset(replicas=2)
    children = _suspended_children(js, ["pool-3", "pool-2"])
    observed = _observed(js, _inputs(held=children), children)
    decision = step.place_resumed_jobs(observed.jobs, observed, CONFIG)
    assert decision.node_selectors == {
        "js-slice-0": {POOL_KEY: "pool-3"},
        "js-slice-1": {POOL_KEY: "pool-2"},
    }
    assert decision.hold == ()


def test_resume_moves_off_a_pool_someone_else_took_meanwhile() -> None:
    js = _tpu_jobset(replicas=1)
    children = _suspended_children(js, ["pool-0"])
    thief = make_job("thief-w-0", "thief").on("pool-0").obj()
    observed = _observed(js, _inputs(held=(*children, thief)), children)
    decision = step.place_resumed_jobs(observed.jobs, observed, CONFIG)
    assert decision.node_selectors == {"js-slice-0": {POOL_KEY: "pool-1"}}


def test_resume_follows_the_flavor_kueue_put_in_the_template() -> None:
    nodes = [*tpu_pools(2, 2), *[tpu_node(f"big-{i}", "big", topology="4x4") for i in range(4)]]
    suspended_js = _tpu_jobset(replicas=1, pods=4, topology="2x4")
    children = _suspended_children(suspended_js, [None])
    admitted = _tpu_jobset(replicas=1, pods=4, topology="4x4")
    observed = _observed(admitted, _inputs(nodes=nodes), children)
    decision = step.place_resumed_jobs(observed.jobs, observed, CONFIG)
    assert decision.node_selectors == {"js-slice-0": {POOL_KEY: "big"}}


def test_resume_ignores_selector_keys_kueue_removed_from_the_template() -> None:
    # Flavor A (spot pools) admitted it; Kueue preempted it and took A's labels back out of the
    # template; flavor B (on-demand pools, no spot label) admits it now. Resume drops the stale
    # key from the Job (docs/controller-core.md), so placement must not ask for it either.
    js = _tpu_jobset(replicas=1)
    (child,) = _suspended_children(js, ["pool-0"])
    child["spec"]["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-spot"] = "true"
    observed = _observed(js, _inputs(), (child,))
    decision = step.place_resumed_jobs(observed.jobs, observed, CONFIG)
    assert decision.hold == ()
    assert decision.node_selectors == {"js-slice-0": {POOL_KEY: "pool-0"}}


def test_resume_without_room_keeps_every_job_suspended() -> None:
    js = _tpu_jobset(replicas=2)
    children = _suspended_children(js, [None, None])
    holders = tuple(make_job(f"o-{i}", "o").on(f"pool-{i}").obj() for i in range(3))
    observed = _observed(js, _inputs(held=(*children, *holders)), children)
    decision = step.place_resumed_jobs(observed.jobs, observed, CONFIG)
    assert decision.node_selectors == {}
    assert decision.hold == ("js-slice-0", "js-slice-1")
    assert decision.conditions[0].status == "True"


def test_resumed_and_new_jobs_of_one_pass_never_share() -> None:
    js = _tpu_jobset(replicas=2)
    children = _suspended_children(js, [None, None])[:1]
    observed = _observed(js, _inputs(held=children), children)
    resumed = step.place_resumed_jobs(observed.jobs, observed, CONFIG)
    new = construct_jobs(js, js.spec.replicated_jobs[0], {"js-slice-0"}, 0)
    created = step.place_new_jobs(new, observed, CONFIG, earlier=resumed)
    assert resumed.node_selectors == {"js-slice-0": {POOL_KEY: "pool-0"}}
    assert _domains(created.create) == ["pool-1"]


def test_created_then_resumed_in_one_pass_never_share() -> None:
    js = _tpu_jobset(replicas=2)
    children = _suspended_children(js, [None, None])[:1]
    observed = _observed(js, _inputs(held=children), children)
    new = construct_jobs(js, js.spec.replicated_jobs[0], {"js-slice-0"}, 0)
    created = step.place_new_jobs(new, observed, CONFIG)
    resumed = step.place_resumed_jobs(observed.jobs, observed, CONFIG, earlier=created)
    assert _domains(created.create) == ["pool-0"]
    assert resumed.node_selectors == {"js-slice-0": {POOL_KEY: "pool-1"}}


def _plan_of_mixed_pass(free_pools: int) -> tuple[list[str], list[str], Any]:
    """A running JobSet of two slices: slice 0 exists suspended (Kueue just resumed the JobSet),
    slice 1 is missing (deleted while it was suspended). Returns (resumed, created, pending)."""
    js = _tpu_jobset(replicas=2)
    children = _suspended_children(js, [None, None])[:1]
    others = tuple(make_job(f"o-{i}", "o").on(f"pool-{i}").obj() for i in range(4 - free_pools))
    plan = reconcile(_observed(js, _inputs(held=others), children), T0, CONFIG)
    resumed = [u.name for u in plan.of_type(UpdateJob) if u.patch["spec"].get("suspend") is False]
    created = [a.manifest["metadata"]["name"] for a in plan.of_type(CreateJob)]
    status = plan.status_update.status if plan.status_update else {"conditions": []}
    pending = next(
        ((x["status"], x["reason"]) for x in status["conditions"]
         if x["type"] == c.CONDITION_PLACEMENT_PENDING),
        None,
    )  # fmt: skip
    return resumed, created, pending


@pytest.mark.parametrize(
    ("free_pools", "want_resumed", "want_created", "want_pending"),
    [
        pytest.param(
            1, [], [], ("True", c.PLACEMENT_NO_FIT_REASON),
            id="room for the resumed slice only: neither starts",
        ),
        pytest.param(
            2, ["js-slice-0"], ["js-slice-1"], None,
            id="room for both: both start on different pools",
        ),
    ],
)  # fmt: skip
def test_resumed_and_created_jobs_of_one_pass_are_all_or_nothing(
    free_pools: int,
    want_resumed: list[str],
    want_created: list[str],
    want_pending: tuple[str, str] | None,
) -> None:
    resumed, created, pending = _plan_of_mixed_pass(free_pools)
    assert (resumed, created, pending) == (want_resumed, want_created, want_pending)


def test_new_jobs_wait_while_the_resumed_ones_of_the_pass_wait() -> None:
    # slice "big" (4x4) exists suspended and no 4x4 pool exists; slice "small" (2x4) is missing
    # and would fit: it must not start without its JobSet's other slice.
    builder = make_jobset("js").uid("uid-js").exclusive(POOL_KEY)
    for rjob, topology in (("big", "4x4"), ("small", "2x4")):
        builder = builder.replicated_job(rjob, replicas=1, parallelism=2).pod_spec(
            rjob,
            containers=[{"name": "m", "image": "jax", "resources": {"limits": {TPU: "4"}}}],
            nodeSelector={ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: topology},
            tolerations=[{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
        )
    js = builder.model()
    (big,) = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)
    big["metadata"]["uid"], big["spec"]["suspend"] = "uid-big", True
    plan = reconcile(_observed(js, _inputs(), (big,)), T0, CONFIG)
    assert plan.of_type(CreateJob) == ()
    assert not [u for u in plan.of_type(UpdateJob) if u.patch["spec"].get("suspend") is False]
    assert plan.status_update is not None
    (pending,) = [
        x for x in plan.status_update.status["conditions"]
        if x["type"] == c.CONDITION_PLACEMENT_PENDING
    ]  # fmt: skip
    assert (pending["status"], pending["reason"]) == ("True", c.PLACEMENT_NO_FIT_REASON)


def test_earlier_domains_are_taken_whatever_the_priority() -> None:
    js = _tpu_jobset(replicas=1)
    observed = _observed(js, _inputs(nodes=tpu_pools(2, 2)))
    other = step.PlacementDecision(node_selectors={"js-other-0": {POOL_KEY: "pool-0"}})
    job = _new_jobs(js)[0]
    job["spec"]["template"]["spec"]["priorityClassName"] = "high"
    decision = step.place_new_jobs((job,), observed, CONFIG, earlier=other)
    assert _domains(decision.create) == ["pool-1"]


def test_declared_pool_with_zero_nodes_is_assigned() -> None:
    declared = (
        PlacementDomain(
            name="flex-0",
            node_count=2,
            labels={ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: "2x4"},
            allocatable={TPU: "4"},
        ),
    )
    js = _tpu_jobset(replicas=1)
    inputs = _inputs(nodes=[], declared=declared)
    decision = step.place_new_jobs(_new_jobs(js), _observed(js, inputs), CONFIG)
    assert _domains(decision.create) == ["flex-0"]


def _affinity_of(job: Manifest) -> dict[str, Any]:
    return job["spec"]["template"]["spec"].get("affinity", {})  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("inputs", "want_affinity"),
    [
        pytest.param(
            PlacementInputs(mode=PlacementMode.AFFINITY),
            True,
            id="affinity mode puts pod affinity and anti-affinity on the template",
        ),
        pytest.param(
            None,
            True,
            id="auto mode without node access or declared domains falls back to affinity",
        ),
        pytest.param(
            PlacementInputs(nodes=(), mode=PlacementMode.AUTO),
            False,
            id="auto mode with node access assigns domains instead",
        ),
    ],
)
def test_affinity_fallback(inputs: PlacementInputs | None, want_affinity: bool) -> None:
    js = _tpu_jobset(replicas=1)
    decision = step.place_new_jobs(_new_jobs(js), _observed(js, inputs), CONFIG)
    if want_affinity:
        (job,) = decision.create
        key = job["spec"]["template"]["metadata"]["labels"][c.JOB_KEY]
        affinity = _affinity_of(job)
        (together,) = affinity["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        (apart,) = affinity["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert together["topologyKey"] == apart["topologyKey"] == POOL_KEY
        assert together["labelSelector"]["matchExpressions"][0]["values"] == [key]
        assert apart["labelSelector"]["matchExpressions"][1] == {
            "key": c.JOB_KEY,
            "operator": "NotIn",
            "values": [key],
        }
    else:
        assert decision.create == () and decision.hold == ("js-slice-0",)


def test_node_selector_strategy_is_left_as_construction_made_it() -> None:
    js = _tpu_jobset(replicas=1, annotations={c.NODE_SELECTOR_STRATEGY_KEY: "true"})
    jobs = _new_jobs(js)
    decision = step.place_new_jobs(jobs, _observed(js, _inputs()), CONFIG)
    assert decision.create == jobs
    selector = decision.create[0]["spec"]["template"]["spec"]["nodeSelector"]
    assert selector[c.NAMESPACED_JOB_KEY] == "default_js-slice-0"
    assert POOL_KEY not in selector


@pytest.mark.parametrize(
    ("config", "mode"),
    [
        pytest.param(
            CoreConfig(exclusive_placement=False),
            PlacementMode.AUTO,
            id="core config switch off leaves jobs unchanged",
        ),
        pytest.param(CONFIG, PlacementMode.OFF, id="placement mode off leaves jobs unchanged"),
    ],
)
def test_placement_off(config: CoreConfig, mode: PlacementMode) -> None:
    js = _tpu_jobset(replicas=1)
    jobs = _new_jobs(js)
    decision = step.place_new_jobs(jobs, _observed(js, _inputs(mode=mode)), config)
    assert decision.create == jobs and decision.conditions == ()


def test_non_exclusive_jobs_are_created_while_exclusive_ones_wait() -> None:
    js = (
        make_jobset("mixed")
        .replicated_job("driver", replicas=1)
        .replicated_job("slice", replicas=1, parallelism=2)
        .job_metadata("slice", annotations={c.EXCLUSIVE_KEY: POOL_KEY})
        .model()
    )
    jobs = tuple(j for rjob in js.spec.replicated_jobs for j in construct_jobs(js, rjob, (), 0))
    decision = step.place_new_jobs(jobs, _observed(js, _inputs(nodes=[])), CONFIG)
    assert [j["metadata"]["name"] for j in decision.create] == ["mixed-driver-0"]
    assert decision.hold == ("mixed-slice-0",)


def test_unreadable_resources_are_a_condition_not_a_traceback() -> None:
    js = _tpu_jobset(replicas=1)
    jobs = _new_jobs(js)
    jobs[0]["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {TPU: "lots"}}
    decision = step.place_new_jobs(jobs, _observed(js, _inputs()), CONFIG)
    assert decision.create == () and decision.hold == ("js-slice-0",)
    (cond,) = decision.conditions
    assert cond.reason == c.PLACEMENT_INVALID_REASON
    assert "containers[0].resources.limits.google.com/tpu" in cond.message


@pytest.mark.parametrize("strategy", list(Strategy))
def test_every_strategy_has_a_new_jobs_step(strategy: Strategy) -> None:
    js = _tpu_jobset(replicas=1)
    decision = step._NEW_JOBS[strategy](_new_jobs(js), _inputs(), None)
    assert len(decision.create) + len(decision.hold) == 1
