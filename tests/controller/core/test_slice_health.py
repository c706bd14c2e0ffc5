"""Slice health in reconcile: failed slices recorded against their pool, healthy pools first."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.api import resilience as res
from jobset_infra.api.resilience import Cause
from jobset_infra.controller.core import exclusive_placement as step
from jobset_infra.controller.core import reconcile
from jobset_infra.controller.core.child_jobs import construct_jobs
from jobset_infra.controller.core.slice_health import (
    allocate_healthy_first,
    domain_failures,
    unchanged_quiet,
)
from jobset_infra.controller.core.types import (
    CoreConfig,
    Manifest,
    Observed,
    RecordDomainFailure,
    child_job_from_manifest,
)
from jobset_infra.placement import Assignment, NoFit, Occupancy, SlimNode, job_view_from_manifest
from jobset_infra.placement.inputs import PlacementInputs
from jobset_infra.placement.jobs import PlacementRequest
from jobset_infra.placement.pool_health import DomainFailure, HealthPolicy, kept_out
from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import make_jobset
from tests.placement.builders import ACCEL_KEY, POOL_KEY, TOPO_KEY, TPU, tpu_node, tpu_pools

T0 = datetime(2026, 12, 2, 8, 0, 0, tzinfo=UTC)
POLICY = HealthPolicy()


def _jobset(replicas: int = 2, name: str = "js", **status: Any) -> Any:
    builder = (
        make_jobset(name)
        .uid(f"uid-{name}")
        .exclusive(POOL_KEY)
        .replicated_job("slice", replicas=replicas, parallelism=2)
        .pod_spec(
            "slice",
            containers=[{"name": "main", "image": "jax", "resources": {"limits": {TPU: "4"}}}],
            nodeSelector={ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: "2x4"},
            tolerations=[{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
        )
    )
    for type_, state, reason in status.get("conditions", ()):
        builder = builder.condition(type_, state, reason, "message")
    return builder.model()


def _failure(pool: str, cause: Cause = Cause.NODE_NOT_READY, minutes: float = 0) -> DomainFailure:
    at = T0 + timedelta(minutes=minutes)
    return DomainFailure(POOL_KEY, pool, cause, at, f"default/{pool}-job", f"uid-{pool}-{minutes}")


def _inputs(nodes: list[SlimNode], ledger: tuple[DomainFailure, ...] = (),
            held: tuple[Manifest, ...] = ()) -> PlacementInputs:
    views = [v for v in (job_view_from_manifest(j) for j in held) if v is not None]
    return PlacementInputs(tuple(nodes), occupancy=Occupancy.from_views(views),
                           kept_out=kept_out(ledger, T0, POLICY))


def _pools(created: tuple[Manifest, ...]) -> list[str]:
    return [j["spec"]["template"]["spec"]["nodeSelector"][POOL_KEY] for j in created]


def _placed_jobs(js: Any, pools: list[str]) -> list[Manifest]:
    jobs = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)
    for job, pool in zip(jobs, pools, strict=True):
        job["spec"]["template"]["spec"]["nodeSelector"][POOL_KEY] = pool
    return list(jobs)


def _not_ready(nodes: list[SlimNode], name: str) -> list[SlimNode]:
    return [SlimNode(n.name, n.labels, n.taints, n.allocatable, ready=n.name != name)
            for n in nodes]


# --- recording ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nodes", "message", "cause", "detail"),
    [
        pytest.param(_not_ready(tpu_pools(3, 2), "pool-1-node-0"), "backoff", Cause.NODE_NOT_READY,
                     "node pool-1-node-0 (pool pool-1) is NotReady",
                     id="a NotReady node of the pool the slice held is its cause"),
        pytest.param([n for n in tpu_pools(3, 2) if not n.name.startswith("pool-1")], "backoff",
                     Cause.NODE_DELETED, "pool pool-1 has no nodes left",
                     id="a pool whose nodes are all gone was deleted under the slice"),
        pytest.param(tpu_pools(3, 2), "Pod default/js-slice-1-0 failed with exit code 137",
                     Cause.SIGNAL, "Pod default/js-slice-1-0 failed with exit code 137",
                     id="a podFailurePolicy rule's exit code above 128 is a signal"),
        pytest.param(tpu_pools(3, 2), "Job has reached the specified backoff limit",
                     Cause.UNKNOWN, None,
                     id="a plain backoff failure on healthy nodes has no known cause"),
    ],
)
def test_a_failed_slice_is_recorded_against_the_pool_it_held(
    nodes: list[SlimNode], message: str, cause: Cause, detail: str | None
) -> None:
    js = _jobset()
    jobs = _placed_jobs(js, ["pool-0", "pool-1"])
    failed = job_from(jobs[1]).failed(at=T0, message=message).obj()
    observed = Observed(jobset=js, jobs=(child_job_from_manifest(jobs[0]),
                                         child_job_from_manifest(failed)),
                        placement=_inputs(nodes))
    plan = reconcile(observed, T0 + timedelta(seconds=5), CoreConfig())
    (record,) = plan.of_type(RecordDomainFailure)
    assert (record.failure.domain, record.failure.cause) == ("pool-1", cause)
    assert record.failure.job == "default/js-slice-1" and record.failure.at == T0
    if detail is not None:
        assert record.failure.detail == detail
    # recorded before the status write: a failed write retries the pass, and it records again
    kinds = [type(a).__name__ for a in plan.actions]
    assert kinds.index("RecordDomainFailure") < kinds.index("UpdateStatus")


@pytest.mark.parametrize(
    ("pods", "cause"),
    [
        pytest.param(None, Cause.UNKNOWN, id="without a Pod cache the plain backoff is unknown"),
        pytest.param({"exitCode": 3, "reason": "Error"}, Cause.USER_EXIT,
                     id="a watched Pod's own exit code makes it the program's failure"),
        pytest.param({"exitCode": 137, "reason": "OOMKilled"}, Cause.OOM_KILLED,
                     id="a watched Pod killed for memory is oom_killed"),
    ],
)
def test_watched_pods_exit_codes_feed_the_diagnosis(
    pods: dict[str, Any] | None, cause: Cause
) -> None:
    from jobset_infra.controller.core.pod_view import pod_view_from_manifest

    js = _jobset()
    jobs = _placed_jobs(js, ["pool-0", "pool-1"])
    failed = job_from(jobs[1]).failed(at=T0).obj()
    views = None
    if pods is not None:
        pod = {"metadata": {"name": "js-slice-1-0", "namespace": "default", "labels": {
                   c.JOBSET_NAME_KEY: "js", "batch.kubernetes.io/job-name": "js-slice-1"}},
               "spec": {"nodeName": "pool-1-node-0"},
               "status": {"phase": "Failed", "containerStatuses": [
                   {"name": "main", "state": {"terminated": pods}}]}}
        views = (pod_view_from_manifest(pod),)
    observed = Observed(jobset=js, jobs=(child_job_from_manifest(jobs[0]),
                                         child_job_from_manifest(failed)),
                        placement=_inputs(tpu_pools(3, 2)), pods=views)
    (record,) = reconcile(observed, T0, CoreConfig()).of_type(RecordDomainFailure)
    assert record.failure.cause is cause


def test_a_job_that_held_no_pool_records_nothing() -> None:
    js = make_jobset("plain").uid("u").replicated_job("w", replicas=1).model()
    job = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)[0]
    failed = child_job_from_manifest(job_from(job).failed(at=T0).obj())
    assert domain_failures([failed], None, T0) == ()


# --- assigning ----------------------------------------------------------------------------------


def test_a_restart_leaves_the_pool_that_failed_aside_and_says_so() -> None:
    js = _jobset(replicas=2)
    jobs = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)
    inputs = _inputs(tpu_pools(3, 2), ledger=(_failure("pool-0"),))
    decision = step.place_new_jobs(jobs, Observed(jobset=js, placement=inputs), CoreConfig())
    assert _pools(decision.create) == ["pool-1", "pool-2"]
    [health] = [x for x in decision.conditions if x.type == res.CONDITION_DOMAINS_KEPT_OUT]
    assert (health.status, health.reason, health.event_type) == (
        "True", res.DOMAINS_KEPT_OUT_REASON, "Warning")
    assert "pool-0 (node_not_ready, the last at 08:00:00Z; until 08:10:00Z)" in health.message


def test_when_no_healthy_pool_fits_the_pools_that_failed_are_used() -> None:
    js = _jobset(replicas=2)
    jobs = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)
    inputs = _inputs(tpu_pools(2, 2), ledger=(_failure("pool-1"),))
    decision = step.place_new_jobs(jobs, Observed(jobset=js, placement=inputs), CoreConfig())
    assert sorted(_pools(decision.create)) == ["pool-0", "pool-1"]
    [health] = [x for x in decision.conditions if x.type == res.CONDITION_DOMAINS_KEPT_OUT]
    assert (health.status, health.reason) == ("True", res.KEPT_OUT_USED_REASON)


def test_a_restart_takes_the_hot_spare_for_the_lost_pool_and_says_so() -> None:
    from dataclasses import replace

    js = _jobset(replicas=2)
    jobs = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)
    spare = [replace(n, name=f"spare-node-{i}",
                     labels={**n.labels, POOL_KEY: "pool-spare-0", res.SPARE_POOL_LABEL: "true"})
             for i, n in enumerate(tpu_pools(1, 2))]
    inputs = _inputs(tpu_pools(2, 2) + spare, ledger=(_failure("pool-0"),))
    decision = step.place_new_jobs(jobs, Observed(jobset=js, placement=inputs), CoreConfig())
    assert sorted(_pools(decision.create)) == ["pool-1", "pool-spare-0"]
    [health] = [x for x in decision.conditions if x.type == res.CONDITION_DOMAINS_KEPT_OUT]
    assert (health.status, health.reason) == ("True", res.SPARES_USED_REASON)
    assert health.message.startswith(
        "hot-spare pool(s) pool-spare-0 stand in for lost pool(s) pool-0; kept out: pool-0 ("
    ), health.message


@pytest.mark.parametrize(
    ("shown", "want"),
    [
        pytest.param(False, [], id="a JobSet that never had pools kept out gets no condition"),
        pytest.param(True, [("False", res.NO_DOMAIN_KEPT_OUT_REASON)],
                     id="one that had them sees the condition turn False"),
    ],
)
def test_with_no_pool_kept_out_the_condition_only_flips_a_true_one(
    shown: bool, want: list[tuple[str, str]]
) -> None:
    conditions = [(res.CONDITION_DOMAINS_KEPT_OUT, "True", res.DOMAINS_KEPT_OUT_REASON)]
    js = _jobset(conditions=conditions if shown else ())
    jobs = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)
    decision = step.place_new_jobs(
        jobs, Observed(jobset=js, placement=_inputs(tpu_pools(3, 2))), CoreConfig())
    got = [(x.status, x.reason) for x in decision.conditions
           if x.type == res.CONDITION_DOMAINS_KEPT_OUT]
    assert got == want
    assert c.CONDITION_PLACEMENT_PENDING in {x.type for x in decision.conditions}


# --- properties ---------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    pools=st.integers(min_value=1, max_value=6),
    slices=st.integers(min_value=1, max_value=4),
    failed=st.sets(st.integers(min_value=0, max_value=5), max_size=6),
)
def test_healthy_pools_are_used_whenever_enough_of_them_are_free(
    pools: int, slices: int, failed: set[int]
) -> None:
    nodes = [tpu_node(f"pool-{p}-node-{n}", f"pool-{p}", taints=())
             for p in range(pools) for n in range(2)]
    domains = PlacementInputs(tuple(nodes)).domains(POOL_KEY)
    ledger = tuple(_failure(f"pool-{i}") for i in failed if i < pools)
    aside = kept_out(ledger, T0, POLICY)
    requests = [PlacementRequest(f"default/js-slice-{i}", "default/js", POOL_KEY, 2,
                                 per_pod={TPU: 4000}) for i in range(slices)]
    result, health = allocate_healthy_first(requests, domains, Occupancy(), aside)
    healthy = pools - len(aside)
    if slices > pools:
        assert isinstance(result, NoFit)
        return
    assert isinstance(result, Assignment) and len(set(result.domains.values())) == slices
    used_sick = {d for d in result.domains.values() if (POOL_KEY, d) in aside}
    if slices <= healthy:
        assert not used_sick  # a pool that failed is never chosen over a free healthy one
    else:
        assert len(used_sick) == slices - healthy  # only as many as there is no healthy room
    assert (health.status == "True") is bool(aside)
    assert all(f"pool-{i}" in health.message for i in failed if i < pools)
    assert unchanged_quiet([health], shown=False) == ((health,) if aside else ())
