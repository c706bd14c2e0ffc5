"""The Kubernetes OpenAPI definitions of one pinned Kubernetes minor, as JSON schemas.

The definitions are the ones `kubernetes-validate` ships (strict flavour: unknown fields are
errors). They type the child Job template of a JobSet, go into the generated CRD, and check any
rendered built-in object (`validate_builtin`). Loading and validator construction are cached.
"""

from __future__ import annotations

import copy
import functools
import importlib.resources
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final, cast

import jsonschema
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

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
    """The file `definitions()` reads (kubernetes-validate's, for the pinned version)."""
    root = importlib.resources.files("kubernetes_validate").joinpath("kubernetes-json-schema")
    return Path(str(root.joinpath(_SCHEMA_DIR, "_definitions.json")))


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


def _check_int_format(fmt: str, value: object) -> bool:
    if not isinstance(value, int) or isinstance(value, bool):
        return True
    low, high = _INT_RANGES[fmt]
    return low <= value <= high


@functools.cache
def _format_checker() -> jsonschema.FormatChecker:
    checker = jsonschema.FormatChecker(formats=())
    for fmt in _INT_RANGES:
        checker.checks(fmt)(functools.partial(_check_int_format, fmt))
    return checker


@functools.cache
def validator(name: str) -> Validator:
    """A cached validator for one definition."""
    cls = jsonschema.validators.validator_for(schema(name))
    return cls(schema(name), format_checker=_format_checker())


def validate_definition(obj: object, name: str, path: str = "") -> list[FieldError]:
    """Problems of `obj` against definition `name`; paths are prefixed with `path`."""
    errors: list[FieldError] = []
    for error in validator(name).iter_errors(cast(Any, obj)):
        errors.extend(_field_errors(error, path))
    return sorted(set(errors))


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


def _field_errors(error: ValidationError, base: str) -> Iterator[FieldError]:
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
    else:
        yield FieldError(path, error.message)


def _as_list(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _one_of_types(options: object) -> list[str]:
    names: list[str] = []
    for option in options if isinstance(options, list) else []:
        for t in _as_list(option.get("type", "value")):
            if t != "null" and f"a{'n' if t[0] in 'aeiou' else ''} {t}" not in names:
                names.append(f"a{'n' if t[0] in 'aeiou' else ''} {t}")
    return names or ["valid"]
