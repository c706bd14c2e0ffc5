"""Kubernetes quantities in milli-units."""

from __future__ import annotations

import pytest

from jobset_infra.controller.placement.quantity import QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("value", "want_milli"),
    [
        pytest.param("4", 4000, id="plain integer string"),
        pytest.param(4, 4000, id="integer"),
        pytest.param("500m", 500, id="milli cpu"),
        pytest.param("1.5", 1500, id="decimal fraction"),
        pytest.param("16Gi", 16 * 2**30 * 1000, id="binary suffix"),
        pytest.param("2k", 2_000_000, id="decimal suffix"),
        pytest.param("1e3", 1_000_000, id="exponent"),
        pytest.param("1u", 1, id="micro rounds up to one milli"),
        pytest.param(0.25, 250, id="float"),
    ],
)
def test_parse_quantity(value: object, want_milli: int) -> None:
    assert parse_quantity(value) == want_milli


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("four", id="word"),
        pytest.param("4Gb", id="unknown suffix"),
        pytest.param(True, id="boolean"),
        pytest.param("", id="empty"),
    ],
)
def test_bad_quantity_names_the_field(value: object) -> None:
    with pytest.raises(QuantityError, match=r"spec\.x: .* is not a quantity"):
        parse_quantity(value, "spec.x")
