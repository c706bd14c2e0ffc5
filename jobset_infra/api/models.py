"""The jobset.x-k8s.io/v1alpha2 API as pydantic v2 models: the one source of truth.

Field names are snake_case in Python and camelCase on the wire (`populate_by_name`), unknown
fields are errors, and `JobSet.model_validate(manifest).to_manifest() == manifest` for any manifest
without explicit nulls: serialisation keeps exactly the fields that were set, so model defaults
(upstream's effective defaults) never leak into a manifest that did not have them.

CRD-only facts (schema defaults, list types, CEL rules) ride along as `json_schema_extra` keys that
`crdgen` turns into the CustomResourceDefinition. The child Job template stays a plain dict but is
checked against the pinned Kubernetes OpenAPI (`k8s_openapi`), so `containerz:` or `image: 5` is
an error naming its path.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from jobset_infra.api import constants as c
from jobset_infra.api.errors import FieldError, child, show_value
from jobset_infra.api.k8s_openapi import (
    JOB_TEMPLATE_SPEC,
    PERSISTENT_VOLUME_CLAIM,
    validate_definition,
)

__all__ = [
    "Condition",
    "ConditionStatus",
    "Coordinator",
    "DependsOn",
    "DependsOnStatus",
    "FailurePolicy",
    "FailurePolicyAction",
    "FailurePolicyRule",
    "JobSet",
    "JobSetSpec",
    "JobSetStatus",
    "Network",
    "ObjectMeta",
    "Operator",
    "ReplicatedJob",
    "ReplicatedJobStatus",
    "RestartStrategy",
    "StartupPolicy",
    "StartupPolicyOrder",
    "SuccessPolicy",
    "VolumeClaimPolicy",
    "VolumeRetentionPolicy",
    "WhenDeleted",
    "field_errors",
]

# json_schema_extra keys understood by crdgen.
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

_IMMUTABLE = [{"rule": "self == oldSelf", "message": c.VALUE_IMMUTABLE_MESSAGE}]


def _map_list(*keys: str) -> dict[str, Any]:
    return {LIST_TYPE: "map", LIST_MAP_KEYS: list(keys)}


_ATOMIC: dict[str, Any] = {LIST_TYPE: "atomic"}


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
        use_enum_values=False,
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase, only fields that were set, no nulls."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude_none=True)


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
        alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=True
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


# --- spec ----------------------------------------------------------------------------------------


class DependsOn(_Model):
    """A replicated job that must reach a status before this one starts."""

    name: str
    """Name of an earlier replicated job."""
    status: DependsOnStatus
    """Ready: all its Jobs ready (or finished); Complete: all its Jobs succeeded."""


class Network(_Model):
    """Pod DNS for the JobSet (a headless Service)."""

    enable_dns_hostnames: bool | None = Field(
        default=None, alias="enableDNSHostnames", json_schema_extra={CRD_DEFAULT: True}
    )
    """Create a headless Service so pods resolve each other by hostname."""
    subdomain: str | None = Field(default=None, json_schema_extra={"maxLength": 63})
    """Headless Service name; defaults to the JobSet name at runtime."""
    publish_not_ready_addresses: bool | None = Field(
        default=None, json_schema_extra={CRD_DEFAULT: True}
    )
    """Publish DNS records of pods before they are ready (nil means true)."""


class SuccessPolicy(_Model):
    """When the JobSet counts as completed."""

    operator: Operator
    """All: every Job of the targets succeeded; Any: one Job of the targets succeeded."""
    target_replicated_jobs: Annotated[list[str], Field(json_schema_extra=_ATOMIC)] = Field(
        default_factory=list
    )
    """Replicated jobs the operator applies to; empty means all."""


class FailurePolicyRule(_Model):
    """A rule matching failed Jobs to an action; the first matching rule wins."""

    name: str = Field(
        default="",
        json_schema_extra={
            "maxLength": c.RULE_NAME_MAX_LENGTH,
            "pattern": c.RULE_NAME_PATTERN,
        },
    )
    """Rule name, unique in the policy; defaulted to failurePolicyRule<index>."""
    action: FailurePolicyAction
    """What to do when the rule matches."""
    on_job_failure_reasons: list[str] = Field(
        default_factory=list,
        json_schema_extra={"items": {"type": "string", "enum": list(c.VALID_JOB_FAILURE_REASONS)}},
    )
    """Job failure reasons the rule matches; empty matches any."""
    on_job_failure_message_patterns: list[str] = Field(default_factory=list)
    """RE2 patterns searched in the Job failure message; empty matches any."""
    target_replicated_jobs: Annotated[list[str], Field(json_schema_extra=_ATOMIC)] = Field(
        default_factory=list
    )
    """Replicated jobs whose failures the rule matches; empty means all."""


class FailurePolicy(_Model):
    """How the JobSet reacts to a failed child Job."""

    max_restarts: int = Field(default=0, ge=0, le=c.MAX_INT32)
    """Restarts (counting towards the max) before the JobSet fails."""
    restart_strategy: RestartStrategy = Field(
        default=RestartStrategy.RECREATE,
        json_schema_extra={CRD_DEFAULT: RestartStrategy.RECREATE.value},
    )
    """Recreate, BlockingRecreate or InPlaceRestart."""
    rules: list[FailurePolicyRule] = Field(default_factory=list)
    """Rules evaluated in order; no match means RestartJobSet."""


class StartupPolicy(_Model):
    """Deprecated: use DependsOn."""

    startup_policy_order: StartupPolicyOrder
    """AnyOrder or InOrder."""


class Coordinator(_Model):
    """The pod whose stable endpoint is published to every Job as a label."""

    replicated_job: str
    """Replicated job of the coordinator pod."""
    job_index: int = Field(default=0, ge=0, le=c.MAX_INT32)
    """Job index within that replicated job."""
    pod_index: int = Field(default=0, ge=0, le=c.MAX_INT32)
    """Pod completion index within that Job."""


class VolumeRetentionPolicy(_Model):
    """Retention of VolumeClaimPolicy PVCs."""

    when_deleted: WhenDeleted = Field(
        default=WhenDeleted.DELETE, json_schema_extra={CRD_DEFAULT: WhenDeleted.DELETE.value}
    )
    """Delete the PVCs with the JobSet, or keep them."""


class VolumeClaimPolicy(_Model):
    """PVCs created once per JobSet and mounted by the Jobs that reference them."""

    templates: Annotated[
        list[
            Annotated[
                dict[str, Any], Field(json_schema_extra={K8S_DEFINITION: PERSISTENT_VOLUME_CLAIM})
            ]
        ],
        Field(max_length=c.MAX_VOLUME_CLAIM_POLICIES, json_schema_extra=_ATOMIC),
    ] = Field(default_factory=list)
    """PersistentVolumeClaim templates; the PVC name is <template>-<jobset>."""
    retention_policy: VolumeRetentionPolicy | None = Field(
        default=None, json_schema_extra={CRD_DEFAULT: {}}
    )
    """Retention of the PVCs; defaulted to whenDeleted: Delete."""

    @field_validator("templates")
    @classmethod
    def _check_templates(cls, value: list[dict[str, Any]], info: ValidationInfo) -> Any:
        if _checks_templates(info):
            _raise_k8s_errors(
                [
                    e
                    for i, t in enumerate(value)
                    for e in validate_definition(t, PERSISTENT_VOLUME_CLAIM, f"[{i}]")
                ]
            )
        return value


class ReplicatedJob(_Model):
    """A group of identical child Jobs made from one template."""

    name: str = Field(min_length=1, json_schema_extra={"maxLength": c.DNS_LABEL_MAX_LENGTH})
    """Replicated job name; part of every child Job name."""
    group_name: str = Field(
        default=c.DEFAULT_GROUP_NAME,
        json_schema_extra={CRD_DEFAULT: c.DEFAULT_GROUP_NAME, "maxLength": c.DNS_LABEL_MAX_LENGTH},
    )
    """Group for the group-name/group-replicas/job-group-index labels."""
    template: Annotated[
        dict[str, Any],
        Field(
            json_schema_extra={
                K8S_DEFINITION: JOB_TEMPLATE_SPEC,
                EMBEDDED_DEFAULTS: {
                    "spec.completionMode": c.COMPLETION_MODE_INDEXED,
                    "spec.template.spec.restartPolicy": c.RESTART_POLICY_ON_FAILURE,
                },
            }
        ),
    ]
    """A batch/v1 JobTemplateSpec."""
    replicas: int = Field(default=1, ge=0, le=c.MAX_INT32, json_schema_extra={CRD_DEFAULT: 1})
    """Number of Jobs made from the template."""
    depends_on: Annotated[
        list[DependsOn] | None,
        Field(
            max_length=c.MAX_DEPENDS_ON,
            json_schema_extra={**_map_list("name"), VALIDATIONS: _IMMUTABLE},
        ),
    ] = None
    """Replicated jobs that must reach a status before this one starts."""

    @field_validator("template")
    @classmethod
    def _check_template(cls, value: dict[str, Any], info: ValidationInfo) -> Any:
        if _checks_templates(info):
            _raise_k8s_errors(validate_definition(value, JOB_TEMPLATE_SPEC))
        return value


class JobSetSpec(_Model):
    """Desired state of a JobSet."""

    model_config = ConfigDict(
        json_schema_extra={
            VALIDATIONS: [
                {
                    "rule": "!(has(self.startupPolicy) && "
                    "self.startupPolicy.startupPolicyOrder == 'InOrder' && "
                    "self.replicatedJobs.exists(x, has(x.dependsOn)))",
                    "message": c.STARTUP_POLICY_DEPENDS_ON_EXCLUSIVE_MESSAGE,
                }
            ]
        }
    )

    replicated_jobs: Annotated[list[ReplicatedJob], Field(json_schema_extra=_map_list("name"))] = (
        Field(default_factory=list)
    )
    """The replicated jobs; names are unique."""
    network: Annotated[
        Network | None, Field(json_schema_extra={VALIDATIONS: _IMMUTABLE, CRD_DEFAULT: {}})
    ] = None
    """Pod DNS settings."""
    success_policy: Annotated[
        SuccessPolicy | None,
        Field(
            json_schema_extra={
                VALIDATIONS: _IMMUTABLE,
                CRD_DEFAULT: {"operator": Operator.ALL.value},
            }
        ),
    ] = None
    """When the JobSet completes; defaulted to operator All."""
    failure_policy: Annotated[
        FailurePolicy | None, Field(json_schema_extra={VALIDATIONS: _IMMUTABLE})
    ] = None
    """How failed Jobs are handled; absent means fail on the first Job failure."""
    startup_policy: Annotated[
        StartupPolicy | None,
        Field(
            json_schema_extra={
                VALIDATIONS: _IMMUTABLE,
                CRD_DEFAULT: {"startupPolicyOrder": StartupPolicyOrder.ANY_ORDER.value},
            }
        ),
    ] = None
    """Deprecated startup ordering; defaulted to AnyOrder."""
    suspend: bool | None = None
    """Suspend the JobSet (its Jobs are suspended too)."""
    coordinator: Coordinator | None = None
    """Coordinator pod published as a label on every Job."""
    managed_by: str | None = Field(default=None, json_schema_extra={"maxLength": 63})
    """Controller that manages this JobSet; others leave it alone."""
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0, le=c.MAX_INT32)
    """Delete the JobSet this long after it finished."""
    volume_claim_policies: Annotated[
        list[VolumeClaimPolicy] | None,
        Field(
            max_length=c.MAX_VOLUME_CLAIM_POLICIES,
            json_schema_extra={**_ATOMIC, VALIDATIONS: _IMMUTABLE},
        ),
    ] = None
    """PVCs shared by the JobSet's Jobs."""


# --- status --------------------------------------------------------------------------------------


class Condition(_Model):
    """metav1.Condition."""

    type: str = Field(max_length=316)
    """Condition type, e.g. Completed."""
    status: ConditionStatus
    """True, False or Unknown."""
    observed_generation: int | None = Field(default=None, ge=0)
    """metadata.generation the condition was computed from."""
    last_transition_time: str
    """RFC 3339 time of the last status change."""
    reason: str = Field(max_length=1024, min_length=1)
    """CamelCase reason."""
    message: str = Field(max_length=32768)
    """Human-readable message."""


class ReplicatedJobStatus(_Model):
    """Job counts of one replicated job (Kueue reads these)."""

    name: str
    """Replicated job name."""
    ready: int
    """Jobs whose pods are ready (or succeeded)."""
    succeeded: int
    """Jobs that completed."""
    failed: int
    """Jobs that failed."""
    active: int
    """Jobs with active pods."""
    suspended: int
    """Jobs that are suspended."""
    job_restarts: Annotated[
        list[int] | None,
        Field(max_length=c.MAX_REPLICAS_WITH_RESTART_JOB, json_schema_extra=_ATOMIC),
    ] = None
    """Per-Job restart counts (RestartJob gate)."""
    job_restarts_count_towards_max: Annotated[
        list[int] | None,
        Field(max_length=c.MAX_REPLICAS_WITH_RESTART_JOB, json_schema_extra=_ATOMIC),
    ] = None
    """Per-Job restarts that count towards maxRestarts (RestartJob gate)."""


class JobSetStatus(_Model):
    """Observed state of a JobSet."""

    conditions: Annotated[list[Condition], Field(json_schema_extra=_map_list("type"))] = Field(
        default_factory=list
    )
    """Completed, Failed, Suspended, RestartingJobSet, StartupPolicy* conditions."""
    restarts: int = 0
    """Global restarts so far (always serialised, as upstream)."""
    restarts_count_towards_max: int | None = None
    """Restarts that count towards failurePolicy.maxRestarts."""
    terminal_state: str | None = None
    """Completed or Failed once finished."""
    replicated_jobs_status: Annotated[
        list[ReplicatedJobStatus], Field(json_schema_extra=_map_list("name"))
    ] = Field(default_factory=list)
    """Per replicated job counts."""
    previous_in_place_restart_attempt: int | None = Field(default=None, ge=0)
    """InPlaceRestart: attempt lagging pods must restart from."""
    current_in_place_restart_attempt: int | None = Field(default=None, ge=0)
    """InPlaceRestart: attempt all pods agreed on (barrier lifted)."""

    @model_validator(mode="after")
    def _always_restarts(self) -> JobSetStatus:
        # Upstream's `restarts` has no omitempty: it is on the wire even when 0.
        self.__pydantic_fields_set__.add("restarts")
        return self


class JobSet(_Model):
    """A JobSet: replicated groups of Jobs managed as one unit."""

    api_version: str = c.API_VERSION
    kind: str = c.KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: JobSetSpec = Field(default_factory=JobSetSpec)
    status: JobSetStatus | None = None

    @field_validator("api_version", "kind")
    @classmethod
    def _check_type_meta(cls, value: str, info: ValidationInfo) -> str:
        expected = c.API_VERSION if info.field_name == "api_version" else c.KIND
        if value != expected:
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}", {"expected": f'"{expected}"'}
            )
        return value

    @model_validator(mode="after")
    def _always_type_meta(self) -> JobSet:
        self.__pydantic_fields_set__.update({"api_version", "kind", "metadata", "spec"})
        return self

    def to_manifest(self) -> dict[str, Any]:
        """The manifest dict (camelCase, no nulls), inverse of `JobSet.model_validate`."""
        return self.to_dict()

    @property
    def name(self) -> str:
        """metadata.name, or "" when only generateName is set."""
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        """metadata.namespace, or "" when unset."""
        return self.metadata.namespace or ""


# --- helpers -------------------------------------------------------------------------------------


def _checks_templates(info: ValidationInfo) -> bool:
    context = info.context
    return not (isinstance(context, dict) and context.get(CHECK_TEMPLATES) is False)


def _raise_k8s_errors(errors: list[FieldError]) -> None:
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
