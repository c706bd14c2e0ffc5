"""The generic CRD schema engine: pruning, defaulting, structural validation, CEL rules."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.crd.cel import append_field_path
from jobset_infra.api.crd.schema import CrdSchema, CrdSchemaError
from jobset_infra.api.errors import FieldError

WIDGET: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 0, "maximum": 10},
                "mode": {"type": "string", "enum": ["Fast", "Slow"], "default": "Fast"},
                "name": {"type": "string", "maxLength": 5, "minLength": 1, "pattern": "^[a-z]+$"},
                "when": {"type": "string", "format": "date-time"},
                "port": {
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                },
                "owner": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "owner is immutable"}
                    ],
                },
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"flag": {"type": "boolean", "default": True}},
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"known": {"type": "integer"}},
                },
                "embedded": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "properties": {"spec": {"type": "object"}},
                },
                "tags": {
                    "type": "array",
                    "maxItems": 3,
                    "x-kubernetes-list-type": "set",
                    "items": {"type": "string"},
                },
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string"},
                            "count": {"type": "integer", "default": 1},
                        },
                        "x-kubernetes-validations": [
                            {
                                "rule": "self.count == oldSelf.count",
                                "messageExpression": "'count of ' + self.name + ' is immutable'",
                            },
                        ],
                    },
                },
            },
            "x-kubernetes-validations": [
                {
                    "rule": "self.size >= 2 || self.mode == 'Slow'",
                    "message": "small widgets must be slow",
                },
                {
                    "rule": "!has(self.name) || self.name.startsWith('w')",
                    "message": "name must start with w",
                    "fieldPath": ".name",
                },
                {
                    "rule": "!has(self.tags) || size(self.tags) < 3",
                    "reason": "FieldValueForbidden",
                    "message": "too many tags",
                },
                {"rule": "!has(self.name) || self.name.upperAscii() != 'WXYZ'"},
            ],
        },
    },
}


def _crd(schema: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}}


@pytest.fixture(scope="module")
def widget() -> CrdSchema:
    return CrdSchema.from_crd(_crd(WIDGET), "v1")


def _obj(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "x/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "odd": 1},
        "spec": {"size": 5, **spec},
    }


def test_prune_drops_unknown_fields_but_keeps_preserved_embedded_and_root_meta(
    widget: CrdSchema,
) -> None:
    obj = _obj(
        bogus=1,
        free={"known": 1, "extra": {"x": 1}},
        labels={"a": "b"},
        embedded={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {},
            "junk": 2,
        },
        items=[{"name": "a", "zzz": 1}],
    )
    pruned = widget.prune(obj)
    assert pruned["metadata"] == {"name": "w", "odd": 1}
    assert "bogus" not in pruned["spec"]
    assert pruned["spec"]["free"] == {"known": 1, "extra": {"x": 1}}
    assert pruned["spec"]["labels"] == {"a": "b"}
    assert set(pruned["spec"]["embedded"]) == {"apiVersion", "kind", "metadata", "spec"}
    assert pruned["spec"]["items"] == [{"name": "a"}]
    assert widget.pruned_fields(obj) == ["spec.bogus", "spec.embedded.junk", "spec.items[0].zzz"]
    assert obj["spec"]["bogus"] == 1  # input untouched


def test_default_applies_recursively_and_drops_non_nullable_nulls(widget: CrdSchema) -> None:
    obj = _obj(mode=None, items=[{"name": "a"}], name=None)
    defaulted = widget.default(obj)
    assert defaulted["spec"]["mode"] == "Fast"
    assert defaulted["spec"]["nested"] == {"flag": True}
    assert defaulted["spec"]["items"] == [{"name": "a", "count": 1}]
    assert "name" not in defaulted["spec"]
    assert obj["spec"]["mode"] is None


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param(
            {"size": -1},
            FieldError(
                "spec.size",
                "Invalid value: -1: spec.size in body should be greater than or equal to 0",
            ),
            id="below minimum",
        ),
        pytest.param(
            {"size": 11},
            FieldError(
                "spec.size",
                "Invalid value: 11: spec.size in body should be less than or equal to 10",
            ),
            id="above maximum",
        ),
        pytest.param(
            {"size": "5"},
            FieldError(
                "spec.size",
                'Invalid value: "string": spec.size in body must be of type integer: "string"',
            ),
            id="wrong type",
        ),
        pytest.param(
            {"size": True},
            FieldError(
                "spec.size",
                'Invalid value: "boolean": spec.size in body must be of type integer: "boolean"',
            ),
            id="a boolean is not an integer",
        ),
        pytest.param(
            {"mode": "Medium"},
            FieldError(
                "spec.mode", 'Unsupported value: "Medium": supported values: "Fast", "Slow"'
            ),
            id="not in enum",
        ),
        pytest.param(
            {"name": "wabcdef"},
            FieldError("spec.name", "Too long: may not be more than 5 bytes"),
            id="too long",
        ),
        pytest.param(
            {"name": ""},
            FieldError(
                "spec.name", 'Invalid value: "": spec.name in body should be at least 1 chars long'
            ),
            id="too short",
        ),
        pytest.param(
            {"name": "w1"},
            FieldError(
                "spec.name", "Invalid value: \"w1\": spec.name in body should match '^[a-z]+$'"
            ),
            id="pattern mismatch",
        ),
        pytest.param(
            {"when": "yesterday"},
            FieldError(
                "spec.when",
                'Invalid value: "yesterday": spec.when in body must be of type date-time: '
                '"yesterday"',
            ),
            id="bad date-time format",
        ),
        pytest.param(
            {"port": 1.5},
            FieldError(
                "spec.port",
                'Invalid value: "number": spec.port in body must be of type integer or string: '
                '"number"',
            ),
            id="int-or-string rejects a float",
        ),
        pytest.param(
            {"tags": ["a", "a"]},
            FieldError("spec.tags[1]", 'Duplicate value: "a"'),
            id="duplicate in a set",
        ),
        pytest.param(
            {"tags": ["a", "b", "c", "d"]},
            FieldError("spec.tags", "Too many: 4: must have at most 3 items"),
            id="too many items",
        ),
        pytest.param(
            {"items": [{"name": "a"}, {"name": "a"}]},
            FieldError("spec.items[1]", 'Duplicate value: {"name":"a"}'),
            id="duplicate list-map key",
        ),
        pytest.param(
            {"items": [{"count": 1}]},
            FieldError("spec.items[0].name", "Required value"),
            id="missing required",
        ),
        pytest.param(
            {"size": 1},
            FieldError("spec", 'Invalid value: small widgets must be slow'),
            id="CEL rule",
        ),
        pytest.param(
            {"name": "abc"},
            FieldError("spec.name", 'Invalid value: name must start with w'),
            id="CEL rule with fieldPath",
        ),
        pytest.param(
            {"tags": ["a", "b", "c"]},
            FieldError("spec", "Forbidden: too many tags"),
            id="CEL rule with a reason",
        ),
        pytest.param(
            {"name": "wxyz"},
            FieldError(
                "spec",
                'Invalid value: failed rule: !has(self.name) || '
                "self.name.upperAscii() != 'WXYZ'",
            ),
            id="CEL rule without a message uses the rule text",
        ),
    ],
)
def test_validation_errors_are_worded_like_the_apiserver(
    widget: CrdSchema, spec: dict[str, Any], want: FieldError
) -> None:
    obj = _obj()
    obj["spec"].update(spec)
    assert want in widget.validate(widget.default(obj))


def test_a_valid_object_has_no_errors(widget: CrdSchema) -> None:
    obj = _obj(
        name="wab",
        port="http",
        when="2026-01-01T00:00:00Z",
        tags=["a"],
        items=[{"name": "a"}],
        owner="me",
    )
    assert widget.validate(widget.default(obj)) == []


def test_required_field_is_reported(widget: CrdSchema) -> None:
    obj = _obj()
    del obj["spec"]["size"]
    assert FieldError("spec.size", "Required value") in widget.validate(obj)


def test_transition_rules_run_only_on_update_with_an_old_value(widget: CrdSchema) -> None:
    old = widget.default(_obj(owner="a", items=[{"name": "x", "count": 1}]))
    new = widget.default(_obj(owner="b", items=[{"name": "x", "count": 2}, {"name": "y"}]))
    assert widget.validate(new) == []
    errors = widget.validate(new, old)
    assert FieldError("spec.owner", 'Invalid value: "b": owner is immutable') in errors
    assert FieldError("spec.items[0]", 'Invalid value: count of x is immutable') in errors
    assert len(errors) == 2  # item "y" has no old value to correlate with


@pytest.mark.parametrize(
    ("spec", "want_first"),
    [
        pytest.param(
            {"size": 1, "mode": "Turbo"},
            FieldError("spec.mode", 'Unsupported value: "Turbo": supported values: "Fast", "Slow"'),
            id="an unsupported enum value stops the rules",
        ),
        pytest.param(
            {"size": 10**30},
            FieldError(
                "spec.size",
                'Invalid value: "number": spec.size in body must be of type integer: "number"',
            ),
            id="an integer beyond int64 is a number, as the apiserver decodes it",
        ),
        pytest.param(
            {"size": 1, "name": "toolong"},
            FieldError("spec.name", "Too long: may not be more than 5 bytes"),
            id="a too long string stops the rules",
        ),
    ],
)
def test_a_blocking_schema_error_skips_the_cel_rules(
    widget: CrdSchema, spec: dict[str, Any], want_first: FieldError
) -> None:
    # size 1 with mode Fast would also break "small widgets must be slow": the apiserver does
    # not evaluate rules over an object with a blocking error, and says so once.
    errors = widget.validate(_obj(**spec))
    assert errors[0] == want_first
    assert errors[-1].path == ""
    assert "some validation rules were not checked" in errors[-1].message
    assert not any("evaluating rule" in e.message or "slow" in e.message for e in errors)


def test_a_non_blocking_schema_error_still_runs_the_cel_rules(widget: CrdSchema) -> None:
    errors = widget.validate(_obj(size=-1, mode="Fast"))
    assert errors == [
        FieldError(
            "spec.size",
            "Invalid value: -1: spec.size in body should be greater than or equal to 0",
        ),
        FieldError("spec", 'Invalid value: small widgets must be slow'),
    ]


def test_from_crd_names_a_missing_version() -> None:
    with pytest.raises(CrdSchemaError, match="no version 'v2'"):
        CrdSchema.from_crd(_crd(WIDGET), "v2")


def test_a_rule_that_does_not_compile_is_rejected_when_strict_and_skipped_otherwise() -> None:
    schema = copy.deepcopy(WIDGET)
    schema["properties"]["spec"]["x-kubernetes-validations"] = [{"rule": "self.size >"}]
    with pytest.raises(CrdSchemaError, match="spec"):
        CrdSchema(schema, strict=True)
    lenient = CrdSchema(schema)
    assert len(lenient.skipped_rules) == 1
    assert lenient.skipped_rules[0].startswith("spec: ")
    assert lenient.validate(_obj()) == []


def test_an_erroring_rule_reports_the_evaluation_error(widget: CrdSchema) -> None:
    schema = copy.deepcopy(WIDGET)
    schema["x-kubernetes-validations"] = [{"rule": "self.spec.missing == 1"}]
    errors = CrdSchema(schema).validate(_obj())
    assert len(errors) == 1
    assert "evaluating rule: self.spec.missing == 1" in errors[0].message


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param("self.spec.size * 9223372036854775807 > 0", id="overflow of a product"),
        pytest.param("self.spec.size + 9223372036854775807 > 0", id="overflow of a sum"),
    ],
)
def test_an_overflowing_rule_says_integer_overflow_as_cel_go(rule: str) -> None:
    schema = copy.deepcopy(WIDGET)
    schema["x-kubernetes-validations"] = [{"rule": rule}]
    errors = CrdSchema(schema).validate(_obj())
    assert errors == [
        FieldError("", f'Invalid value: "object": integer overflow evaluating rule: {rule}')
    ]


@pytest.mark.parametrize(
    ("field_path", "want"),
    [
        pytest.param(".a.b", "spec.a.b", id="dotted"),
        pytest.param(".a['x.y']", "spec.a[x.y]", id="quoted key"),
        pytest.param(".a[2]", "spec.a[2]", id="index"),
    ],
)
def test_field_paths(field_path: str, want: str) -> None:
    assert append_field_path("spec", field_path) == want


def test_many_list_items_validate_quickly(widget: CrdSchema) -> None:
    obj = widget.default(_obj(items=[{"name": f"n{i}"} for i in range(500)]))
    start = time.perf_counter()
    assert widget.validate(obj, obj) == []
    assert time.perf_counter() - start < 2.0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    spec=st.dictionaries(
        st.sampled_from(["size", "mode", "name", "tags", "items", "port", "nested", "free", "x"]),
        json_values,
        max_size=5,
    )
)
@pytest.mark.slow
def test_arbitrary_objects_never_raise(spec: dict[str, Any]) -> None:
    schema = CrdSchema.from_crd(_crd(WIDGET), "v1")
    _, errors = schema.admit({"spec": spec}, old={"spec": spec})
    assert isinstance(errors, list)
    assert all(isinstance(e, FieldError) for e in errors)


def test_a_pattern_python_cannot_compile_is_not_checked() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "\\pL+\\z"}}}
    assert CrdSchema(schema).validate({"a": "x"}) == []
