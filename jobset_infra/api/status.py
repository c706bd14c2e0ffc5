"""JobSet status models (written by the controller through the status subresource)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from jobset_infra.api import constants as c
from jobset_infra.api.model_base import (
    ATOMIC,
    LAX,
    ApiModel,
    ConditionStatus,
    empty_list,
    map_list,
)

# metav1.Condition's type pattern: an optional DNS-subdomain prefix, then a qualified name.
_CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
# metav1.Condition's reason pattern (CamelCase-ish identifiers).
_CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class Condition(ApiModel):
    """metav1.Condition."""

    type: str = Field(max_length=316, json_schema_extra={"pattern": _CONDITION_TYPE_PATTERN})
    """Condition type, e.g. Completed."""
    status: Annotated[ConditionStatus, LAX]
    """True, False or Unknown."""
    observed_generation: int | None = Field(
        default=None, ge=0, json_schema_extra={"format": "int64"}
    )
    """metadata.generation the condition was computed from."""
    last_transition_time: str = Field(json_schema_extra={"format": "date-time"})
    """RFC 3339 time of the last status change."""
    reason: str = Field(
        max_length=1024, min_length=1, json_schema_extra={"pattern": _CONDITION_REASON_PATTERN}
    )
    """CamelCase reason."""
    message: str = Field(max_length=32768)
    """Human-readable message."""


class ReplicatedJobStatus(ApiModel):
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
        Field(max_length=c.MAX_REPLICAS_WITH_RESTART_JOB, json_schema_extra=ATOMIC),
    ] = None
    """Per-Job restart counts (RestartJob gate)."""
    job_restarts_count_towards_max: Annotated[
        list[int] | None,
        Field(max_length=c.MAX_REPLICAS_WITH_RESTART_JOB, json_schema_extra=ATOMIC),
    ] = None
    """Per-Job restarts that count towards maxRestarts (RestartJob gate)."""


class JobSetStatus(ApiModel):
    """Observed state of a JobSet."""

    conditions: Annotated[list[Condition], Field(json_schema_extra=map_list("type"))] = Field(
        default_factory=empty_list
    )
    """Completed, Failed, Suspended, RestartingJobSet, StartupPolicy* conditions."""
    restarts: int = 0
    """Global restarts so far (always serialised, as upstream)."""
    restarts_count_towards_max: int | None = None
    """Restarts that count towards failurePolicy.maxRestarts."""
    terminal_state: str | None = None
    """Completed or Failed once finished."""
    replicated_jobs_status: Annotated[
        list[ReplicatedJobStatus], Field(json_schema_extra=map_list("name"))
    ] = Field(default_factory=empty_list)
    """Per replicated job counts."""
    previous_in_place_restart_attempt: int | None = Field(default=None, ge=0)
    """InPlaceRestart: attempt lagging pods must restart from."""
    current_in_place_restart_attempt: int | None = Field(default=None, ge=0)
    """InPlaceRestart: attempt all pods agreed on (barrier lifted)."""
    execution_attempts: int | None = Field(default=None, ge=0)
    """Executions so far, counting restarts and resumes (KEP-1282, gate
    ExecutionAttemptsTracking): None never ran, 0 the first run."""

    @model_validator(mode="after")
    def _always_restarts(self) -> JobSetStatus:
        # Upstream's `restarts` has no omitempty: it is on the wire even when 0.
        self.__pydantic_fields_set__.add("restarts")
        return self
