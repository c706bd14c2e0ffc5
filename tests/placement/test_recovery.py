"""Hot-spare pools in placement (placement/recovery.py): healthy pools first, spares only for a
lost pool and after every healthy one, kept-out pools last. Table tests and a hypothesis
property over pools, spares, failures, not-ready nodes and who holds what."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api.resilience import SPARE_POOL_LABEL, Cause
from jobset_infra.placement import (
    Assignment,
    Domain,
    NoFit,
    Occupancy,
    PlacementRequest,
    SlimNode,
)
from jobset_infra.placement.inputs import PlacementInputs
from jobset_infra.placement.jobs import JobPlacementView
from jobset_infra.placement.pool_health import DomainFailure, HealthPolicy, KeptOut, kept_out
from jobset_infra.placement.recovery import allocate_recovering, is_spare, lost_domains
from jobset_infra.tpu import constants as tpu_constants
from tests.placement.builders import POOL_KEY, TPU, tpu_node

T0 = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
POLICY = HealthPolicy()


def _nodes(regular: int, spares: int, not_ready: frozenset[int] = frozenset()) -> list[SlimNode]:
    """pool-0.. (2 hosts each; pool i NotReady when i in `not_ready`), then spare-0.."""
    nodes = [tpu_node(f"pool-{p}-node-{n}", f"pool-{p}", taints=(), ready=p not in not_ready)
             for p in range(regular) for n in range(2)]
    for s in range(spares):
        for n in range(2):
            node = tpu_node(f"spare-{s}-node-{n}", f"spare-{s}", taints=())
            nodes.append(replace(node, labels={**node.labels, SPARE_POOL_LABEL: "true"}))
    return nodes


def _kept_out(*pools: str) -> dict[tuple[str, str], KeptOut]:
    ledger = tuple(DomainFailure(POOL_KEY, p, Cause.NODE_NOT_READY, T0, f"default/{p}-job",
                                 f"uid-{p}") for p in pools)
    return dict(kept_out(ledger, T0, POLICY))


def _request(index: int, owner: str = "js") -> PlacementRequest:
    return PlacementRequest(f"default/{owner}-slice-{index}", f"default/{owner}", POOL_KEY, 2,
                            per_pod={TPU: 4000})


def _held(**pools: str) -> Occupancy:
    """pool -> the Job holding it ("<jobset>-slice-<i>")."""
    return Occupancy.from_views(
        JobPlacementView(f"default/{job}", f"uid-{job}", f"default/{job.split('-slice-')[0]}",
                         POOL_KEY, pool, "", True)
        for pool, job in pools.items())


def _domains(nodes: list[SlimNode]) -> tuple[Domain, ...]:
    return PlacementInputs(tuple(nodes)).domains(POOL_KEY)


def test_the_spare_label_is_the_one_slice_pools_write() -> None:
    assert SPARE_POOL_LABEL == tpu_constants.SPARE_POOL_LABEL


@pytest.mark.parametrize(
    ("regular", "spares", "not_ready", "kept", "held", "requests", "want"),
    [
        pytest.param(2, 1, (), (), {}, [0, 1], {"pool-0", "pool-1"},
                     id="healthy pools are taken and the spare is left alone"),
        pytest.param(2, 1, (), (), {}, [0, 1, 2], None,
                     id="without a lost pool a JobSet that does not fit waits, spares untouched"),
        pytest.param(2, 1, (), ("pool-0",), {"pool-1": "js-slice-1"}, [0], {"spare-0"},
                     id="a restarted slice moves onto the spare, its sibling keeps its pool"),
        pytest.param(2, 1, (0,), (), {}, [0, 1], {"pool-1", "spare-0"},
                     id="a pool with nodes not ready opens the spares"),
        pytest.param(3, 2, (), ("pool-0",), {}, [0, 1], {"pool-1", "pool-2"},
                     id="a free healthy pool is taken before any spare"),
        pytest.param(3, 1, (), ("pool-0",), {"pool-1": "other-slice-0"}, [0, 1],
                     {"pool-2", "spare-0"},
                     id="the spare replaces a lost pool rather than wait for another JobSet"),
        pytest.param(2, 1, (), ("pool-0", "pool-1"), {}, [0, 1], {"pool-0", "spare-0"},
                     id="more pools lost than spares: a kept-out pool is used for the rest"),
        pytest.param(2, 1, (), ("spare-0",), {"pool-1": "js-slice-1"}, [0], {"pool-0"},
                     id="a kept-out spare is no reason to take spares"),
        pytest.param(2, 1, (), ("gone-3",), {"pool-0": "x-slice-0", "pool-1": "y-slice-0"}, [0],
                     {"spare-0"},
                     id="a deleted pool's failure in the ledger opens the spares"),
    ],
)
def test_spares_stand_in_only_for_lost_pools(
    *, regular: int, spares: int, not_ready: tuple[int, ...], kept: tuple[str, ...],
    held: dict[str, str], requests: list[int], want: set[str] | None,
) -> None:
    domains = _domains(_nodes(regular, spares, frozenset(not_ready)))
    found = allocate_recovering([_request(i) for i in requests], domains,
                                _held(**held), _kept_out(*kept))
    if want is None:
        assert isinstance(found.result, NoFit)
        assert "hot-spare pool(s) are kept" in found.result.message, found.result.message
        return
    assert isinstance(found.result, Assignment), found
    assert set(found.result.domains.values()) == want
    assert set(found.spares) == {d for d in want if d.startswith("spare-")}


def test_lost_pools_are_kept_out_ones_and_those_with_nodes_not_ready() -> None:
    domains = _domains(_nodes(3, 1, frozenset({2})))
    lost = lost_domains(domains, _kept_out("pool-0", "spare-0"), {POOL_KEY})
    assert lost == ("pool-0", "pool-2")
    assert [is_spare(d) for d in domains] == [False, False, False, True]


@settings(max_examples=150, deadline=None)
@given(
    regular=st.integers(min_value=1, max_value=5),
    spares=st.integers(min_value=0, max_value=3),
    kept=st.sets(st.integers(min_value=0, max_value=7), max_size=4),
    not_ready=st.sets(st.integers(min_value=0, max_value=4), max_size=2),
    siblings=st.sets(st.integers(min_value=0, max_value=7), max_size=3),
    others=st.sets(st.integers(min_value=0, max_value=7), max_size=3),
    wanted=st.integers(min_value=1, max_value=4),
)
def test_spares_are_taken_only_for_lost_pools_and_after_every_free_healthy_one(
    *, regular: int, spares: int, kept: set[int], not_ready: set[int], siblings: set[int],
    others: set[int], wanted: int,
) -> None:
    names = [f"pool-{i}" for i in range(regular)] + [f"spare-{i}" for i in range(spares)]
    domains = _domains(_nodes(regular, spares, frozenset(not_ready)))
    aside = _kept_out(*(names[i] for i in kept if i < len(names)))
    holders: dict[str, str] = {}
    for n, i in enumerate(sorted(siblings)):
        if i < len(names):
            holders[names[i]] = f"js-slice-{100 + n}"
    for n, i in enumerate(sorted(others)):
        if i < len(names) and names[i] not in holders:
            holders[names[i]] = f"other-slice-{n}"
    found = allocate_recovering([_request(i) for i in range(wanted)], domains,
                                _held(**holders), aside)
    lost = {n for n in names[:regular] if (POOL_KEY, n) in aside
            or int(n.split("-")[1]) in not_ready}
    free_healthy = {n for n in names[:regular] if n not in holders and n not in lost}
    free_spares = {n for n in names[regular:] if n not in holders and (POOL_KEY, n) not in aside}
    if not isinstance(found.result, Assignment):
        # Never a needless wait: free healthy pools and (with a pool lost) free spares
        # that could hold the Jobs are used.
        assert len(free_healthy) + (len(free_spares) if lost else 0) < wanted
        return
    chosen = set(found.result.domains.values())
    assert len(chosen) == wanted and not chosen & set(holders)
    taken_spares = {n for n in chosen if n.startswith("spare-")}
    assert set(found.spares) == taken_spares
    if taken_spares:
        assert lost, "a spare is taken only when a pool was lost"
        assert free_healthy <= chosen, "every free healthy pool comes before a spare"
    sick = {n for n in chosen if (POOL_KEY, n) in aside}
    if sick:
        assert found.used_kept_out
        assert free_healthy <= chosen and (free_spares <= chosen or not lost)
