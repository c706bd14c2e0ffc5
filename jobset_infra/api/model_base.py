"""Shared parts of the API models: the base class, schema-extra keys, enums, ObjectMeta, errors.

Everything here is re-exported by `jobset_infra.api.models`; import from there.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from jobset_infra.api import constants as c
from jobset_infra.api.errors import FieldError, child, show_value

# json_schema_extra keys understood by crd.generate.
CRD_DEFAULT = "x-crd-default"  # structural default in the CRD (the model default may differ)
K8S_DEFINITION = "x-k8s-definition"  # inline this Kubernetes OpenAPI definition
EMBEDDED_DEFAULTS = (
    "x-crd-embedded-defaults"  # dotted path inside the inlined definition -> default
)
LIST_TYPE = "x-kubernetes-list-type"
LIST_MAP_KEYS = "x-kubernetes-list-map-keys"
VALIDATIONS = "x-kubernetes-validations"
# Validation context key: pass {"check_templates": False} to skip the OpenAPI template check
# (e.g. for objects read back from an API server that already validated them).
CHECK_TEMPLATES = "check_templates"

IMMUTABLE = [{"rule": "self == oldSelf", "message": c.VALUE_IMMUTABLE_MESSAGE}]


def map_list(*keys: str) -> dict[str, Any]:
    """Schema extras of a list-type map keyed by `keys`."""
    return {LIST_TYPE: "map", LIST_MAP_KEYS: list(keys)}


ATOMIC: dict[str, Any] = {LIST_TYPE: "atomic"}


def empty_list() -> list[Any]:
    """The list fields' `default_factory`. `list` itself would do, but pydantic asks each
    factory's signature whether it takes the validated data, and a builtin's signature is
    parsed from its text with the tokenizer, whose regular expressions are then compiled:
    0.01 s of every process that loads the models (`validate`, the controller; 2026-12-07)."""
    return []


class ApiModel(BaseModel):
    """Base of the API models: camelCase wire names, unknown fields rejected, frozen."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        # The docstring under a field is its CRD description, read by the CRD generator
        # (api/field_docs.py): pydantic's own reading costs every import of the models 0.04 s.
        use_attribute_docstrings=False,
        use_enum_values=False,
        # Types as the API server checks them: "3" is not an int, "yes" is not a bool.
        strict=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase, only fields that were set, no nulls."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)


# Enum fields take their wire strings even in strict models.
LAX: Any = Field(strict=False)

# --- enums ---------------------------------------------------------------------------------------


class Operator(StrEnum):
    """SuccessPolicy operator."""

    ALL = "All"
    ANY = "Any"


class RestartStrategy(StrEnum):
    """How a JobSet restart recreates its Jobs."""

    RECREATE = "Recreate"
    BLOCKING_RECREATE = "BlockingRecreate"
    IN_PLACE_RESTART = "InPlaceRestart"


class FailurePolicyAction(StrEnum):
    """What a matching failure-policy rule does."""

    FAIL_JOBSET = "FailJobSet"
    RESTART_JOBSET = "RestartJobSet"
    RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS = "RestartJobSetAndIgnoreMaxRestarts"
    RESTART_JOB = "RestartJob"
    RESTART_JOB_AND_IGNORE_MAX_RESTARTS = "RestartJobAndIgnoreMaxRestarts"


class StartupPolicyOrder(StrEnum):
    """Deprecated startup ordering (use DependsOn)."""

    ANY_ORDER = "AnyOrder"
    IN_ORDER = "InOrder"


class DependsOnStatus(StrEnum):
    """The state of a dependency that releases a replicated job."""

    READY = "Ready"
    COMPLETE = "Complete"


class WhenDeleted(StrEnum):
    """What happens to a VolumeClaimPolicy PVC when its JobSet is deleted."""

    DELETE = "Delete"
    RETAIN = "Retain"


class ConditionStatus(StrEnum):
    """metav1.ConditionStatus."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


# --- metadata ------------------------------------------------------------------------------------


class ObjectMeta(BaseModel):
    """metav1.ObjectMeta; unknown keys are kept (the API server owns this shape)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=True, strict=True
    )

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[dict[str, Any]] | None = None
    finalizers: list[str] | None = None
    managed_fields: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase, no nulls."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)


# --- errors -------------------------------------------------------------------------------------


def checks_templates(info: ValidationInfo) -> bool:
    """False when the validation context asks to skip the OpenAPI template check."""
    context = info.context
    return not (isinstance(context, dict) and context.get(CHECK_TEMPLATES) is False)


def raise_k8s_errors(errors: list[FieldError]) -> None:
    """Raise the OpenAPI problems of a template as one pydantic error (expanded by field_errors)."""
    if errors:
        summary = "; ".join(str(e) for e in errors)
        raise PydanticCustomError(
            "k8s_schema",
            "does not match the Kubernetes schema: {summary}",
            {"summary": summary, "errors": [(e.path, e.message) for e in errors]},
        )


def field_errors(exc: ValidationError, prefix: str = "") -> list[FieldError]:
    """A pydantic ValidationError of these models as Kubernetes-style field errors."""
    out: list[FieldError] = []
    for error in exc.errors(include_url=False):
        path = prefix
        for part in error["loc"]:
            path = child(path, part)
        ctx = error.get("ctx") or {}
        if error["type"] == "k8s_schema" and "errors" in ctx:
            for sub_path, message in ctx["errors"]:
                out.append(FieldError(_join(path, sub_path), message))
        else:
            out.append(FieldError(path, _pydantic_message(error)))
    return out


def _join(path: str, sub_path: str) -> str:
    if not sub_path:
        return path
    return path + sub_path if sub_path.startswith("[") else child(path, sub_path)


def _pydantic_message(error: Any) -> str:
    kind = error["type"]
    if kind == "missing":
        return "Required value"
    if kind == "extra_forbidden":
        return f'unknown field "{error["loc"][-1]}"' if error["loc"] else "unknown field"
    if kind in ("literal_error", "enum"):
        expected = str(error.get("ctx", {}).get("expected", ""))
        expected = expected.replace("'", '"').replace(" or ", ", ")
        return f"Unsupported value: {_quote(error.get('input'))}: supported values: {expected}"
    return f"Invalid value: {_quote(error.get('input'))}: {error['msg']}"


def _quote(value: object) -> str:
    return show_value(value)
