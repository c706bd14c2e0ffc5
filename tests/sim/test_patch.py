"""PATCH bodies: JSON merge, JSON patch and strategic merge, as pure functions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.patch import json_merge, json_patch, strategic_merge

leaf = st.one_of(st.integers(), st.text(max_size=3), st.booleans(),
                 st.lists(st.integers(), max_size=2))
tree = st.recursive(st.dictionaries(st.sampled_from("abcd"), leaf, max_size=3),
                    lambda inner: st.dictionaries(st.sampled_from("abcd"), inner, max_size=3),
                    max_leaves=10)


def merge_patch_between(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The RFC 7386 patch a client would send to turn `old` into `new`."""
    patch: dict[str, Any] = {key: None for key in old if key not in new}
    for key, value in new.items():
        if isinstance(value, dict) and isinstance(old.get(key), dict):
            sub = merge_patch_between(old[key], value)
            if sub:
                patch[key] = sub
        elif old.get(key, object()) != value or key not in old:
            patch[key] = value
    return patch


@given(tree, tree)
def test_a_merge_patch_between_two_objects_turns_one_into_the_other(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    assert json_merge(old, merge_patch_between(old, new)) == new


@given(tree, tree)
def test_patching_never_changes_its_input(old: dict[str, Any], new: dict[str, Any]) -> None:
    before = repr(old)
    json_merge(old, new)
    strategic_merge(old, new)
    assert repr(old) == before


@pytest.mark.parametrize(
    ("ops", "want"),
    [
        pytest.param([{"op": "add", "path": "/a/-", "value": 3}], {"a": [1, 2, 3], "b": {"c": 1}},
                     id="add appends with -"),
        pytest.param([{"op": "remove", "path": "/a/0"}], {"a": [2], "b": {"c": 1}},
                     id="remove deletes a list item"),
        pytest.param([{"op": "replace", "path": "/b/c", "value": 9}], {"a": [1, 2], "b": {"c": 9}},
                     id="replace swaps a value"),
        pytest.param([{"op": "move", "from": "/b/c", "path": "/d"}], {"a": [1, 2], "b": {}, "d": 1},
                     id="move takes a value to a new place"),
        pytest.param([{"op": "copy", "from": "/a", "path": "/e"}],
                     {"a": [1, 2], "b": {"c": 1}, "e": [1, 2]}, id="copy duplicates a value"),
        pytest.param([{"op": "add", "path": "/b/x~1y", "value": 1}],
                     {"a": [1, 2], "b": {"c": 1, "x/y": 1}}, id="~1 escapes a slash"),
    ],
)
def test_json_patch_operations(ops: list[dict[str, Any]], want: dict[str, Any]) -> None:
    assert json_patch({"a": [1, 2], "b": {"c": 1}}, ops) == want


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param([{"op": "remove", "path": "/missing"}], id="removing a missing path"),
        pytest.param([{"op": "replace", "path": "/missing", "value": 1}],
                     id="replacing a missing path"),
        pytest.param([{"op": "test", "path": "/a/0", "value": 5}], id="a failed test"),
    ],
)
def test_json_patch_errors_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(StatusError) as err:
        json_patch({"a": [1, 2]}, ops)
    assert err.value.code == 422


@pytest.mark.parametrize(
    ("patch", "want_containers"),
    [
        pytest.param({"containers": [{"name": "b", "image": "new"}]},
                     [{"name": "a", "image": "x"}, {"name": "b", "image": "new"}],
                     id="items merge by name"),
        pytest.param({"containers": [{"name": "a", "$patch": "delete"}]},
                     [{"name": "b", "image": "y"}], id="$patch delete removes an item"),
        pytest.param({"containers": [{"name": "c", "image": "z"}]},
                     [{"name": "c", "image": "z"}, {"name": "a", "image": "x"},
                      {"name": "b", "image": "y"}],
                     id="a new name comes first, as kube-apiserver merges it"),
    ],
)
def test_strategic_merge_of_containers(patch: dict[str, Any], want_containers: Any) -> None:
    spec = {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}
    assert strategic_merge(spec, patch)["containers"] == want_containers


@pytest.mark.parametrize(
    ("patch", "want"),
    [
        pytest.param({"finalizers": ["b"]}, ["b", "a"],
                     id="finalizers merge as a set, the new one first"),
        pytest.param({"$deleteFromPrimitiveList/finalizers": ["a"]}, [],
                     id="$deleteFromPrimitiveList removes a value"),
    ],
)
def test_strategic_merge_of_finalizers(patch: dict[str, Any], want: list[str]) -> None:
    assert strategic_merge({"finalizers": ["a"]}, patch).get("finalizers") == want


def test_strategic_merge_patch_replace_directive_replaces_the_map() -> None:
    merged = strategic_merge({"labels": {"a": "1", "b": "2"}},
                             {"labels": {"$patch": "replace", "c": "3"}})
    assert merged == {"labels": {"c": "3"}}
