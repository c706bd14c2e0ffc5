"""Unknown fields of built-in objects, found with the pinned Kubernetes OpenAPI definitions.

A real API server decodes a built-in object into its Go type, so a field the type does not have
never reaches storage: with `fieldValidation=Strict` (kubectl's default) the request fails with
`strict decoding error: unknown field "spec.x"`, with `Warn` it succeeds with a warning, and with
`Ignore` the field is dropped silently. `prune_builtin` gives the object without those fields and
their paths; custom resources are pruned by their CRD schema instead (`crds`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jobset_infra.api.k8s_openapi import definition_for, definitions, ref_name

JsonObj = dict[str, Any]


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


@cache
def _resolve(ref: str) -> Any:
    return definitions().get(ref_name(ref), {})


def _prune(schema: Any, value: Any, path: str, dropped: list[str]) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = _resolve(schema["$ref"])
    if not isinstance(schema, dict) or schema.get("x-kubernetes-preserve-unknown-fields"):
        return value
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        if properties is not None:
            out = {}
            for key, item in value.items():
                if key in properties:
                    out[key] = _prune(properties[key], item, _child(path, key), dropped)
                else:
                    dropped.append(_child(path, key))
            return out
        if isinstance(extra, dict):
            return {k: _prune(extra, v, _child(path, k), dropped) for k, v in value.items()}
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_prune(schema["items"], v, _child(path, i), dropped) for i, v in enumerate(value)]
    return value


def prune_builtin(api_version: str, kind: str, obj: JsonObj) -> tuple[JsonObj, list[str]]:
    """(`obj` without the fields its kind does not have, their paths); unchanged for kinds
    the pinned definitions lack."""
    name = definition_for(api_version, kind)
    if name is None:
        return obj, []
    dropped: list[str] = []
    pruned = _prune(definitions()[name], obj, "", dropped)
    return (pruned, dropped) if dropped else (obj, [])
