"""Server-side field validation (`fieldValidation=Strict|Warn|Ignore`), for every verb, worded as
kube-apiserver 1.37 words it:

- create and update: Strict refuses unknown fields with 400 `<Kind> in version "<v>" cannot be
  handled as a <Kind>: strict decoding error: unknown field "spec.x"`; Warn (the default when the
  parameter is absent) answers with one `Warning` header per field; Ignore drops them silently.
- merge, JSON and strategic-merge patches: the same, on the patched object, except that Strict
  is a 422 whose one cause is the field `patch`.
- server-side apply: an unknown field in the configuration is refused in every mode with the
  500 of the typed conversion: `failed to create typed patch object (...): .spec.x: field not
  declared in schema`.

Unknown fields are what the CRD schema prunes for custom resources, and what the pinned OpenAPI
definitions lack for built-in kinds (`pruning`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from jobset_infra.sim.apiserver.errors import StatusError, bad_request, field_cause, invalid
from jobset_infra.sim.apiserver.pruning import prune_builtin

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.resources import ResourceInfo
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
MODES = ("Ignore", "Strict", "Warn")
_OPTIONS = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def mode(query: Mapping[str, str], verb: str) -> str:
    """The request's mode (Warn when absent); 422 for a value the server does not know."""
    value = query.get("fieldValidation", "")
    if value and value not in MODES:
        options = _OPTIONS.get(verb, "CreateOptions")
        supported = ", ".join(f'"{m}"' for m in ("", *MODES))
        raise invalid("meta.k8s.io", options, "", [field_cause(
            "FieldValueNotSupported", "fieldValidation",
            f'Unsupported value: "{value}": supported values: {supported}')])
    return value or "Warn"


def unknown_fields(store: Store, info: ResourceInfo, obj: Any) -> tuple[Any, list[str]]:
    """`obj` without its unknown fields, and their paths."""
    if not isinstance(obj, dict):
        return obj, []
    schema = store.schemas.get(info.gvr)
    if schema is not None:  # admission prunes custom resources itself; paths come sorted
        return obj, sorted(schema.pruned_fields(obj))
    return prune_builtin(info.gvr.api_version, info.kind, obj)


def _words(paths: list[str]) -> str:
    return ", ".join(f'unknown field "{p}"' for p in paths)


def warnings_for(paths: list[str], how: str) -> list[str]:
    return [f'unknown field "{p}"' for p in paths] if how == "Warn" else []


def check_body(info: ResourceInfo, paths: list[str], how: str) -> list[str]:
    """Create and update: 400 under Strict, else the warnings to send."""
    if paths and how == "Strict":
        version = info.gvr.version
        raise bad_request(f'{info.kind} in version "{version}" cannot be handled as a '
                          f"{info.kind}: strict decoding error: {_words(paths)}")
    return warnings_for(paths, how)


def go_value(value: Any) -> str:
    """A decoded JSON value as Go's %v prints it: `map[a:map[b:true]]`, `[x y]`."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return "<nil>" if value is None else str(value)


def check_patched(patched: JsonObj, paths: list[str], how: str,
                  patch: Any = None) -> list[str]:
    """Merge, JSON and strategic patches: 422 on the `patch` field under Strict, quoting the
    patched object (a strategic merge patch quotes the patch itself, as Go prints a map)."""
    if paths and how == "Strict":
        shown = go_value(patch) if patch is not None else json.dumps(patched,
                                                                      separators=(",", ":"))
        raise invalid("", "", "", [field_cause(
            "FieldValueInvalid", "patch",
            f"Invalid value: {json.dumps(shown)}: strict decoding error: {_words(paths)}")])
    return warnings_for(paths, how)


def check_apply(info: ResourceInfo, name: str, paths: list[str]) -> None:
    """Server-side apply: an unknown field fails the typed conversion, whatever the mode."""
    if paths:
        group = info.gvr.group
        gv = f"{group}/{info.gvr.version}" if group else f"/{info.gvr.version}"
        raise StatusError(500, "", f"failed to create typed patch object ({'/' + name}; {gv}, "
                          f"Kind={info.kind}): .{paths[0]}: field not declared in schema")
