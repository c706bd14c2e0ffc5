"""The complete verdict on a JobSet manifest, as a cluster running our CRD would give it, and more.

`check_jobset(manifest, old=None)` runs, in the apiserver's order:
1. the generated CRD schema (prune -> structural defaults -> schema and CEL validation), reporting
   unknown fields as errors (kubectl's default `--validate=strict`);
2. the pydantic models (types, the Job template against the pinned Kubernetes OpenAPI);
3. `default` + the Python rules of the registry (`rules.webhook_problems`): upstream's webhook
   rules the CRD cannot express. Each rule is declared once (as CEL in the CRD or as a Python
   check), so no problem is found twice. Pure apart from compiling the CRD schema (cached).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from jobset_infra.api import constants as c
from jobset_infra.api.cluster_bounds import size_errors
from jobset_infra.api.crd.generate import jobset_crd_schema
from jobset_infra.api.defaults import default
from jobset_infra.api.errors import FieldError
from jobset_infra.api.features import FeatureGates
from jobset_infra.api.job_template import child_job_errors
from jobset_infra.api.models import JobSet, field_errors
from jobset_infra.api.names import NAME_REQUIRED_MESSAGE, dns1123_subdomain
from jobset_infra.api.object_meta import metadata_errors
from jobset_infra.api.rules import Context, webhook_problems
from jobset_infra.api.validation import check_name, with_generated_name

__all__ = ["CheckResult", "check_jobset", "jobset_crd_schema"]


@dataclass(frozen=True)
class CheckResult:
    """Problems of one manifest and, when it parses, the defaulted JobSet."""

    errors: list[FieldError] = field(default_factory=list)
    jobset: JobSet | None = None

    @property
    def ok(self) -> bool:
        """True when there is no problem."""
        return not self.errors


def check_jobset(
    manifest: object,
    old: object | None = None,
    *,
    feature_gates: FeatureGates | None = None,
    existing_pvcs: Mapping[str, Mapping[str, Any]] | None = None,
) -> CheckResult:
    """Every problem of a JobSet manifest (an update of `old` when given)."""
    if not isinstance(manifest, dict):
        return CheckResult([FieldError("", "a JobSet manifest must be a mapping (YAML object)")])
    type_errors = _type_meta(manifest) or _object_meta(manifest, creating=old is None)
    if type_errors:
        return CheckResult(type_errors)
    errors = _Errors()
    errors.extend(metadata_errors(manifest.get("metadata"), builtin=False))
    gates = feature_gates or FeatureGates()
    schema = jobset_crd_schema(gates)
    admitted_old = schema.admit(old)[0] if isinstance(old, dict) else None
    for path in schema.pruned_fields(manifest):
        errors.add(FieldError(path, f'unknown field "{path.rsplit(".", 1)[-1]}"'))
    errors.extend(schema.admit(with_generated_name(manifest), admitted_old)[1])
    try:
        js = JobSet.model_validate(manifest)
    except ValidationError as exc:
        errors.extend_new_paths(field_errors(exc))
        return CheckResult(errors.items)
    try:
        old_js = JobSet.model_validate(old, context={"check_templates": False}) if old else None
    except ValidationError as exc:
        errors.extend(
            [
                FieldError("", f"the old object is not a valid JobSet: {e}")
                for e in field_errors(exc)
            ]
        )
        return CheckResult(errors.items)
    defaulted = default(js)
    old_defaulted = default(old_js) if old_js is not None else None
    context = Context(check_name(defaulted), gates, existing_pvcs or {}, old_defaulted)
    errors.extend(webhook_problems(defaulted, context))
    errors.extend(size_errors(defaulted))
    errors.extend(child_job_errors(manifest))
    return CheckResult(errors.items, defaulted)


def _type_meta(manifest: Mapping[str, Any]) -> list[FieldError]:
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if api_version == c.API_VERSION and kind == c.KIND:
        return []
    return [
        FieldError(
            "apiVersion" if api_version != c.API_VERSION else "kind",
            f"not a JobSet: want apiVersion: {c.API_VERSION} and kind: {c.KIND}, "
            f"got {api_version!r} / {kind!r}",
        )
    ]


def _object_meta(manifest: Mapping[str, Any], *, creating: bool) -> list[FieldError]:
    """ObjectMeta as the API server checks it before the schema: a string name that is a DNS-1123
    subdomain, and on create a name or a generateName."""
    meta = manifest.get("metadata")
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [FieldError("metadata", f"Invalid value: {meta!r}: must be an object")]
    for key in ("name", "generateName"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            return [FieldError(f"metadata.{key}", f"Invalid value: {value!r}: must be a string")]
    name = meta.get("name")
    if not name:
        missing = creating and not meta.get("generateName")
        return [FieldError("metadata.name", NAME_REQUIRED_MESSAGE)] if missing else []
    return [FieldError("metadata.name", f'Invalid value: "{name}": {problem}')
            for problem in dns1123_subdomain(name)]


class _Errors:
    """Ordered, de-duplicated errors."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []
        self._seen: set[FieldError] = set()
        self._paths: set[str] = set()

    def add(self, error: FieldError) -> None:
        if error not in self._seen:
            self._seen.add(error)
            self._paths.add(error.path)
            self.items.append(error)

    def extend(self, errors: list[FieldError]) -> None:
        for error in errors:
            self.add(error)

    def extend_new_paths(self, errors: list[FieldError]) -> None:
        """Add errors at paths (or below paths) not reported yet: one wording per problem."""
        for error in errors:
            if not any(_under(error.path, p) for p in self._paths):
                self.add(error)




def _under(path: str, parent: str) -> bool:
    if path == parent:
        return True
    return bool(parent) and path.startswith((f"{parent}.", f"{parent}["))
