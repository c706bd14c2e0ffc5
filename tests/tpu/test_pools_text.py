"""Pool spec strings (`--nodes`, the local stack's `nodes`): one grammar, planned as GKE pools."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.tpu.pools_text import (
    CpuPoolEntry,
    PoolsTextError,
    TpuPoolsEntry,
    parse_pools_text,
    tpu_plans,
)


@pytest.mark.parametrize(
    ("text", "pools"),
    [
        pytest.param("v5e-2x4:4", ["v5e-2x4-0", "v5e-2x4-1", "v5e-2x4-2", "v5e-2x4-3"],
                     id="a shape names its pools after the family and topology"),
        pytest.param("v5e=v5e-2x4@ct5lp-hightpu-4t:2", ["v5e-0", "v5e-1"],
                     id="a name before '=' names the pools as a stack's slices.name does"),
        pytest.param("v5e-2x4:1,cpu:2", ["v5e-2x4-0"], id="the cpu pool plans no slices"),
        pytest.param("hp=v5e-2x4:2+1", ["hp-0", "hp-1", "hp-spare-0"],
                     id="'+<spares>' adds hot-spare pools after the slices"),
    ],
)
def test_tpu_entries_plan_the_pools_gke_would_get(text: str, pools: list[str]) -> None:
    assert [p.name for plan in tpu_plans(parse_pools_text(text)) for p in plan.pools] == pools


def test_a_named_entry_plans_what_the_multislice_stack_plans() -> None:
    [entry] = parse_pools_text("v5e=v5e-2x4@ct5lp-hightpu-4t:4")
    assert isinstance(entry, TpuPoolsEntry)
    assert (entry.plan.slices, entry.plan.nodes_per_pool, entry.plan.total_chips) == (4, 2, 32)
    assert entry.plan.pools[3].node_labels["jobset-infra/slice-group"] == "v5e"


def test_cpu_entries_keep_their_node_count() -> None:
    assert parse_pools_text("cpu:3") == (CpuPoolEntry("cpu:3", 3),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("=v5e-2x4:1", "has an empty name before '='", id="an empty name"),
        pytest.param("v5e-2x4:0", "needs a positive count", id="a zero count"),
        pytest.param("v5e-2x4:2+x", "'\\+<spares>' takes a count", id="spares not a count"),
        pytest.param("cpu:2+1", "'\\+<spares>' takes a count", id="spares of the cpu pool"),
        pytest.param("v5e-3x3:1", "valid topologies", id="a topology v5e does not have"),
        pytest.param("a=v5e-2x4:1,a=v5e-2x2:1", "pool 'a' is listed twice",
                     id="two entries naming the same pools"),
    ],
)
def test_a_bad_entry_is_named_in_the_error(text: str, message: str) -> None:
    with pytest.raises(PoolsTextError, match=message):
        parse_pools_text(text)


@given(slices=st.integers(1, 16), topology=st.sampled_from(["1x1", "2x2", "2x4", "4x4"]),
       named=st.booleans())
def test_every_slice_asked_for_is_one_pool(slices: int, topology: str, named: bool) -> None:
    name = "grp=" if named else ""
    [plan] = tpu_plans(parse_pools_text(f"{name}v5e-{topology}:{slices}"))
    assert len(plan.pools) == plan.slices == slices
    assert len({p.name for p in plan.pools}) == slices


@pytest.mark.parametrize(("text", "pools"), [
    pytest.param("v6e-4x4:2", ("v6e-4x4-0", "v6e-4x4-1"), id="v6e pools are named for their shape"),
    pytest.param("v5p-2x2x2:1", ("v5p-2x2x2-0",), id="v5p pools are named for their shape"),
    pytest.param("tpu7x-2x2x2:2", ("tpu7x-2x2x2-0", "tpu7x-2x2x2-1"),
                 id="TPU7x pools get a lowercase name GKE accepts"),
])
def test_every_deployable_generation_makes_pools_from_text(text: str,
                                                          pools: tuple[str, ...]) -> None:
    [plan] = tpu_plans(parse_pools_text(text))
    assert plan.pool_names == pools
