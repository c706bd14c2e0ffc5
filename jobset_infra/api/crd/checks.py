"""Structural (non-CEL) checks of one schema node, worded like the kube-apiserver's errors.

Used by `crd_schema.CrdSchema`; each function looks at one value against one schema node.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from jobset_infra.api.crd.formats import format_ok
from jobset_infra.api.errors import FieldError, child, show_value

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# The apiserver's error when blocking schema errors keep it from running the CEL rules.
RULES_NOT_CHECKED_MESSAGE = (
    "Invalid value: null: some validation rules were not checked because the object was "
    "invalid; correct the existing errors to complete validation"
)
# Error shapes the apiserver counts as blocking (TypeInvalid, Required, NotSupported, TooLong,
# TooMany); a failed format is a TypeInvalid too. Range, pattern and duplicate errors are not.
_BLOCKING = re.compile(
    r"^(Required value|Unsupported value: |Too long: |Too many: |Invalid value: .* in body must be "
    r"of type )"
)


def is_blocking(error: FieldError) -> bool:
    """Whether a schema error keeps the apiserver from evaluating CEL rules (`hasBlockingErr`)."""
    return _BLOCKING.match(error.message) is not None


def type_of(schema: Mapping[str, Any]) -> str:
    """The node's `type` ("" when it has none)."""
    return str(schema.get("type") or "")


def json_type(value: Any) -> str:
    """The JSON type name of a value, as the apiserver prints it."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        # The apiserver decodes an integer beyond int64 as a float64, so it is a "number" there.
        return "integer" if _INT64_MIN <= value <= _INT64_MAX else "number"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


def type_error(path: str, value: Any, wanted: str) -> FieldError:
    """`Invalid value: "<actual>": <path> in body must be of type <wanted>: "<actual>"`."""
    actual = json_type(value)
    return FieldError(
        path, f'Invalid value: "{actual}": {path} in body must be of type {wanted}: "{actual}"'
    )


def check_type(schema: Mapping[str, Any], value: Any, path: str) -> Iterator[FieldError]:
    """A type mismatch (also int-or-string)."""
    actual = json_type(value)
    if schema.get("x-kubernetes-int-or-string"):
        if actual not in ("integer", "string"):
            yield type_error(path, value, "integer or string")
        return
    wanted = type_of(schema)
    if not wanted or wanted == actual or (wanted == "number" and actual == "integer"):
        return
    yield type_error(path, value, wanted)


def check_value(schema: Mapping[str, Any], value: Any, path: str) -> Iterator[FieldError]:
    """Enum, number and string constraints."""
    enum = schema.get("enum")
    if enum is not None and value not in enum:
        allowed = ", ".join(json.dumps(v) for v in enum)
        yield FieldError(
            path, f"Unsupported value: {show_value(value)}: supported values: {allowed}"
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        yield from check_number(schema, value, path)
    if isinstance(value, str):
        yield from check_string(schema, value, path)


def check_number(schema: Mapping[str, Any], value: float, path: str) -> Iterator[FieldError]:
    """minimum/maximum (exclusive too) and multipleOf."""
    low, high = schema.get("minimum"), schema.get("maximum")
    shown = show_value(value)
    if low is not None:
        if schema.get("exclusiveMinimum") and value <= low:
            yield FieldError(
                path, f"Invalid value: {shown}: {path} in body should be greater than {low}"
            )
        elif value < low:
            yield FieldError(
                path,
                f"Invalid value: {shown}: {path} in body should be greater than or equal to {low}",
            )
    if high is not None:
        if schema.get("exclusiveMaximum") and value >= high:
            yield FieldError(
                path, f"Invalid value: {shown}: {path} in body should be less than {high}"
            )
        elif value > high:
            yield FieldError(
                path,
                f"Invalid value: {shown}: {path} in body should be less than or equal to {high}",
            )
    step = schema.get("multipleOf")
    if step and value % step:
        yield FieldError(
            path, f"Invalid value: {shown}: {path} in body should be a multiple of {step}"
        )


def check_string(schema: Mapping[str, Any], value: str, path: str) -> Iterator[FieldError]:
    """maxLength, minLength, pattern and format."""
    longest, shortest = schema.get("maxLength"), schema.get("minLength")
    if longest is not None and len(value) > longest:
        yield FieldError(path, f"Too long: may not be more than {longest} bytes")
    if shortest is not None and len(value) < shortest:
        yield FieldError(
            path,
            f"Invalid value: {show_value(value)}: {path} in body should be at least "
            f"{shortest} chars long",
        )
    pattern = schema.get("pattern")
    compiled = regex(pattern) if isinstance(pattern, str) else None
    if compiled is not None and not compiled.search(value):
        yield FieldError(
            path, f"Invalid value: {show_value(value)}: {path} in body should match '{pattern}'"
        )
    fmt = schema.get("format")
    if fmt is not None and not format_ok(fmt, value):
        yield FieldError(
            path,
            f"Invalid value: {show_value(value)}: {path} in body must be of type {fmt}: "
            f"{show_value(value)}",
        )


@functools.cache
def regex(pattern: str) -> re.Pattern[str] | None:
    """A compiled pattern (cached); None for RE2 syntax Python's `re` lacks (then not checked)."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


def check_counts(
    schema: Mapping[str, Any], count: int, path: str, noun: str
) -> Iterator[FieldError]:
    """max/min items or properties."""
    most = schema.get(f"max{noun.capitalize()}")
    least = schema.get(f"min{noun.capitalize()}")
    if most is not None and count > most:
        yield FieldError(path, f"Too many: {count}: must have at most {most} {noun}")
    if least is not None and count < least:
        yield FieldError(
            path, f"Invalid value: {count}: {path} in body should have at least {least} {noun}"
        )


def check_list_type(schema: Mapping[str, Any], value: list[Any], path: str) -> Iterator[FieldError]:
    """Uniqueness of list-type map keys and set items."""
    list_type = schema.get("x-kubernetes-list-type")
    if list_type not in ("map", "set"):
        return
    keys = schema.get("x-kubernetes-list-map-keys") or []
    seen: set[str] = set()
    for i, item in enumerate(value):
        key = identity(item, keys if list_type == "map" else None)
        if key in seen:
            shown = key if list_type == "map" else show_value(item)
            yield FieldError(child(path, i), f"Duplicate value: {shown}")
        seen.add(key)


def identity(item: Any, keys: list[str] | None) -> str:
    """A list item's identity: its map keys, or the whole item."""
    if keys is not None and isinstance(item, dict):
        return json.dumps({k: item.get(k) for k in keys}, sort_keys=True, separators=(",", ":"))
    return json.dumps(item, sort_keys=True, separators=(",", ":"))
