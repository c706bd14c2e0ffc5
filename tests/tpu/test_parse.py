"""parse_*: config-shaped input becomes a spec, or an error naming the field (never a traceback)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from jobset_infra.tpu import Autoscaling, Capacity, SlicePoolsError, plan_slice_pools
from jobset_infra.tpu.cluster import ClusterSpecError
from jobset_infra.tpu.parse import parse_cluster_spec, parse_slice_pools_spec
from tests.tpu.builders import make_spec

CONFIG: dict[str, Any] = {
    "name": "train",
    "accelerator": "v5e",
    "topology": "2x4",
    "machine_type": "ct5lp-hightpu-4t",
    "zone": "us-west4-a",
    "cluster_location": "us-west4",
    "slices": "4",
    "capacity": "spot",
    "autoscaling": {"min_nodes": 0, "max_nodes": 2},
}


def test_config_strings_are_coerced() -> None:
    spec = parse_slice_pools_spec(CONFIG)
    assert (spec.slices, spec.capacity) == (4, Capacity.SPOT)
    assert spec.autoscaling == Autoscaling(0, 2)
    assert plan_slice_pools(CONFIG).total_chips == 32


def test_a_spec_passes_through_unchanged() -> None:
    assert parse_slice_pools_spec(make_spec()) == make_spec()


@pytest.mark.parametrize(
    ("overrides", "want_field", "want_message"),
    [
        pytest.param({"zones": ["us-west4-a"]}, "zones", "unknown field; did you mean 'zone'?",
                     id="a misspelt field suggests the right one"),
        pytest.param({"slices": "four"}, "slices", "valid integer", id="a non-numeric slice count"),
        pytest.param({"capacity": "cheap"}, "capacity", "'on-demand', 'spot', 'reservation'",
                     id="an unknown capacity lists the choices"),
        pytest.param({"autoscaling": {"min_nodes": 0}}, "autoscaling.max_nodes", "Field required",
                     id="a nested field missing"),
    ],
)  # fmt: skip
def test_bad_config_names_the_field(
    overrides: dict[str, Any], want_field: str, want_message: str
) -> None:
    with pytest.raises(SlicePoolsError, match=re.escape(want_message)) as caught:
        parse_slice_pools_spec({**CONFIG, **overrides})
    assert caught.value.field == want_field


def test_missing_required_field() -> None:
    config = {k: v for k, v in CONFIG.items() if k != "zone"}
    with pytest.raises(SlicePoolsError, match=r"^zone: Field required"):
        plan_slice_pools(config)


def test_cluster_config() -> None:
    spec = parse_cluster_spec(
        {"project": "my-project", "location": "us-west4", "master_authorized_networks": ["a"]}
    )
    assert spec.master_authorized_networks == ("a",)
    with pytest.raises(ClusterSpecError, match=r"^private_nodes: Input should be a valid boolean"):
        parse_cluster_spec({"project": "p", "location": "l", "private_nodes": "maybe"})
    with pytest.raises(ClusterSpecError, match=r"^GkeClusterSpec: expected a mapping"):
        parse_cluster_spec(["not", "a", "mapping"])  # type: ignore[arg-type]
