"""PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge covers what our code and kubectl send for built-in kinds: lists merged by their
patch merge key (containers by name, conditions by type, ...), primitive `finalizers` merged as a
set, and the `$patch: delete|replace` and `$deleteFromPrimitiveList/<field>` directives. Lists
without a known merge key are replaced, as Kubernetes does for atomic lists. All functions are pure
and return new objects; inputs are not modified.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from jobset_infra.sim.apiserver.errors import StatusError, bad_request

_log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"

# List fields of built-in kinds and their patch merge keys (from the Go struct tags).
MERGE_KEYS: dict[str, str] = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "env": "name", "volumes": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "imagePullSecrets": "name", "conditions": "type", "ownerReferences": "uid",
    "hostAliases": "ip", "resourceClaims": "name", "topologySpreadConstraints": "topologyKey",
    "addresses": "type", "readinessGates": "conditionType",
}
SET_LISTS = frozenset({"finalizers"})


def json_merge(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, everything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _patch_error(message: str) -> StatusError:
    """A JSON patch that does not apply: 422 with the API server's generic words (what failed,
    `message`, is logged: the API server does not say either)."""
    _log.debug("sim: json patch does not apply: %s", message)
    return StatusError(422, "Invalid",
                       "the server rejected our request due to an error in our request",
                       details={})


def _container(doc: Any, parts: list[str]) -> Any:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise _patch_error(f"jsonpatch: path /{'/'.join(parts)} does not exist (at {part!r})")
    return doc


def _get(doc: Any, path: str) -> Any:
    return _container(doc, _pointer(path))


def _add(doc: Any, path: str, value: Any) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _container(doc, parts[:-1])
    key = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if key == "-" else int(key) if key.isdigit() else -1
        if not 0 <= index <= len(parent):
            raise _patch_error(f"jsonpatch add: index out of range in {path}")
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[key] = value
    else:
        raise _patch_error(f"jsonpatch add: cannot add to {path}")
    return doc


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    parent = _container(doc, parts[:-1])
    key = parts[-1] if parts else ""
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        del parent[int(key)]
    elif isinstance(parent, dict) and key in parent:
        del parent[key]
    else:
        raise _patch_error(
            f"jsonpatch remove operation does not apply: doc is missing path: {path}"
        )
    return doc


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 add/remove/replace/move/copy/test on a copy of `target`."""
    if not isinstance(operations, list):
        kind = "object" if isinstance(operations, dict) else "string" if isinstance(
            operations, str) else "number"
        raise bad_request(f"error decoding patch: json: cannot unmarshal {kind} into Go value "
                          "of type []handlers.jsonPatchOp")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)
            doc = _add(_remove(doc, path), path, copy.deepcopy(op.get("value")))
        elif kind in ("move", "copy"):
            value = copy.deepcopy(_get(doc, op["from"]))
            if kind == "move":
                doc = _remove(doc, op["from"])
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise _patch_error(f"testing value {path} failed")
        else:
            raise bad_request(f"unexpected json patch operation {kind!r}")
    return doc


def _merge_list(field: str, target: list[Any], patch: list[Any]) -> list[Any]:
    """A merge-strategy list: the patch's items merged into the ones they name; items the
    list did not have come first, in the patch's order, as kube-apiserver 1.37 merges them
    when no $setElementOrder directive says otherwise."""
    if field in SET_LISTS:
        return [item for item in patch if item not in target] + list(target)
    key = MERGE_KEYS.get(field)
    if field == "ports" and patch and isinstance(patch[0], dict):
        key = "containerPort" if "containerPort" in patch[0] else "port"
    if key is None or not all(isinstance(i, dict) for i in patch):
        return [strategic_merge(None, item) for item in patch]
    out = [dict(item) if isinstance(item, dict) else item for item in target]
    added = []
    for item in patch:
        directive = item.get("$patch")
        index = next((i for i, cur in enumerate(out)
                      if isinstance(cur, dict) and cur.get(key) == item.get(key)), None)
        if directive == "delete":
            if index is not None:
                del out[index]
        elif index is None:
            added.append(strategic_merge(None, item))
        else:
            out[index] = strategic_merge(out[index], item)
    return added + out


def strategic_merge(target: Any, patch: Any) -> Any:
    """Strategic merge patch of a built-in object (see module docstring for what is covered)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name) or [] if v not in value]
        elif key.startswith("$"):
            continue
        elif value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        else:
            merged = strategic_merge(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    return result
