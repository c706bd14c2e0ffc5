"""The Kubernetes OpenAPI definitions of one pinned Kubernetes minor, as JSON schemas.

The definitions are the ones `kubernetes-validate` ships (strict flavour: unknown fields are
errors). They type the child Job template of a JobSet, go into the generated CRD, and check any
rendered built-in object (`validate_builtin`). Loading is cached.

The definitions use nine JSON Schema keywords (`$ref` into `#/$defs/`, `type`, `enum`,
`format`, `oneOf`, `properties`, `required`, `additionalProperties`, `items`), and
`_violations` evaluates exactly those, as jsonschema's Draft 2020-12 validator does (the same
type predicates; `format` checks the int32 and int64 ranges only): importing jsonschema and
building its validator over 1.8 MB of definitions was a fifth of `jobset-infra validate`'s
time. `tests/api/test_k8s_openapi_validator.py` holds the two to the same verdicts.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import json
import numbers
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jobset_infra.api.errors import FieldError, child, show_value

# The Kubernetes minor whose API the generated CRD embeds and rendered objects are checked against.
K8S_VERSION: Final = "1.37"
# Definition name of a Job template (ReplicatedJob.template).
JOB_TEMPLATE_SPEC: Final = "io.k8s.api.batch.v1.JobTemplateSpec"
JOB_SPEC: Final = "io.k8s.api.batch.v1.JobSpec"
# Definition name of a PersistentVolumeClaim (VolumeClaimPolicy.templates[]).
PERSISTENT_VOLUME_CLAIM: Final = "io.k8s.api.core.v1.PersistentVolumeClaim"
# Definition name of ObjectMeta.
OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

_SCHEMA_DIR: Final = f"v{K8S_VERSION}.0-local-strict"
_REF_PREFIX: Final = "#/$defs/"
_INT_RANGES: Final = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class UnknownDefinitionError(KeyError):
    """A definition name that the pinned Kubernetes version does not have."""


@functools.cache
def definitions() -> Mapping[str, Any]:
    """All definitions of the pinned version, by name (`io.k8s.api.core.v1.PodSpec`, ...)."""
    text = definitions_file().read_text(encoding="utf-8")
    defs: dict[str, Any] = json.loads(text)["$defs"]
    return defs


def definitions_file() -> Path:
    """The file `definitions()` reads (kubernetes-validate's, for the pinned version). Found
    without importing the package, whose `__init__` loads jsonschema, referencing and
    packaging for its own validator (0.1 s)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("kubernetes_validate is not installed (a base dependency)")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "kubernetes-json-schema" / _SCHEMA_DIR / "_definitions.json"


def definition(name: str) -> dict[str, Any]:
    """A deep copy of one definition, its `$ref`s still pointing into `#/$defs/`."""
    try:
        return copy.deepcopy(definitions()[name])
    except KeyError:
        raise UnknownDefinitionError(
            f"no definition {name!r} in Kubernetes {K8S_VERSION} OpenAPI"
        ) from None


def schema(name: str) -> dict[str, Any]:
    """A self-contained JSON schema (draft 2020-12) for one definition, refs resolvable."""
    definition(name)  # fail early on a bad name
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": _REF_PREFIX + name,
        "$defs": definitions(),
    }


def ref_name(ref: str) -> str:
    """`#/$defs/io.k8s.api.core.v1.PodSpec` -> `io.k8s.api.core.v1.PodSpec`."""
    return ref.removeprefix(_REF_PREFIX)


@functools.cache
def _gvk_index() -> Mapping[tuple[str, str], str]:
    index: dict[tuple[str, str], str] = {}
    for name, spec in definitions().items():
        for gvk in spec.get("x-kubernetes-group-version-kind", []):
            group, version = gvk.get("group", ""), gvk["version"]
            api_version = f"{group}/{version}" if group else version
            index.setdefault((api_version, gvk["kind"]), name)
    return index


def definition_for(api_version: str, kind: str) -> str | None:
    """The definition name of a built-in kind, or None when the pinned version lacks it."""
    return _gvk_index().get((api_version, kind))


def validate_definition(obj: object, name: str, path: str = "") -> list[FieldError]:
    """Problems of `obj` against definition `name`; paths are prefixed with `path`."""
    if name not in definitions():
        definition(name)  # raises UnknownDefinitionError, naming it
    node = {"$ref": _REF_PREFIX + name}
    return sorted({e for v in _violations(obj, node, ()) for e in _field_errors(v, path)})


@dataclass(frozen=True)
class Violation:
    """One keyword a value breaks, in jsonschema's terms (`ValidationError`'s attributes of the
    same names), so both can be worded by `_field_errors`."""

    absolute_path: tuple[str | int, ...]
    validator: str
    """The keyword: `type`, `enum`, `format`, `oneOf`, `required` or `additionalProperties`."""
    validator_value: Any
    instance: Any
    schema: Mapping[str, Any]


def _violations(value: object, node: Mapping[str, Any], at: tuple[str | int, ...]
                ) -> Iterator[Violation]:
    """Every keyword of `node` (and what it refers to) that `value` breaks."""
    ref = node.get("$ref")
    if ref is not None:
        yield from _violations(value, definitions()[ref_name(ref)], at)
    kinds = node.get("type")
    if kinds is not None and not any(_is_type(value, kind) for kind in _as_list(kinds)):
        yield Violation(at, "type", kinds, value, node)
    options = node.get("enum")
    if options is not None and not any(option == value for option in options):
        yield Violation(at, "enum", options, value, node)
    fmt = node.get("format")
    if fmt in _INT_RANGES and not _in_int_range(fmt, value):
        yield Violation(at, "format", fmt, value, node)
    one_of = node.get("oneOf")
    if one_of is not None and sum(_is_valid(value, option, at) for option in one_of) != 1:
        yield Violation(at, "oneOf", one_of, value, node)
    if isinstance(value, dict):
        yield from _object_violations(value, node, at)
    elif isinstance(value, list) and "items" in node:
        for index, item in enumerate(value):
            yield from _violations(item, node["items"], (*at, index))


def _object_violations(value: dict[str, Any], node: Mapping[str, Any],
                       at: tuple[str | int, ...]) -> Iterator[Violation]:
    if any(key not in value for key in node.get("required", ())):
        yield Violation(at, "required", node["required"], value, node)
    properties = node.get("properties", {})
    for key, schema in properties.items():
        if key in value:
            yield from _violations(value[key], schema, (*at, key))
    extras = [key for key in value if key not in properties]
    additional = node.get("additionalProperties", True)
    if isinstance(additional, dict):
        for key in extras:
            yield from _violations(value[key], additional, (*at, key))
    elif additional is False and extras:
        yield Violation(at, "additionalProperties", False, value, node)


def _is_valid(value: object, node: Mapping[str, Any], at: tuple[str | int, ...]) -> bool:
    return next(_violations(value, node, at), None) is None


def _is_type(value: object, kind: str) -> bool:
    """JSON Schema's types as jsonschema's Draft 2020-12 checker reads Python values: a bool
    is no number, and a float with an integral value is an integer."""
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if kind == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    return kind == "number" and isinstance(value, numbers.Number)


def _in_int_range(fmt: str, value: object) -> bool:
    if not isinstance(value, int) or isinstance(value, bool):
        return True
    low, high = _INT_RANGES[fmt]
    return low <= value <= high


def validate_builtin(manifest: Mapping[str, Any], path: str = "") -> list[FieldError]:
    """Problems of a built-in Kubernetes object (any kind the pinned version serves)."""
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if not isinstance(api_version, str) or not api_version:
        return [FieldError(child(path, "apiVersion"), "Required value")]
    if not isinstance(kind, str) or not kind:
        return [FieldError(child(path, "kind"), "Required value")]
    name = definition_for(api_version, kind)
    if name is None:
        return [
            FieldError(
                child(path, "kind"),
                f"no kind {kind!r} in {api_version!r} in Kubernetes {K8S_VERSION}",
            )
        ]
    obj = dict(manifest)
    spec = definitions()[name].get("properties", {}).get("spec")
    if "spec" not in obj and isinstance(spec, dict) and "$ref" in spec:
        # The server decodes into the Go type, where a missing spec is an empty one that its
        # validation then checks: a Pod without spec is "spec.containers: Required value".
        obj["spec"] = {}
    return validate_definition(obj, name, path)


def _field_errors(error: Violation, base: str) -> Iterator[FieldError]:
    path = base
    for part in error.absolute_path:
        path = child(path, part)
    kind, instance = error.validator, error.instance
    expected: Any = error.validator_value
    schema_here: Any = error.schema
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = schema_here.get("properties", {}) if isinstance(schema_here, dict) else {}
        for key in sorted(k for k in instance if k not in known):
            yield FieldError(child(path, key), f'unknown field "{key}"')
    elif kind == "required" and isinstance(instance, dict):
        for key in expected:
            if key not in instance:
                yield FieldError(child(path, key), "Required value")
    elif kind == "type":
        wanted = " or ".join(t for t in _as_list(expected) if t != "null")
        yield FieldError(path, f"Invalid value: {show_value(instance)}: must be of type {wanted}")
    elif kind == "oneOf":
        wanted = " or ".join(_one_of_types(expected))
        yield FieldError(path, f"Invalid value: {show_value(instance)}: must be {wanted}")
    elif kind == "enum":
        allowed = ", ".join(json.dumps(v) for v in expected if v is not None)
        yield FieldError(
            path, f"Unsupported value: {show_value(instance)}: supported values: {allowed}"
        )
    elif kind == "format":
        yield FieldError(path, f"Invalid value: {show_value(instance)}: must be a valid {expected}")


def _as_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _one_of_types(options: object) -> list[str]:
    names: list[str] = []
    for option in options if isinstance(options, list) else []:
        for t in _as_list(option.get("type", "value")):
            if t != "null" and f"a{'n' if t[0] in 'aeiou' else ''} {t}" not in names:
                names.append(f"a{'n' if t[0] in 'aeiou' else ''} {t}")
    return names or ["valid"]
