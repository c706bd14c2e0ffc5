"""Turn loosely typed input (Pulumi config objects, YAML, JSON) into specs, or a named error.

Pure. `parse_slice_pools_spec` and `parse_cluster_spec` accept a spec or a mapping of its fields,
coerce what is unambiguous ("4" -> 4, "spot" -> Capacity.SPOT) and reject unknown keys and wrong
types with an error naming the field, so a typo in stack config never becomes a traceback.
"""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from jobset_infra.tpu.cluster import ClusterSpecError, GkeClusterSpec
from jobset_infra.tpu.spec import SlicePoolsError, SlicePoolsSpec

__all__ = ["bool_for_int", "parse_cluster_spec", "parse_slice_pools_spec"]

_SpecT = TypeVar("_SpecT", SlicePoolsSpec, GkeClusterSpec)


def parse_slice_pools_spec(data: SlicePoolsSpec | Mapping[str, Any]) -> SlicePoolsSpec:
    """Return a type-checked `SlicePoolsSpec`; raise `SlicePoolsError` naming the bad field."""
    return _parse(SlicePoolsSpec, data, SlicePoolsError)


def parse_cluster_spec(data: GkeClusterSpec | Mapping[str, Any]) -> GkeClusterSpec:
    """Return a type-checked `GkeClusterSpec`; raise `ClusterSpecError` naming the bad field."""
    return _parse(GkeClusterSpec, data, ClusterSpecError)


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {
    SlicePoolsSpec: TypeAdapter(SlicePoolsSpec),
    GkeClusterSpec: TypeAdapter(GkeClusterSpec),
}


_HINTS: dict[type[Any], dict[str, Any]] = {}


def bool_for_int(annotation: Any, value: object) -> bool:
    """Whether `value` is a bool given for an int field (`int`, `int | None`): pydantic and
    Python alike read `true` as 1, so `slices: true` would silently plan one slice."""
    if not isinstance(value, bool):
        return False
    options = typing.get_args(annotation) or (annotation,)
    return int in options and bool not in options


def _parse(
    kind: type[_SpecT], data: _SpecT | Mapping[str, Any], error: type[SlicePoolsError]
) -> _SpecT:
    fields = {f.name: f for f in dataclasses.fields(kind)}
    if isinstance(data, kind):
        values = {name: getattr(data, name) for name in fields}
    elif isinstance(data, Mapping):
        values = dict(data)
    else:
        raise error(kind.__name__, f"expected a mapping of its fields, got {type(data).__name__}")
    hints = _HINTS.setdefault(kind, typing.get_type_hints(kind))
    for key, value in values.items():
        if key not in fields:
            near = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f"did you mean {near[0]!r}?" if near else f"valid: {', '.join(fields)}"
            raise error(str(key), f"unknown field; {hint}")
        if bool_for_int(hints.get(key), value):
            raise error(str(key), f"expected an integer, got {str(value).lower()}")
    try:
        parsed: _SpecT = _ADAPTERS[kind].validate_python(values)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or kind.__name__
        raise error(where, f"{first['msg']} (got {first.get('input')!r})") from None
    return parsed
