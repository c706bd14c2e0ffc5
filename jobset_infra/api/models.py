"""The jobset.x-k8s.io/v1alpha2 API as pydantic v2 models: the one source of truth.

Field names are snake_case in Python and camelCase on the wire (`populate_by_name`), unknown
fields are errors, and `JobSet.model_validate(manifest).to_manifest() == manifest` for any manifest
without explicit nulls: serialisation keeps exactly the fields that were set, so model defaults
(upstream's effective defaults) never leak into a manifest that did not have them.

CRD-only facts (schema defaults, list types, CEL rules) ride along as `json_schema_extra` keys that
`crd.generate` turns into the CustomResourceDefinition. The child Job template stays a plain
dict but is checked against the pinned Kubernetes OpenAPI (`k8s_openapi`), so `containerz:` or
`image: 5` is an error naming its path.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from jobset_infra.api import constants as c
from jobset_infra.api.k8s_openapi import (
    JOB_TEMPLATE_SPEC,
    PERSISTENT_VOLUME_CLAIM,
    validate_definition,
)
from jobset_infra.api.model_base import (
    ATOMIC,
    CHECK_TEMPLATES,
    CRD_DEFAULT,
    EMBEDDED_DEFAULTS,
    IMMUTABLE,
    K8S_DEFINITION,
    LAX,
    LIST_MAP_KEYS,
    LIST_TYPE,
    VALIDATIONS,
    ApiModel,
    ConditionStatus,
    DependsOnStatus,
    FailurePolicyAction,
    ObjectMeta,
    Operator,
    RestartStrategy,
    StartupPolicyOrder,
    WhenDeleted,
    checks_templates,
    empty_list,
    field_errors,
    map_list,
    raise_k8s_errors,
)
from jobset_infra.api.names import DNS_LABEL_MAX_LENGTH
from jobset_infra.api.status import Condition, JobSetStatus, ReplicatedJobStatus

__all__ = [
    "ATOMIC",
    "CHECK_TEMPLATES",
    "CRD_DEFAULT",
    "EMBEDDED_DEFAULTS",
    "IMMUTABLE",
    "K8S_DEFINITION",
    "LIST_MAP_KEYS",
    "LIST_TYPE",
    "VALIDATIONS",
    "ApiModel",
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


# --- spec ----------------------------------------------------------------------------------------


class DependsOn(ApiModel):
    """A replicated job that must reach a status before this one starts."""

    name: str
    """Name of an earlier replicated job."""
    status: Annotated[DependsOnStatus, LAX]
    """Ready: all its Jobs ready (or finished); Complete: all its Jobs succeeded."""


class Network(ApiModel):
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


class SuccessPolicy(ApiModel):
    """When the JobSet counts as completed."""

    operator: Annotated[Operator, LAX]
    """All: every Job of the targets succeeded; Any: one Job of the targets succeeded."""
    target_replicated_jobs: Annotated[list[str], Field(json_schema_extra=ATOMIC)] = Field(
        default_factory=empty_list
    )
    """Replicated jobs the operator applies to; empty means all."""


class FailurePolicyRule(ApiModel):
    """A rule matching failed Jobs to an action; the first matching rule wins."""

    name: str = Field(
        default="",
        json_schema_extra={
            "maxLength": c.RULE_NAME_MAX_LENGTH,
            "pattern": c.RULE_NAME_OR_UNSET_PATTERN,
        },
    )
    """Rule name, unique in the policy; defaulted to failurePolicyRule<index>."""
    action: Annotated[FailurePolicyAction, LAX]
    """What to do when the rule matches."""
    on_job_failure_reasons: list[str] = Field(
        default_factory=empty_list,
        json_schema_extra={"items": {"type": "string", "enum": list(c.VALID_JOB_FAILURE_REASONS)}},
    )
    """Job failure reasons the rule matches; empty matches any."""
    on_job_failure_message_patterns: list[str] = Field(default_factory=empty_list)
    """RE2 patterns searched in the Job failure message; empty matches any."""
    target_replicated_jobs: Annotated[list[str], Field(json_schema_extra=ATOMIC)] = Field(
        default_factory=empty_list
    )
    """Replicated jobs whose failures the rule matches; empty means all."""


class FailurePolicy(ApiModel):
    """How the JobSet reacts to a failed child Job."""

    max_restarts: int = Field(default=0, ge=0, le=c.MAX_INT32)
    """Restarts (counting towards the max) before the JobSet fails."""
    restart_strategy: Annotated[RestartStrategy, LAX] = Field(
        default=RestartStrategy.RECREATE,
        json_schema_extra={CRD_DEFAULT: RestartStrategy.RECREATE.value},
    )
    """Recreate, BlockingRecreate or InPlaceRestart."""
    rules: list[FailurePolicyRule] = Field(default_factory=empty_list)
    """Rules evaluated in order; no match means RestartJobSet."""


class StartupPolicy(ApiModel):
    """Deprecated: use DependsOn."""

    startup_policy_order: Annotated[StartupPolicyOrder, LAX]
    """AnyOrder or InOrder."""


class Coordinator(ApiModel):
    """The pod whose stable endpoint is published to every Job as a label."""

    # A replicatedJob name, so a DNS label; the bound also keeps the CEL rules that compare it
    # with every replicatedJob's name within the real API server's cost budget.
    replicated_job: str = Field(json_schema_extra={"maxLength": DNS_LABEL_MAX_LENGTH})
    """Replicated job of the coordinator pod."""
    job_index: int = Field(default=0, ge=0, le=c.MAX_INT32)
    """Job index within that replicated job."""
    pod_index: int = Field(default=0, ge=0, le=c.MAX_INT32)
    """Pod completion index within that Job."""


class VolumeRetentionPolicy(ApiModel):
    """Retention of VolumeClaimPolicy PVCs."""

    when_deleted: Annotated[WhenDeleted, LAX] = Field(
        default=WhenDeleted.DELETE, json_schema_extra={CRD_DEFAULT: WhenDeleted.DELETE.value}
    )
    """Delete the PVCs with the JobSet, or keep them."""


class VolumeClaimPolicy(ApiModel):
    """PVCs created once per JobSet and mounted by the Jobs that reference them."""

    templates: Annotated[
        list[
            Annotated[
                dict[str, Any], Field(json_schema_extra={K8S_DEFINITION: PERSISTENT_VOLUME_CLAIM})
            ]
        ],
        Field(max_length=c.MAX_VOLUME_CLAIM_POLICIES, json_schema_extra=ATOMIC),
    ] = Field(default_factory=empty_list)
    """PersistentVolumeClaim templates; the PVC name is <template>-<jobset>."""
    retention_policy: VolumeRetentionPolicy | None = Field(
        default=None, json_schema_extra={CRD_DEFAULT: {}}
    )
    """Retention of the PVCs; defaulted to whenDeleted: Delete."""

    @field_validator("templates")
    @classmethod
    def _check_templates(cls, value: list[dict[str, Any]], info: ValidationInfo) -> Any:
        if checks_templates(info):
            raise_k8s_errors(
                [
                    e
                    for i, t in enumerate(value)
                    for e in validate_definition(t, PERSISTENT_VOLUME_CLAIM, f"[{i}]")
                ]
            )
        return value


class ReplicatedJob(ApiModel):
    """A group of identical child Jobs made from one template."""

    name: str = Field(min_length=1, json_schema_extra={"maxLength": DNS_LABEL_MAX_LENGTH})
    """Replicated job name; part of every child Job name."""
    group_name: str = Field(
        default=c.DEFAULT_GROUP_NAME,
        json_schema_extra={CRD_DEFAULT: c.DEFAULT_GROUP_NAME, "maxLength": DNS_LABEL_MAX_LENGTH},
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
            json_schema_extra={**map_list("name"), VALIDATIONS: IMMUTABLE},
        ),
    ] = None
    """Replicated jobs that must reach a status before this one starts."""

    @field_validator("template")
    @classmethod
    def _check_template(cls, value: dict[str, Any], info: ValidationInfo) -> Any:
        if checks_templates(info):
            raise_k8s_errors(validate_definition(value, JOB_TEMPLATE_SPEC))
        return value


class JobSetSpec(ApiModel):
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

    replicated_jobs: Annotated[list[ReplicatedJob], Field(json_schema_extra=map_list("name"))] = (
        Field(default_factory=empty_list)
    )
    """The replicated jobs; names are unique."""
    network: Annotated[
        Network | None, Field(json_schema_extra={VALIDATIONS: IMMUTABLE, CRD_DEFAULT: {}})
    ] = None
    """Pod DNS settings."""
    success_policy: Annotated[
        SuccessPolicy | None,
        Field(
            json_schema_extra={
                VALIDATIONS: IMMUTABLE,
                CRD_DEFAULT: {"operator": Operator.ALL.value},
            }
        ),
    ] = None
    """When the JobSet completes; defaulted to operator All."""
    failure_policy: Annotated[
        FailurePolicy | None, Field(json_schema_extra={VALIDATIONS: IMMUTABLE})
    ] = None
    """How failed Jobs are handled; absent means fail on the first Job failure."""
    startup_policy: Annotated[
        StartupPolicy | None,
        Field(
            json_schema_extra={
                VALIDATIONS: IMMUTABLE,
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
            json_schema_extra={**ATOMIC, VALIDATIONS: IMMUTABLE},
        ),
    ] = None
    """PVCs shared by the JobSet's Jobs."""


class JobSet(ApiModel):
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
