"""OpenAPI v3 documents, as much as kubectl needs.

kubectl (1.27+) asks `/openapi/v3` for the index of group-versions and then one group-version's
document to learn whether the server supports the `fieldValidation` query parameter: it looks for a
PATCH operation tagged with the kind's `x-kubernetes-group-version-kind` that lists the parameter.
When it does, kubectl leaves validation to the server instead of validating against schemas
itself. Each document here lists the collection and item paths of its resources with those
operations, and the component schemas of the built-in kinds (from the pinned definitions) or the
CRD's `openAPIV3Schema`, so `kubectl explain` has something to show.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Any

from jobset_infra.api.k8s_openapi import definitions
from jobset_infra.sim.apiserver.discovery import not_found
from jobset_infra.sim.apiserver.resources import Registry, ResourceInfo

JsonObj = dict[str, Any]
_PARAMS = ["dryRun", "fieldManager", "fieldValidation", "force", "pretty"]


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def index(registry: Registry) -> JsonObj:
    paths = {}
    for group, versions in registry.groups().items():
        for version in versions:
            path = _gv_path(group, version)
            digest = hashlib.sha256(path.encode()).hexdigest()[:16].upper()
            paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def _operation(info: ResourceInfo, verb: str) -> JsonObj:
    gvk = {"group": info.gvr.group, "version": info.gvr.version, "kind": info.kind}
    return {
        "operationId": f"{verb}{info.kind}",
        "x-kubernetes-action": verb,
        "x-kubernetes-group-version-kind": gvk,
        "parameters": [{"name": p, "in": "query", "schema": {"type": "string"}}
                       for p in _PARAMS],
        "responses": {"200": {"description": "OK"}},
    }


def _paths(info: ResourceInfo) -> JsonObj:
    base = "/" + _gv_path(info.gvr.group, info.gvr.version)
    if info.namespaced:
        base += "/namespaces/{namespace}"
    collection = f"{base}/{info.gvr.resource}"
    return {
        collection: {"get": _operation(info, "list"), "post": _operation(info, "post")},
        collection + "/{name}": {"get": _operation(info, "get"),
                                 "put": _operation(info, "put"),
                                 "patch": _operation(info, "patch"),
                                 "delete": _operation(info, "delete")},
    }


def openapi_form(schema: Any) -> Any:
    """The pinned definitions are JSON Schema (`type: [X, "null"]`, int-or-string as `oneOf`);
    OpenAPI v3 documents, which kubectl explain reads, use one type string and
    `x-kubernetes-int-or-string`."""
    if isinstance(schema, list):
        return [openapi_form(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {name: openapi_form(sub) for name, sub in value.items()}
        elif key != "oneOf":
            out[key] = openapi_form(value)
    kinds = schema.get("type")
    if isinstance(kinds, list):
        real = [k for k in kinds if k != "null"]
        if len(real) == 1:
            out["type"] = real[0]
        else:
            out.pop("type")
    options = schema.get("oneOf")
    if options is not None:
        types = {t for o in options for t in (o.get("type") or [])} - {"null"}
        if types == {"string", "integer"}:
            out["x-kubernetes-int-or-string"] = True
        else:
            out["oneOf"] = openapi_form(options)
    if "enum" in out and isinstance(out["enum"], list):
        out["enum"] = [v for v in out["enum"] if v is not None]
    return out


def _ref_closure(roots: list[str]) -> dict[str, Any]:
    defs = definitions()
    seen: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        text = json.dumps(defs[name]).replace('"#/$defs/', '"#/components/schemas/')
        seen[name] = openapi_form(json.loads(text))
        todo.extend(part.split('"')[0] for part in text.split('"#/components/schemas/')[1:])
    return seen


@cache
def _builtin_schemas(group: str, version: str, kinds: tuple[str, ...]) -> dict[str, Any]:
    roots = [name for name, schema in definitions().items()
             for gvk in schema.get("x-kubernetes-group-version-kind", ())
             if (gvk["group"], gvk["version"], gvk["kind"]) in {(group, version, k) for k in kinds}]
    return _ref_closure(roots)


def _crd_schema(info: ResourceInfo) -> JsonObj:
    assert info.crd is not None
    for version in info.crd["spec"].get("versions") or ():
        if version.get("name") == info.gvr.version:
            schema = dict((version.get("schema") or {}).get("openAPIV3Schema") or {})
            gvk = {"group": info.gvr.group, "version": info.gvr.version, "kind": info.kind}
            schema["x-kubernetes-group-version-kind"] = [gvk]
            return schema
    return {}


def document(registry: Registry, group: str, version: str) -> JsonObj:
    infos = [i for i in registry.all() if (i.gvr.group, i.gvr.version) == (group, version)]
    if not infos:
        raise not_found()
    paths: JsonObj = {}
    for info in infos:
        paths |= _paths(info)
    builtin = tuple(sorted(i.kind for i in infos if i.crd is None))
    schemas = dict(_builtin_schemas(group, version, builtin)) if builtin else {}
    for info in infos:
        if info.crd is not None:
            reversed_group = ".".join(reversed(info.gvr.group.split(".")))
            schemas[f"{reversed_group}.{info.gvr.version}.{info.kind}"] = _crd_schema(info)
    return {"openapi": "3.0.0",
            "info": {"title": "Kubernetes (jobset-infra sim)", "version": "v1.37.0"},
            "paths": paths, "components": {"schemas": schemas}}
