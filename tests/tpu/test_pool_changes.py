"""pool_settings / pool_changes: which pools an update replaces, shrinks or deletes."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.tpu import Autoscaling, plan_slice_pools
from jobset_infra.tpu.pool_changes import (
    MAX_NODES,
    PoolChange,
    PoolChangeKind,
    PoolSettings,
    pool_changes,
    pool_settings,
    settings_from_nodes,
)
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans
from tests.tpu.builders import make_spec


def _settings(**overrides: object) -> dict[str, dict[str, str]]:
    return pool_settings([plan_slice_pools(make_spec(**overrides))])


def test_every_pool_is_recorded_with_its_settings_and_size() -> None:
    settings = _settings(spares=1)
    assert list(settings) == ["train-0", "train-1", "train-2", "train-3", "train-spare-0"]
    assert settings["train-2"] == {
        "machine_type": "ct5lp-hightpu-4t", "topology": "2x4", "placement": "COMPACT",
        "initial_node_count": "2", "max_pods_per_node": "15", "zone": "us-west4-a",
        "capacity": "spot", MAX_NODES: "2"}


def test_an_autoscaling_pool_records_its_upper_bound() -> None:
    settings = _settings(autoscaling=Autoscaling(0, 2))
    assert settings["train-0"][MAX_NODES] == "2"


@pytest.mark.parametrize(("overrides", "detail"), [
    pytest.param({"capacity": "on-demand"}, "capacity 'spot' -> 'on-demand'",
                 id="a new capacity kind replaces every pool"),
    pytest.param({"topology": "4x4"}, "initial_node_count '2' -> '4', topology '2x4' -> '4x4'",
                 id="a new topology replaces every pool, naming each changed setting"),
    pytest.param({"max_pods_per_node": 64}, "max_pods_per_node '15' -> '64'",
                 id="a new pod limit replaces every pool"),
])
def test_a_replace_on_change_setting_replaces_each_pool(overrides: dict[str, object],
                                                         detail: str) -> None:
    changes = pool_changes(_settings(), _settings(**overrides))
    assert [c.pool for c in changes] == ["train-0", "train-1", "train-2", "train-3"]
    assert {c.kind for c in changes} == {PoolChangeKind.REPLACED}
    assert {c.detail for c in changes} == {detail}


def test_fewer_slices_delete_the_last_pools_and_more_add_without_a_change() -> None:
    assert pool_changes(_settings(), _settings(slices=2)) == (
        PoolChange("train-2", PoolChangeKind.DELETED, "no longer in the stack's pools"),
        PoolChange("train-3", PoolChangeKind.DELETED, "no longer in the stack's pools"))
    assert pool_changes(_settings(slices=2), _settings()) == ()


def test_fewer_nodes_at_most_shrink_a_pool_and_more_do_not() -> None:
    # A TPU slice scales atomically (0 or all hosts), so a valid plan changes a pool's size only
    # with its topology, a replacement; a record of a bigger pool (another version, a CPU-like
    # pool) still reads as a shrink.
    wide, narrow = {"p": {"zone": "z", MAX_NODES: "4"}}, {"p": {"zone": "z", MAX_NODES: "2"}}
    assert pool_changes(wide, narrow) == (PoolChange("p", PoolChangeKind.SHRUNK,
                                                     "max_nodes 4 -> 2"),)
    assert pool_changes(narrow, wide) == ()


def test_renamed_pools_are_deleted_and_the_new_ones_are_no_change() -> None:
    before = pool_settings(tpu_plans(parse_pools_text("a=v5e-2x4:1")))
    after = pool_settings(tpu_plans(parse_pools_text("b=v5e-2x4:1")))
    assert pool_changes(before, after) == (
        PoolChange("a-0", PoolChangeKind.DELETED, "no longer in the stack's pools"),)
    assert pool_changes(before, before) == ()


@pytest.mark.parametrize("recorded", [
    pytest.param({}, id="a record without the count never reads as a shrink"),
    pytest.param({MAX_NODES: "many"}, id="a count that is not a number never reads as a shrink"),
])
def test_an_unreadable_count_is_not_a_change(recorded: dict[str, str]) -> None:
    old = {"p": {"zone": "z", **recorded}}
    assert pool_changes(old, {"p": {"zone": "z", MAX_NODES: "1"}}) == ()


_VALUES = st.sampled_from(["a", "b", "1", "2", "3"])
_POOL = st.dictionaries(st.sampled_from(["zone", "topology", MAX_NODES]), _VALUES)
_SETTINGS = st.dictionaries(st.sampled_from(["p-0", "p-1", "p-2"]), _POOL)


@given(_SETTINGS, _SETTINGS)
def test_changes_name_only_recorded_pools_in_order_and_never_a_kept_one(
        before: PoolSettings, after: PoolSettings) -> None:
    changes = pool_changes(before, after)
    pools = [c.pool for c in changes]
    assert pools == sorted(set(pools)) and set(pools) <= set(before)
    assert pool_changes(before, before) == ()
    for change in changes:
        if change.kind is PoolChangeKind.DELETED:
            assert change.pool not in after
        else:
            assert before[change.pool] != after[change.pool]


@given(st.integers(1, 6), st.integers(1, 6))
def test_pool_count_changes_delete_exactly_the_pools_beyond_the_new_count(
        old: int, new: int) -> None:
    changes = pool_changes(_settings(slices=old), _settings(slices=new))
    assert [c.pool for c in changes] == [f"train-{i}" for i in range(new, old)]
    assert all(c.kind is PoolChangeKind.DELETED for c in changes)


def test_the_record_is_plain_json() -> None:
    settings = _settings()
    assert json.loads(json.dumps(settings)) == settings


def _nodes(text: str) -> list[dict[str, object]]:
    from datetime import UTC, datetime

    from jobset_infra.tpu.node_pools import node_manifests, parse_nodes

    return node_manifests(parse_nodes(text), datetime(2026, 1, 1, tzinfo=UTC))


def test_the_nodes_of_the_stacks_pools_show_their_machine_type_topology_and_zone() -> None:
    found = settings_from_nodes(_nodes("a=v5e-2x4:2,b=v5e-2x2:1,cpu:1"), groups={"a"})
    assert found == {pool: {"machine_type": "ct5lp-hightpu-4t", "topology": "2x4",
                            "zone": "us-west4-a"} for pool in ("a-0", "a-1")}


def test_without_a_record_the_nodes_show_a_pool_go_and_a_setting_change() -> None:
    nodes = _nodes("a=v5e-2x4:2")
    fewer = pool_settings(tpu_plans(parse_pools_text("a=v5e-2x4:1")))
    assert pool_changes(settings_from_nodes(nodes, {"a"}), fewer) == (
        PoolChange("a-1", PoolChangeKind.DELETED, "no longer in the stack's pools"),)
    other = pool_settings(tpu_plans(parse_pools_text("a=v5e-2x4@ct5lp-hightpu-8t:2")))
    assert {c.kind for c in pool_changes(settings_from_nodes(nodes, {"a"}), other)} == {
        PoolChangeKind.REPLACED}
    same = pool_settings(tpu_plans(parse_pools_text("a=v5e-2x4:2")))
    assert pool_changes(settings_from_nodes(nodes, {"a"}), same) == ()


@given(st.lists(st.sampled_from(["a", "b", "c"]), unique=True, min_size=1))
def test_pools_of_other_groups_are_never_read_from_the_nodes(groups: list[str]) -> None:
    nodes = _nodes("a=v5e-2x4:1,b=v5e-2x4:1,c=v5e-2x4:1")
    assert set(settings_from_nodes(nodes, groups)) == {f"{g}-0" for g in groups}
