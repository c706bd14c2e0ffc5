"""`Update` entries of metadata.managedFields: who last set which field with create, update or
patch (server-side apply keeps its `Apply` entries in `jobset_infra.sim.apiserver.apply`).

A write by manager M takes ownership of every field it changed (every field it set, on create)
away from the other managers; fields that disappeared are owned by nobody. Entries are keyed by
manager, operation and subresource, as in Kubernetes.
"""

from __future__ import annotations

from typing import Any

from jobset_infra.sim.apiserver.apply import (
    SKIP_META,
    ListKeys,
    Path,
    field_paths,
    fields_v1_of,
    from_fields_v1,
    to_fields_v1,
)

JsonObj = dict[str, Any]


def changed_paths(old: Any, new: Any, prefix: Path = (),
                  keys: ListKeys | None = None) -> set[Path]:
    """Leaf field paths of `new` whose value differs from `old` (all of them when `old` is None)."""
    if old is None:
        return field_paths(new, prefix, top=not prefix, keys=keys)
    out: set[Path] = set()
    if not isinstance(new, dict) or not isinstance(old, dict):
        return out
    for key, value in new.items():
        if not prefix and key in ("apiVersion", "kind"):
            continue
        if prefix == ("f:metadata",) and key in SKIP_META:
            continue
        if key not in old:
            out |= field_paths({key: value}, prefix, top=False, keys=keys)
        elif value != old[key]:
            sub = changed_paths(old[key], value, (*prefix, f"f:{key}"), keys)
            if isinstance(value, dict) and isinstance(old[key], dict) and sub:
                out |= sub
            else:
                out |= field_paths({key: value}, prefix, top=False, keys=keys)
    return out


def _under(path: Path, roots: set[Path]) -> bool:
    return any(path[:len(root)] == root for root in roots)


def record_update(
    old: JsonObj | None, new: JsonObj, *, manager: str, api_version: str, now: str,
    subresource: str | None = None, keys: ListKeys | None = None,
) -> list[JsonObj]:
    """The managedFields of `new` after `manager` wrote it over `old` (None on create);
    `keys` names the associative lists of a custom resource."""
    old_meta = (old or {}).get("metadata", {})
    before = new["metadata"].get("managedFields") or old_meta.get("managedFields") or []
    if old is None and not before:
        return [_entry(manager, api_version, now, subresource, fields_v1_of(new, keys=keys))]
    changed = field_paths(new, keys=keys) if old is None else changed_paths(old, new, keys=keys)
    if not changed and old is not None:
        return list(before)
    entries: list[JsonObj] = []
    mine: set[Path] = set()
    for entry in before:
        owned = from_fields_v1(entry.get("fieldsV1") or {})
        same = (entry.get("manager"), entry.get("operation"), entry.get("subresource")) == (
            manager, "Update", subresource)
        if same:
            mine = owned
            continue
        kept = {p for p in owned if not _under(p, changed)}
        if kept:
            entries.append(entry | {"fieldsV1": to_fields_v1(kept)})
    entries.append(_entry(manager, api_version, now, subresource, to_fields_v1(mine | changed)))
    return entries


def _entry(
    manager: str, api_version: str, now: str, subresource: str | None, fields: JsonObj
) -> JsonObj:
    entry: JsonObj = {"manager": manager, "operation": "Update", "apiVersion": api_version,
                      "time": now, "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    return entry
