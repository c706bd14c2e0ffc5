"""Server-side apply: create-if-absent, field ownership per manager, conflicts and removal.

Ownership is tracked in `metadata.managedFields` as FieldsV1 (`f:` keys for fields, `k:` keys for
items of associative lists, `v:` for set members). Applying a configuration:

1. claims every field the configuration sets for its manager;
2. conflicts (409, one cause per field) with another manager that owns a field the configuration
   sets to a different value, unless `force` is given, which takes the field over;
3. merges the configuration into the live object (associative lists by key, other lists replaced);
4. removes fields this manager applied before, no longer applies, and nobody else owns.

Lists are associative when their field name is one built-in kinds declare a patch merge key for
(`patch.MERGE_KEYS`: containers by name, conditions by type, ...) or, for a custom resource, one
its CRD declares `x-kubernetes-list-type: map` with `x-kubernetes-list-map-keys`
(`ResourceInfo.list_keys`, by field name); other lists are atomic.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from jobset_infra.api.input_limits import SIM_LIMITS
from jobset_infra.api.yaml_io import YamlError, load_documents
from jobset_infra.sim.apiserver import field_validation
from jobset_infra.sim.apiserver.errors import (
    StatusError,
    bad_request,
    field_cause,
    invalid,
    name_mismatch,
)
from jobset_infra.sim.apiserver.patch import MERGE_KEYS, SET_LISTS

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.resources import ResourceInfo
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
Path = tuple[str, ...]
SKIP_META = frozenset({"name", "namespace", "uid", "resourceVersion", "generation",
                        "creationTimestamp", "deletionTimestamp", "managedFields",
                        "deletionGracePeriodSeconds"})


ListKeys = dict[str, list[str]]


def _list_key(field: str, items: list[Any], keys: ListKeys | None = None) -> list[str] | None:
    if field in SET_LISTS:
        return None
    if keys and field in keys:
        names = keys[field]
        return names if all(isinstance(i, dict) and all(k in i for k in names)
                            for i in items) else None
    key = MERGE_KEYS.get(field)
    if field == "ports" and items and isinstance(items[0], dict):
        key = "containerPort" if "containerPort" in items[0] else "port"
    if key and all(isinstance(i, dict) and key in i for i in items):
        return [key]
    return None


def _item_key(item: JsonObj, keys: list[str]) -> str:
    return "k:" + json.dumps({k: item[k] for k in keys}, separators=(",", ":"), sort_keys=True)


def field_paths(obj: Any, prefix: Path = (), top: bool = True,
                keys: ListKeys | None = None) -> set[Path]:
    """The leaf fields `obj` sets, as FieldsV1 path tuples."""
    out: set[Path] = set()
    if not isinstance(obj, dict):
        return out
    for key, value in obj.items():
        if top and key in ("apiVersion", "kind"):
            continue
        if prefix == ("f:metadata",) and key in SKIP_META:
            continue
        path = (*prefix, f"f:{key}")
        if isinstance(value, dict) and value:
            out |= field_paths(value, path, top=False, keys=keys)
        elif isinstance(value, list) and key in SET_LISTS:
            out |= {(*path, "v:" + json.dumps(v)) for v in value}
        elif isinstance(value, list) and value and (names := _list_key(key, value, keys)):
            for item in value:
                item_path = (*path, _item_key(item, names))
                out.add(item_path)
                out |= field_paths(item, item_path, top=False, keys=keys)
        else:
            out.add(path)
    return out


def fields_v1_of(obj: Any, top: bool = True, meta: bool = False,
                 keys: ListKeys | None = None) -> JsonObj:
    """`to_fields_v1(field_paths(obj))` built in one pass (what a create owns), without the
    intermediate path set: creates are the hot path of the benchmarks."""
    out: JsonObj = {}
    for key, value in obj.items():
        if (top and key in ("apiVersion", "kind")) or (meta and key in SKIP_META):
            continue
        name = f"f:{key}"
        if isinstance(value, dict) and value:
            sub = fields_v1_of(value, False, top and key == "metadata", keys)
            if sub:  # metadata holding only server-set fields owns nothing
                out[name] = sub
        elif isinstance(value, list) and key in SET_LISTS:
            out[name] = {"v:" + json.dumps(v): {} for v in value}
        elif isinstance(value, list) and value and (names := _list_key(key, value, keys)):
            out[name] = {_item_key(item, names): fields_v1_of(item, False, keys=keys)
                         for item in value}
        else:
            out[name] = {}
    return out


def to_fields_v1(paths: set[Path]) -> JsonObj:
    root: JsonObj = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part, {})
    return root


def from_fields_v1(tree: JsonObj, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, child in tree.items():
        if key == ".":
            continue
        path = (*prefix, key)
        if child and any(k != "." for k in child):
            out |= from_fields_v1(child, path)
            if key.startswith("k:"):
                out.add(path)
        else:
            out.add(path)
    return out


def _lookup(obj: Any, path: Path) -> tuple[bool, Any]:
    for part in path:
        if part.startswith("f:") and isinstance(obj, dict) and part[2:] in obj:
            obj = obj[part[2:]]
        elif part.startswith("k:") and isinstance(obj, list):
            want = json.loads(part[2:])
            match = [i for i in obj if isinstance(i, dict)
                     and all(i.get(k) == v for k, v in want.items())]
            if not match:
                return False, None
            obj = match[0]
        elif part.startswith("v:") and isinstance(obj, list):
            return json.loads(part[2:]) in obj, json.loads(part[2:])
        else:
            return False, None
    return True, obj


def _remove(obj: Any, path: Path) -> None:
    *parents, last = path
    found, parent = _lookup(obj, tuple(parents))
    if not found:
        return
    if last.startswith("f:") and isinstance(parent, dict):
        parent.pop(last[2:], None)
    elif last.startswith("k:") and isinstance(parent, list):
        want = json.loads(last[2:])
        parent[:] = [i for i in parent if not (isinstance(i, dict)
                     and all(i.get(k) == v for k, v in want.items()))]
    elif last.startswith("v:") and isinstance(parent, list):
        value = json.loads(last[2:])
        parent[:] = [i for i in parent if i != value]
    if isinstance(parent, list) and not parent and parents:
        _remove(obj, tuple(parents))  # a list whose last item went is gone too


def merge(live: Any, config: Any, field: str = "", keys: ListKeys | None = None) -> Any:
    """The live object with the configuration's values laid over it."""
    if isinstance(config, dict) and isinstance(live, dict):
        out = dict(live)
        for key, value in config.items():
            out[key] = merge(live.get(key), value, key, keys)
        return out
    if isinstance(config, list) and isinstance(live, list):
        if field in SET_LISTS:
            return live + [v for v in config if v not in live]
        names = _list_key(field, config, keys)
        if names and all(isinstance(i, dict) for i in live):
            out_list = list(live)
            for item in config:
                index = next((n for n, cur in enumerate(out_list)
                              if all(cur.get(k) == item[k] for k in names)), None)
                if index is None:
                    out_list.append(item)
                else:
                    out_list[index] = merge(out_list[index], item, keys=keys)
            return out_list
    return config


def _render(path: Path) -> str:
    """A field path as structured-merge-diff prints it: `.spec.containers[name="a"].image`,
    `[containerPort=80,protocol="TCP"]` for a multi-key item, `[="x"]` for a set member."""
    parts = []
    for part in path:
        if part.startswith("f:"):
            parts.append("." + part[2:])
        elif part.startswith("k:"):
            keys = json.loads(part[2:])
            parts.append("[" + ",".join(f"{k}={json.dumps(v, separators=(',', ':'))}"
                                        for k, v in sorted(keys.items())) + "]")
        elif part.startswith("v:"):
            parts.append(f"[={part[2:]}]")
        else:
            parts.append("[" + part[2:] + "]")
    return "".join(parts)


def managed_sets(obj: JsonObj) -> list[tuple[JsonObj, set[Path]]]:
    return [(entry, from_fields_v1(entry.get("fieldsV1") or {}))
            for entry in obj["metadata"].get("managedFields") or ()]


def _entry(store: Store, info: ResourceInfo, manager: str, *, operation: str,
           paths: set[Path], subresource: str | None) -> JsonObj:
    entry: JsonObj = {"manager": manager, "operation": operation,
                      "apiVersion": info.gvr.api_version, "time": store.now(),
                      "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}
    if subresource:
        entry["subresource"] = subresource
    return entry


def parse_body(body: Any) -> JsonObj:
    if isinstance(body, bytes | str):
        try:
            documents = load_documents(body, SIM_LIMITS)  # bounded like every request body
        except YamlError as exc:
            raise bad_request(f"error decoding YAML: {exc}") from None
        body = documents[0] if documents else None
    if not isinstance(body, dict):
        raise bad_request("apply configuration must be an object")
    return body


def server_side_apply(
    store: Store,
    info: ResourceInfo,
    name: str,
    ns: str,
    body: Any,
    *,
    subresource: str | None = None,
    field_manager: str | None = None,
    force: bool = False,
    dry_run: bool = False,
) -> JsonObj:
    if not field_manager:
        raise invalid("meta.k8s.io", "PatchOptions", "", [field_cause(
            "FieldValueRequired", "fieldManager", "Required value: is required for apply patch")])
    config = parse_body(body)
    if not config.get("apiVersion") or not config.get("kind"):
        group, _, version = str(config.get("apiVersion") or "").rpartition("/")
        raise bad_request(f"invalid object type: {group}/{version}, Kind={config.get('kind', '')}")
    config.setdefault("metadata", {})
    if config["metadata"].get("name", name) != name:
        raise bad_request(name_mismatch(str(config["metadata"]["name"]), name))
    config["metadata"]["name"] = name
    field_validation.check_apply(info, name, field_validation.unknown_fields(
        store, info, config)[1])
    if subresource == "status":
        config = {"metadata": config["metadata"], "status": config.get("status") or {}}
    paths = field_paths(config, keys=info.keys)
    live = store.peek(info.gvr, ns, name)
    if live is None:
        config["metadata"]["managedFields"] = [
            _entry(store, info, field_manager, operation="Apply", paths=paths,
                   subresource=subresource)]
        return store.create(info.gvr, config, ns or None, dry_run=dry_run)
    return _apply_to_live(store, info, live, config, paths=paths, manager=field_manager,
                          force=force, subresource=subresource, dry_run=dry_run)


def _apply_to_live(
    store: Store, info: ResourceInfo, live: JsonObj, config: JsonObj, *, paths: set[Path],
    manager: str, force: bool, subresource: str | None, dry_run: bool,
) -> JsonObj:
    entries = managed_sets(live)
    mine = next((s for e, s in entries if e.get("manager") == manager
                 and e.get("operation") == "Apply"), set())
    conflicts: list[tuple[str, Path]] = []
    for entry, owned in entries:
        if entry.get("manager") == manager:
            continue
        for path in owned & paths:
            if path[-1].startswith("k:"):
                continue  # owning a list item is not a value that can conflict; its fields can
            if _lookup(live, path) != _lookup(config, path):
                conflicts.append((_manager_words(entry), path))
    if conflicts and not force:
        raise _conflict(info, live, conflicts)
    merged: JsonObj = merge({k: v for k, v in live.items()}, config, keys=info.keys)
    others: set[Path] = set()
    new_entries: list[JsonObj] = []
    for entry, owned in entries:
        if entry.get("manager") == manager and entry.get("operation") == "Apply":
            continue
        kept = owned - paths if force else owned
        others |= kept
        if kept:
            new_entries.append(entry | {"fieldsV1": to_fields_v1(kept)})
    # a list item no manager keeps goes whole, before its fields (whose removal would unkey it)
    for path in sorted(mine - paths - others, key=len):
        _remove(merged, path)
    new_entries.append(_entry(store, info, manager, operation="Apply", paths=paths,
                               subresource=subresource))
    if _unchanged(live, merged, new_entries):
        return live  # re-applying the same configuration is not a write
    merged["metadata"] = dict(merged["metadata"]) | {"managedFields": new_entries}
    merged["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    return store.replace(info, live, merged, subresource=subresource, dry_run=dry_run)


def _unchanged(live: JsonObj, merged: JsonObj, entries: list[JsonObj]) -> bool:
    """Same object and same ownership; only the entries' timestamps may differ."""
    def timeless(items: list[JsonObj]) -> list[JsonObj]:
        out = [{k: v for k, v in e.items() if k != "time"} for e in items]
        return sorted(out, key=lambda e: (e.get("manager"), e.get("operation"),
                                          e.get("subresource", "")))

    def body(obj: JsonObj) -> JsonObj:
        meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
        return obj | {"metadata": meta}

    before = live["metadata"].get("managedFields") or []
    return body(live) == body(merged) and timeless(before) == timeless(entries)


def _manager_words(entry: JsonObj) -> str:
    """A manager as the API server names it in a conflict: `"m"`, `"m" with subresource
    "status"`, and `using <apiVersion>` for managers that wrote with an update."""
    words = f'"{entry.get("manager", "")}"'
    if entry.get("subresource"):
        words += f' with subresource "{entry["subresource"]}"'
    if entry.get("operation") == "Update":
        words += f" using {entry.get('apiVersion', '')}"
    return words


def _conflict(info: ResourceInfo, live: JsonObj, conflicts: list[tuple[str, Path]]) -> StatusError:
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {m}",
               "field": _render(p)} for m, p in conflicts]
    if len(causes) == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:  # grouped by manager, managers sorted, as the API server words it
        lines = []
        for words in sorted({m for m, _ in conflicts}):
            lines.append(f"conflicts with {words}:")
            lines += sorted(f"- {_render(p)}" for m, p in conflicts if m == words)
        message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, details={"causes": causes})
