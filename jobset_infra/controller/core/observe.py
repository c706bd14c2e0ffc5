"""Build the `Observed` state from raw objects, and handle JobSets that cannot be parsed.

A JobSet that bypassed validation (an old CRD, a direct etcd write, a CRD without our schema)
may not parse into the model, and one the CRD takes may still be impossible: more pods than any
cluster holds, or pod templates the API server refuses for every Job. The controller must not
crash or loop on it: it reports the problem on the object, as a condition and a Warning event,
and does nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from jobset_infra.api import constants as c
from jobset_infra.api.cluster_bounds import size_errors
from jobset_infra.api.errors import FieldError, duplicate
from jobset_infra.api.input_limits import MANIFEST_LIMITS, LimitError, check_depth
from jobset_infra.api.job_template import child_job_errors
from jobset_infra.api.models import CHECK_TEMPLATES, JobSet, field_errors
from jobset_infra.api.status import Condition
from jobset_infra.api.validation import children_refused
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.admission import describe
from jobset_infra.controller.core.job_creation_failed import job_creation_failed_message
from jobset_infra.controller.core.types import (
    NO_NAMES_TAKEN,
    Action,
    ChildJob,
    CoreConfig,
    EmitEvent,
    NameHolder,
    ObjectRef,
    Observed,
    PlacementInputs,
    Plan,
    PodView,
    UpdateStatus,
)

__all__ = ["MalformedJobSetError", "observe", "reconcile_malformed"]


class MalformedJobSetError(ValueError):
    """The JobSet object does not parse into the v1alpha2 model; `errors` name the fields."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__(describe(errors, "the controller does nothing else with it until then"))


def observe(
    raw_jobset: Mapping[str, Any],
    jobs: Iterable[ChildJob] = (),
    service_exists: bool = False,
    placement: PlacementInputs | None = None,
    pvc_names: frozenset[str] | None = None,
    *,
    check_templates: bool = False,
    taken_names: Mapping[str, NameHolder] = NO_NAMES_TAKEN,
    pods: tuple[PodView, ...] | None = None,
) -> Observed[JobSet]:
    """Return the observed state; raise MalformedJobSetError if the JobSet does not parse,
    names two replicated jobs alike or needs more pods than any cluster holds.

    With `check_templates` (the runtime asks once per generation: it costs about 1.5 ms) the
    object's depth, its Job templates' types (pinned Kubernetes OpenAPI) and what the API
    server would refuse in every child Job, Service or PVC (their templates, and names and
    label values made from the JobSet's: `validation.children_refused`) are checked too.
    """
    if check_templates:
        _check_depth(raw_jobset)
    try:
        js = JobSet.model_validate(raw_jobset, context={CHECK_TEMPLATES: check_templates})
    except ValidationError as exc:
        raise MalformedJobSetError(field_errors(exc)) from None
    if problems := _duplicate_names(js) or size_errors(js):
        raise MalformedJobSetError(problems)
    if check_templates and (refused := child_job_errors(raw_jobset) or children_refused(js)):
        raise MalformedJobSetError(refused)
    return Observed(js, tuple(jobs), service_exists, placement, pvc_names,
                    taken_names=taken_names, pods=pods)


def _check_depth(raw_jobset: Mapping[str, Any]) -> None:
    try:
        check_depth(raw_jobset, MANIFEST_LIMITS.max_depth, "the JobSet")
    except LimitError as exc:
        raise MalformedJobSetError([FieldError("", str(exc))]) from None


def _duplicate_names(js: JobSet) -> list[FieldError]:
    """Replicated jobs named like an earlier one. The CRD's listType=map refuses them, so only a
    JobSet that bypassed it has them; its Jobs' names would collide, so nothing is reconciled."""
    seen: set[str] = set()
    errors = []
    for i, rjob in enumerate(js.spec.replicated_jobs):
        if rjob.name in seen:
            errors.append(duplicate(f"spec.replicatedJobs[{i}].name", rjob.name))
        seen.add(rjob.name)
    return errors


def _dict(value: object) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def reconcile_malformed(
    raw_jobset: Mapping[str, Any],
    error: MalformedJobSetError | Exception,
    now: datetime,
    config: CoreConfig | None = None,
) -> Plan:
    """Return the plan for an unparsable JobSet: InvalidSpec=True and a Warning (plus upstream's
    JobCreationFailed when the API server would refuse its Jobs). Never raises."""
    errors = error.errors if isinstance(error, MalformedJobSetError) else []
    try:
        return _malformed_plan(raw_jobset, str(error), errors, now, config or CoreConfig())
    except Exception:
        return Plan()


def _malformed_plan(
    raw: Mapping[str, Any],
    message: str,
    errors: list[FieldError],
    now: datetime,
    config: CoreConfig,
) -> Plan:
    meta, spec = _dict(raw.get("metadata")), _dict(raw.get("spec"))
    if meta.get("deletionTimestamp") or spec.get("managedBy") not in (None, config.controller_name):
        return Plan()
    status = _dict(raw.get("status"))
    raw_conditions = [dict(x) for x in status.get("conditions") or [] if isinstance(x, Mapping)]
    spec_ = cond.ConditionSpec(
        c.CONDITION_INVALID_SPEC, "True", c.INVALID_SPEC_REASON, message, "Warning"
    )
    conditions = _set_among_raw(raw_conditions, spec_, now)
    if conditions is None:
        return Plan()
    status["conditions"] = conditions
    status.setdefault("restarts", 0)
    name, namespace = str(meta.get("name", "")), str(meta.get("namespace", ""))
    ref = ObjectRef(c.KIND, c.API_VERSION, namespace, name, str(meta.get("uid", "")))
    actions: tuple[Action, ...] = (
        UpdateStatus(namespace, name, str(meta.get("resourceVersion", "")), status),
        EmitEvent("Warning", c.INVALID_SPEC_REASON, message, ref),
    )
    # a Job template the API server refuses also gets upstream's event, which alerts key on
    if errors and (refused := job_creation_failed_message(raw, errors)):
        actions += (EmitEvent("Warning", c.JOB_CREATION_FAILED_EVENT, refused, ref),)
    return Plan(actions)


def _set_among_raw(
    raw: list[dict[str, Any]], spec: cond.ConditionSpec, now: datetime
) -> list[dict[str, Any]] | None:
    """Set `spec` among the wire conditions of an unparsed JobSet, or None when unchanged.

    The conditions that parse are updated as on any JobSet; one that does not (the object
    bypassed validation) stays as it is, where it is.
    """
    parsed = [_condition(x) for x in raw]
    updated = cond.set_condition([p for p in parsed if p is not None], spec, now)
    if updated is None:
        return None
    fresh = iter(updated)
    out = [x if p is None else next(fresh).to_dict() for x, p in zip(raw, parsed, strict=True)]
    return out + [extra.to_dict() for extra in fresh]


def _condition(raw: dict[str, Any]) -> Condition | None:
    try:
        return Condition.model_validate(raw)
    except ValidationError:
        return None
