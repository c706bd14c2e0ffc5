"""The core's slim, frozen view of a child batch/v1 Job, and RFC 3339 time helpers.

The runtime builds one `ChildJob` per watch event with `child_job_from_manifest` and caches only
these; `controller.core.types` re-exports them as part of the core's contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobset_infra.api import constants as c

__all__ = ["ChildJob", "JobCondition", "child_job_from_manifest", "format_time", "key_int_of",
           "parse_time"]


# --------------------------------------------------------------------------- time


def parse_time(value: object) -> datetime | None:
    """Return the RFC 3339 timestamp `value` as an aware datetime; None if absent or bad."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def format_time(value: datetime) -> str:
    """Return `value` as Kubernetes serializes metav1.Time: UTC, whole seconds, trailing Z."""
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- observed


@dataclass(frozen=True, slots=True)
class JobCondition:
    """One entry of a Job's status.conditions."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    last_transition_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class ChildJob:
    """The slim view of a child batch/v1 Job: only what the core reads. The runtime caches these."""

    name: str
    namespace: str
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    controller_uid: str | None = None
    """UID of the controller ownerReference (a JobSet); Jobs owned by another UID are ignored."""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    suspend: bool = False
    parallelism: int | None = None
    completions: int | None = None
    # pod template fields that resume merges (Kueue edits them while a JobSet is suspended)
    template_labels: Mapping[str, str] = field(default_factory=dict)
    template_annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    scheduling_gates: tuple[Mapping[str, Any], ...] = ()
    # status
    start_time: datetime | None = None
    conditions: tuple[JobCondition, ...] = ()
    active: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    # derived from labels once, here, so a reconcile over 10,000 Jobs parses nothing
    rjob: str = field(init=False, default="")
    """The replicatedjob-name label, else annotation ("" when both are missing)."""
    restart_attempt: int | None = field(init=False, default=None)
    """The restart-attempt label (else annotation) as an int (None when neither is one)."""
    job_index: int | None = field(init=False, default=None)
    """The job-index label (else annotation) as an int."""
    job_restart_attempt: int | None = field(init=False, default=None)
    """The job-restart-attempt label (else annotation) as an int (RestartJob gate)."""

    def __post_init__(self) -> None:
        # The controller writes each key as a label and an annotation alike: a label someone
        # removed (or mangled) is read from the annotation, so the Job keeps counting.
        keys = (self.labels, self.annotations)
        object.__setattr__(self, "rjob", _key(keys, c.REPLICATED_JOB_NAME_KEY) or "")
        object.__setattr__(self, "restart_attempt", _key_int(keys, c.RESTARTS_KEY))
        object.__setattr__(self, "job_index", _key_int(keys, c.JOB_INDEX_KEY))
        attempt = _key_int(keys, c.JOB_RESTART_ATTEMPT_KEY)
        object.__setattr__(self, "job_restart_attempt", attempt)

    def condition(self, type_: str) -> JobCondition | None:
        """Return the condition of type `type_` whose status is True, or None."""
        for cond in self.conditions:
            if cond.type == type_ and cond.status == "True":
                return cond
        return None


def _key(sources: tuple[Mapping[str, str], ...], key: str) -> str | None:
    """The first non-empty value of `key` in the label map, then the annotation map."""
    for source in sources:
        value = source.get(key)
        if value:
            return value
    return None


def key_int_of(metadata: Mapping[str, Any], key: str) -> int | None:
    """`key` of an object's metadata as the controller reads it: label first, then annotation."""
    return _key_int((metadata.get("labels") or {}, metadata.get("annotations") or {}), key)


def _key_int(sources: tuple[Mapping[str, str], ...], key: str) -> int | None:
    """The first value of `key` that is an integer (label first, then annotation)."""
    for source in sources:
        try:
            return int(source[key])
        except (KeyError, ValueError):
            continue
    return None


def _str_map(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    out = dict(value)
    for key, item in out.items():  # API data is str -> str; convert only if it is not
        if type(key) is not str or type(item) is not str:
            return {str(k): str(v) for k, v in out.items()}
    return out


def _dict_tuple(value: object) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(value, list):
        return ()
    return tuple(dict(item) for item in value if isinstance(item, Mapping))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _controller_uid(meta: Mapping[str, Any]) -> str | None:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            uid = ref.get("uid")
            return str(uid) if uid is not None else None
    return None


def _conditions(value: object) -> tuple[JobCondition, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(
        JobCondition(
            type=str(cond.get("type", "")),
            status=str(cond.get("status", "")),
            reason=str(cond.get("reason") or ""),
            message=str(cond.get("message") or ""),
            last_transition_time=parse_time(cond.get("lastTransitionTime")),
        )
        for cond in value
        if isinstance(cond, Mapping)
    )


def child_job_from_manifest(job: Mapping[str, Any]) -> ChildJob:
    """Return the slim view of a batch/v1 Job manifest. Pure; never raises on odd shapes."""
    meta = job.get("metadata") or {}
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    template = spec.get("template") or {}
    tmeta = template.get("metadata") or {}
    pod = template.get("spec") or {}
    return ChildJob(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        uid=str(meta.get("uid", "")),
        resource_version=str(meta.get("resourceVersion", "")),
        creation_timestamp=parse_time(meta.get("creationTimestamp")),
        deletion_timestamp=parse_time(meta.get("deletionTimestamp")),
        controller_uid=_controller_uid(meta),
        labels=_str_map(meta.get("labels")),
        annotations=_str_map(meta.get("annotations")),
        suspend=spec.get("suspend") is True,
        parallelism=_opt_int(spec.get("parallelism")),
        completions=_opt_int(spec.get("completions")),
        template_labels=_str_map(tmeta.get("labels")),
        template_annotations=_str_map(tmeta.get("annotations")),
        node_selector=_str_map(pod.get("nodeSelector")),
        tolerations=_dict_tuple(pod.get("tolerations")),
        scheduling_gates=_dict_tuple(pod.get("schedulingGates")),
        start_time=parse_time(status.get("startTime")),
        conditions=_conditions(status.get("conditions")),
        active=_int(status.get("active")),
        ready=_int(status.get("ready")),
        succeeded=_int(status.get("succeeded")),
        failed=_int(status.get("failed")),
    )
