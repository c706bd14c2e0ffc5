"""Kueue's own CRDs: Kueue objects checked as the API server would admit them.

The schemas (`kueue_crds.json`) are the openAPIV3Schema of every Kueue CRD but Workload, taken
from the sigs.k8s.io/kueue module tools/kueue pins (`config/components/crd/bases`, what Kueue's
chart installs) by `tools/kueue_crds.py`; CI fails when the file and the module differ. So types,
enums, list limits, required fields and the CRDs' CEL rules are Kueue's, for every served version
(v1beta1 and v1beta2). As with `kubectl apply` (strict field validation), a field the schema
does not know is an error, so a misspelt or v1beta1-only field (`cohort` in v1beta2) fails.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.crd.schema import CrdSchema
from jobset_infra.api.errors import FieldError
from jobset_infra.api.names import dns1123_subdomain
from jobset_infra.api.object_meta import metadata_errors

__all__ = ["is_kueue_object", "kueue_errors", "kueue_field_errors", "kueue_kinds"]


@functools.cache
def _crds() -> Mapping[str, Any]:
    text = resources.files("jobset_infra.api").joinpath("kueue_crds.json").read_text()
    data: Mapping[str, Any] = json.loads(text)
    return data


def kueue_kinds() -> dict[str, tuple[str, ...]]:
    """Kind -> the versions Kueue serves it at (from its CRDs)."""
    return {kind: tuple(entry["versions"]) for kind, entry in _crds()["kinds"].items()}


def is_kueue_object(manifest: Mapping[str, Any]) -> bool:
    """Whether `manifest` names Kueue's API group (`kueue.x-k8s.io/<version>`)."""
    return str(manifest.get("apiVersion") or "").partition("/")[0] == c.KUEUE_GROUP


@functools.cache
def _schema(kind: str, version: str) -> CrdSchema:
    return CrdSchema(_crds()["kinds"][kind]["versions"][version])


def kueue_field_errors(manifest: Mapping[str, Any]) -> list[FieldError]:
    """Every reason the API server would refuse to create `manifest` (a Kueue object)."""
    group, _, version = str(manifest.get("apiVersion") or "").partition("/")
    kind = str(manifest.get("kind") or "")
    entry = _crds()["kinds"].get(kind)
    if group != c.KUEUE_GROUP or entry is None:
        known = ", ".join(sorted(_crds()["kinds"]))
        return [FieldError("kind", f"{kind!r} is not a Kueue kind this check knows (Kueue "
                                   f"{_crds()['version']}: {known})")]
    if version not in entry["versions"]:
        served = ", ".join(f"{group}/{v}" for v in entry["versions"])
        return [FieldError("apiVersion", f"Kueue serves {kind} as {served}, not {version!r}")]
    schema = _schema(kind, version)
    unknown = [FieldError(path, f"unknown field \"{path}\"")
               for path in schema.pruned_fields(dict(manifest))]
    _, errors = schema.admit(dict(manifest))
    return [*_meta_errors(manifest, namespaced=entry["scope"] == "Namespaced"), *unknown,
            *errors]


def _meta_errors(manifest: Mapping[str, Any], *, namespaced: bool) -> list[FieldError]:
    meta = manifest.get("metadata")
    if not isinstance(meta, Mapping):
        return [FieldError("metadata", "Required value")]
    errors: list[FieldError] = []
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        errors.append(FieldError("metadata.name", "Required value: name or generateName is "
                                                  "required"))
    else:
        errors += [FieldError("metadata.name", f"Invalid value: {name!r}: {problem}")
                   for problem in dns1123_subdomain(name)]
    if not namespaced and meta.get("namespace"):
        errors.append(FieldError("metadata.namespace", "Forbidden: not allowed on this type "
                                                       "(cluster-scoped)"))
    return errors + metadata_errors(meta, builtin=False)


def kueue_errors(manifest: Mapping[str, Any]) -> list[str]:
    """`kueue_field_errors` as `path: message` lines."""
    return [str(error) for error in kueue_field_errors(manifest)]
