"""Kubernetes quantities in milli-units and matchExpressions requirements."""

from __future__ import annotations

import pytest

from jobset_infra.placement.scheduling_terms import (
    QuantityError,
    matches_expression,
    parse_quantity,
)


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


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(float("inf"), id="infinity (JSON 1e999) is not a quantity"),
        pytest.param(float("nan"), id="nan is not a quantity"),
    ],
)
def test_non_finite_floats_are_not_quantities(value: float) -> None:
    with pytest.raises(QuantityError, match=r"spec\.x: .* is not a quantity"):
        parse_quantity(value, "spec.x")


LABELS = {"pool": "a", "gen": "5"}


@pytest.mark.parametrize(
    ("expr", "want"),
    [
        pytest.param({"key": "pool", "operator": "In", "values": ["a", "b"]}, True,
                     id="In matches a listed value"),
        pytest.param({"key": "pool", "operator": "In", "values": ["b"]}, False,
                     id="In misses an unlisted value"),
        pytest.param({"key": "zone", "operator": "NotIn", "values": ["x"]}, True,
                     id="NotIn matches an absent key"),
        pytest.param({"key": "pool", "operator": "Exists"}, True, id="Exists sees the key"),
        pytest.param({"key": "pool", "operator": "DoesNotExist"}, False,
                     id="DoesNotExist fails on a present key"),
        pytest.param({"key": "gen", "operator": "Gt", "values": ["4"]}, True,
                     id="Gt compares integers"),
        pytest.param({"key": "gen", "operator": "Lt", "values": ["4"]}, False,
                     id="Lt compares integers the other way"),
        pytest.param({"key": "pool", "operator": "Gt", "values": ["4"]}, False,
                     id="Gt on a label that is not an integer matches nothing"),
        pytest.param({"key": "pool", "operator": "Near", "values": ["a"]}, False,
                     id="an unknown operator matches nothing"),
    ],
)
def test_matches_expression(expr: dict[str, object], want: bool) -> None:
    assert matches_expression(expr, LABELS) is want
