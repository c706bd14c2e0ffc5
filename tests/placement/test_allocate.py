"""Allocation: free, fitting, deterministic, all or nothing, priority-scoped exclusivity."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.placement import (
    Assignment,
    Domain,
    NoFit,
    Occupancy,
    PlacementRequest,
    SlimNode,
    allocate,
    domains_from_nodes,
    fit,
    job_view_from_manifest,
    placed_views,
    request_from_job_manifest,
)
from tests.placement.builders import (
    ACCEL_KEY,
    POOL_KEY,
    TOPO_KEY,
    make_job,
    tpu_node,
    tpu_pools,
)


def _requests(jobset: str, replicas: int, pods: int = 2, **kw: str) -> list[PlacementRequest]:
    out = []
    for i in range(replicas):
        builder = make_job(f"{jobset}-w-{i}", jobset).pods(pods)
        if "priority" in kw:
            builder = builder.priority_class(kw["priority"])
        if "topology" in kw:
            builder = builder.select(TOPO_KEY, kw["topology"])
        out.append(request_from_job_manifest(builder.obj(), POOL_KEY))
    return out


def _occupancy(*jobs: dict[str, object]) -> Occupancy:
    views = [job_view_from_manifest(j) for j in jobs]
    return Occupancy.from_views(v for v in views if v is not None)


def _domains(nodes: Sequence[SlimNode]) -> tuple[Domain, ...]:
    return domains_from_nodes(nodes, POOL_KEY)


FOUR_POOLS = _domains(tpu_pools(4, 2))


@dataclass(frozen=True)
class Case:
    requests: list[PlacementRequest]
    domains: tuple[Domain, ...]
    occupancy: Occupancy
    want: dict[str, str] | None  # None: NoFit
    want_message: str = ""


CASES = [
    pytest.param(
        Case(
            _requests("js", 4),
            FOUR_POOLS,
            Occupancy(),
            {f"default/js-w-{i}": f"pool-{i}" for i in range(4)},
        ),
        id="four replicas land one per pool in name order",
    ),
    pytest.param(
        Case(
            _requests("js", 2),
            FOUR_POOLS,
            _occupancy(make_job("other-w-0", "other").on("pool-0").obj()),
            {"default/js-w-0": "pool-1", "default/js-w-1": "pool-2"},
        ),
        id="a held pool is skipped",
    ),
    pytest.param(
        Case(
            _requests("js", 4),
            FOUR_POOLS,
            _occupancy(make_job("other-w-0", "other").on("pool-2").obj()),
            None,
            "4 Job(s) need a cloud.google.com/gke-nodepool domain each; 4 exist; 3 free and "
            "fitting; busy: pool-2 (held by default/other-w-0)",
        ),
        id="all or nothing: three free pools for four jobs places none",
    ),
    pytest.param(
        Case(
            _requests("js", 1),
            FOUR_POOLS,
            _occupancy(
                make_job("o-0", "o").on("pool-0").suspended().obj(),
                make_job("o-1", "o").on("pool-1").finished().obj(),
                make_job("o-2", "o").on("pool-2").deleting().obj(),
            ),
            {"default/js-w-0": "pool-0"},
        ),
        id="suspended finished and deleted jobs free their pools",
    ),
    pytest.param(
        Case(
            _requests("js", 1),
            FOUR_POOLS[:2],
            _occupancy(make_job("old-w-0", "old").on("pool-0").deleting().active(2).obj()),
            {"default/js-w-0": "pool-1"},
        ),
        id="an empty pool comes before one whose last job's pods are still stopping",
    ),
    pytest.param(
        Case(
            _requests("js", 2),
            FOUR_POOLS[:2],
            _occupancy(make_job("old-w-0", "old").on("pool-0").deleting().active(2).obj()),
            {"default/js-w-0": "pool-1", "default/js-w-1": "pool-0"},
        ),
        id="a pool whose last job is stopping is still used when needed",
    ),
    pytest.param(
        Case(
            _requests("js", 1, pods=3),
            FOUR_POOLS,
            Occupancy(),
            None,
            "not fitting default/js-w-0 (3 pods): pool-0 (room for 2 of the 3 pods)",
        ),
        id="a job with more pods than hosts fits nowhere",
    ),
    pytest.param(
        Case(
            _requests("js", 1, topology="4x4"),
            _domains(
                [*tpu_pools(1, 2), *[tpu_node(f"big-{i}", "big", topology="4x4") for i in range(4)]]
            ),
            Occupancy(),
            {"default/js-w-0": "big"},
        ),
        id="the slice topology selector picks the matching pool",
    ),
    pytest.param(
        Case(
            _requests("js", 1),
            _domains([*[tpu_node(f"big-{i}", "a-big") for i in range(4)], *tpu_pools(1, 2)]),
            Occupancy(),
            {"default/js-w-0": "pool-0"},
        ),
        id="the smallest fitting pool is preferred over a bigger one",
    ),
    pytest.param(
        Case(
            _requests("js", 1),
            _domains(
                [
                    tpu_node("p0-0", "pool-0"),
                    tpu_node("p0-1", "pool-0", ready=False),
                    *tpu_pools(2, 2)[2:],
                ]
            ),
            Occupancy(),
            {"default/js-w-0": "pool-1"},
        ),
        id="a pool with a not ready host is passed over",
    ),
    pytest.param(
        Case(
            [request_from_job_manifest(make_job("js-w-0").no_tolerations().obj(), POOL_KEY)],
            FOUR_POOLS,
            Occupancy(),
            None,
            "taint google.com/tpu=present:NoSchedule",
        ),
        id="pods that do not tolerate the tpu taint fit nowhere and the message says so",
    ),
    pytest.param(
        Case(
            _requests("js", 1, priority="high"),
            FOUR_POOLS[:1],
            _occupancy(make_job("low-w-0", "low").priority_class("low").on("pool-0").obj()),
            {"default/js-w-0": "pool-0"},
        ),
        id="exclusivity is scoped by priority as upstream",
    ),
    pytest.param(
        Case(
            _requests("js", 1, priority="high"),
            FOUR_POOLS[:2],
            _occupancy(make_job("low-w-0", "low").priority_class("low").on("pool-0").obj()),
            {"default/js-w-0": "pool-1"},
        ),
        id="a pool nobody holds is preferred over one held at another priority",
    ),
    pytest.param(
        Case(
            [request_from_job_manifest(make_job("js-w-0").on("pool-3").obj(), POOL_KEY)],
            FOUR_POOLS,
            Occupancy(),
            {"default/js-w-0": "pool-3"},
        ),
        id="a job pinned by its own nodeSelector gets that pool",
    ),
    pytest.param(
        Case(
            [request_from_job_manifest(make_job("js-w-0").on("pool-3").obj(), POOL_KEY, "pool-3")],
            FOUR_POOLS,
            Occupancy(),
            {"default/js-w-0": "pool-3"},
        ),
        id="a resumed job gets its previous pool back when free",
    ),
    pytest.param(
        Case(
            [request_from_job_manifest(make_job("js-w-0").on("pool-0").obj(), POOL_KEY, "pool-0")],
            FOUR_POOLS[:2],
            _occupancy(make_job("low-w-0", "low").priority_class("low").on("pool-0").obj()),
            {"default/js-w-0": "pool-1"},
        ),
        id="a resumed job prefers a free pool over its previous one held at another priority",
    ),
    pytest.param(
        Case(_requests("js", 1), (), Occupancy(), None, "no node has the label"),
        id="no domains at all says so",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_allocate(case: Case) -> None:
    result = allocate(case.requests, case.domains, case.occupancy)
    if case.want is None:
        assert isinstance(result, NoFit)
        assert case.want_message in result.message
        assert set(result.unplaced) == {r.key for r in case.requests}
    else:
        assert isinstance(result, Assignment)
        assert dict(result.domains) == case.want


def test_matching_finds_an_assignment_a_greedy_pass_would_miss() -> None:
    # js-w-0 fits both pools; js-w-1 (4x4 only) fits only "big". Greedy order would give js-w-0
    # the smallest pool first anyway, so make js-w-0 prefer "big": it is its previous pool.
    nodes = [*[tpu_node(f"b-{i}", "big", topology="4x4") for i in range(2)], *tpu_pools(1, 2)]
    domains = _domains(nodes)
    flexible = request_from_job_manifest(make_job("js-w-0").obj(), POOL_KEY, "big")
    object.__setattr__(flexible, "node_selector", {})
    picky = _requests("js", 2, topology="4x4")[1]
    result = allocate([flexible, picky], domains, Occupancy())
    assert isinstance(result, Assignment)
    assert dict(result.domains) == {"default/js-w-0": "pool-0", "default/js-w-1": "big"}


def test_declared_empty_pool_is_allocatable() -> None:
    from jobset_infra.api.controller_config import PlacementDomain

    labels = {TOPO_KEY: "2x4", ACCEL_KEY: "tpu-v5-lite-podslice"}
    declared = [PlacementDomain(name="flex-0", node_count=2, labels=labels)]
    domains = domains_from_nodes([], POOL_KEY, declared)
    result = allocate(_requests("js", 1), domains, Occupancy())
    assert result == Assignment({"default/js-w-0": "flex-0"})


def test_allocation_is_deterministic() -> None:
    occupancy = _occupancy(make_job("o-w-0", "o").on("pool-1").obj())
    first = allocate(_requests("js", 2), FOUR_POOLS, occupancy)
    assert all(allocate(_requests("js", 2), FOUR_POOLS, occupancy) == first for _ in range(5))


def test_long_messages_are_truncated() -> None:
    domains = _domains(tpu_pools(20, 2))
    holders = [make_job(f"o-w-{i}", "o").on(f"pool-{i}").obj() for i in range(20)]
    result = allocate(_requests("js", 1), domains, _occupancy(*holders))
    assert isinstance(result, NoFit)
    assert "and 12 more" in result.message


# --------------------------------------------------------------------------- property


@dataclass
class _Job:
    key: str
    jobset: str
    request: PlacementRequest
    domain: str | None = None
    state: str = "running"  # running | suspended | finished


Event = tuple[str, int, int]

EVENTS = st.lists(
    st.tuples(
        st.sampled_from(["create", "finish", "suspend", "resume", "remove_pool", "add_pool"]),
        st.integers(0, 7),
        st.integers(1, 4),
    ),
    max_size=30,
)


def _views(jobs: dict[str, _Job]) -> Occupancy:
    held = [
        v
        for j in jobs.values()
        if j.state == "running" and j.domain
        for v in placed_views([j.request], Assignment({j.key: j.domain}))
    ]
    return Occupancy.from_views(held)


def _place(jobs: dict[str, _Job], batch: list[_Job], nodes: list[SlimNode]) -> None:
    domains = _domains(nodes)
    result = allocate([j.request for j in batch], domains, _views(jobs))
    if isinstance(result, NoFit):
        return
    by_name = {d.name: d for d in domains}
    for job in batch:
        job.domain = result.domains[job.key]
        assert fit(job.request, by_name[job.domain]).ok
        job.state = "running"


def _apply(event: Event, jobs: dict[str, _Job], nodes: list[SlimNode], step: int) -> None:
    kind, a, b = event
    if kind == "create":
        name = f"js{step}"
        scope = ("low", "high")[a % 2]
        batch = [
            _Job(f"default/{name}-w-{i}", name, r)
            for i, r in enumerate(_requests(name, b, priority=scope))
        ]
        for job in batch:
            job.state = "pending"
        _place(jobs, batch, nodes)
        placed = [j for j in batch if j.state == "running"]
        assert len(placed) in (0, len(batch)), "a partial JobSet was started"
        jobs.update({j.key: j for j in placed})
    elif kind == "finish" and jobs:
        list(jobs.values())[a % len(jobs)].state = "finished"
    elif kind in ("suspend", "resume") and jobs:
        jobset = list(jobs.values())[a % len(jobs)].jobset
        members = [j for j in jobs.values() if j.jobset == jobset and j.state != "finished"]
        if kind == "suspend":
            for job in members:
                job.state = "suspended"
        else:
            _place(jobs, [j for j in members if j.state == "suspended"], nodes)
    elif kind == "remove_pool":
        nodes[:] = [n for n in nodes if n.labels[POOL_KEY] != f"pool-{a % 6}"]
    elif kind == "add_pool":
        pool = f"pool-{a % 6}"
        if not any(n.labels[POOL_KEY] == pool for n in nodes):
            nodes.extend(tpu_node(f"{pool}-node-{i}", pool) for i in range(2))


@given(EVENTS)
def test_no_two_running_jobs_of_one_priority_share_a_domain(events: list[Event]) -> None:
    nodes = tpu_pools(4, 2)
    jobs: dict[str, _Job] = {}
    for step, event in enumerate(events):
        _apply(event, jobs, nodes, step)
        running = [j for j in jobs.values() if j.state == "running"]
        slots = [(j.domain, j.request.scope) for j in running]
        assert len(slots) == len(set(slots)), f"shared domain after {event}: {slots}"


def test_large_jobsets_allocate_quickly() -> None:
    import time

    domains = _domains(tpu_pools(1024, 2))
    held = [make_job(f"o-w-{i}", "o").on(f"pool-{2 * i}").obj() for i in range(512)]
    occupancy = _occupancy(*held)
    started = time.perf_counter()
    result = allocate(_requests("big", 256), domains, occupancy)
    elapsed = time.perf_counter() - started
    assert isinstance(result, Assignment) and len(set(result.domains.values())) == 256
    assert elapsed < 2.0, f"{elapsed:.2f}s"
