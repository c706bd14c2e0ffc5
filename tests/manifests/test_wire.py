"""Values off Pulumi's wire (manifests.wire): whole-number doubles back as ints, nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.manifests.wire import from_wire


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@pytest.mark.parametrize(("wire", "want"), [
    pytest.param({"replicas": 1.0}, {"replicas": 1}, id="a whole double becomes an int"),
    pytest.param({"cpu": 0.5}, {"cpu": 0.5}, id="a fraction stays a float"),
    pytest.param([{"port": 443.0, "name": "https"}], [{"port": 443, "name": "https"}],
                 id="inside lists and mappings"),
    pytest.param({"on": True, "none": None, "n": 3}, {"on": True, "none": None, "n": 3},
                 id="booleans, nulls and ints are left alone"),
])
def test_whole_numbers_come_back_as_ints(wire: Any, want: Any) -> None:
    got = from_wire(wire)
    assert got == want
    assert [type(v) for v in _leaves(got)] == [type(v) for v in _leaves(want)]
