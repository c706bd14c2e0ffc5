"""Which Job status writes the API server refuses (Kubernetes 1.31 and later, with the Job
API's managedBy support GA): a pure check of the new status against the old one.

Most rules apply only when a field they read changed in this write (as the API server decides
per write), so a Job already stored in an odd state can still be updated elsewhere. Messages
are the API server's; errors are 422 Invalid with a cause per field.
"""

from __future__ import annotations

from typing import Any

from jobset_infra.sim.apiserver.errors import field_cause

JsonObj = dict[str, Any]
_TERMINAL = ("Failed", "Complete", "FailureTarget")
_COUNTERS = ("active", "succeeded", "failed", "ready", "terminating")


def problems(job: JsonObj, old: JsonObj) -> list[JsonObj]:
    """Causes (reason, field, message) that make the API server refuse `job`'s status."""
    new_s, old_s = job.get("status") or {}, old.get("status") or {}
    if new_s == old_s:
        return []
    return [*_status_problems(job, _Changed(new_s, old_s)), *_transition_problems(job, old)]


def _true(status: JsonObj, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in status.get("conditions") or ())


def _finished(status: JsonObj) -> bool:
    return _true(status, "Complete") or _true(status, "Failed")


class _Changed:
    """What this write changed, as the Job status strategy computes it."""

    def __init__(self, new: JsonObj, old: JsonObj) -> None:
        def differs(key: str) -> bool:
            return new.get(key) != old.get(key)

        def flipped(kind: str) -> bool:
            return _true(new, kind) != _true(old, kind)

        self.finished = _finished(new) != _finished(old)
        self.complete, self.failed = flipped("Complete"), flipped("Failed")
        self.failure_target, self.criteria_met = flipped("FailureTarget"), flipped(
            "SuccessCriteriaMet")
        self.active, self.ready, self.terminating = (
            differs("active"), differs("ready"), differs("terminating"))
        self.start, self.completion = differs("startTime"), differs("completionTime")
        self.completed_indexes = differs("completedIndexes")
        self.uncounted = (new.get("uncountedTerminatedPods") or {}) != (
            old.get("uncountedTerminatedPods") or {})


def _invalid(field: str, value: Any, detail: str) -> JsonObj:
    shown = "" if value is None else f"{value}: " if isinstance(value, int) else f'"{value}": '
    return field_cause("FieldValueInvalid", f"status.{field}", f"Invalid value: {shown}{detail}")


def _required(field: str, detail: str) -> JsonObj:
    return field_cause("FieldValueRequired", f"status.{field}", f"Required value: {detail}")


def _conditions(detail: str) -> JsonObj:
    return _invalid("conditions", None, detail)


def _status_problems(job: JsonObj, changed: _Changed) -> list[JsonObj]:
    status, spec = job.get("status") or {}, job.get("spec") or {}
    out = [_invalid(k, status[k], "must be greater than or equal to 0")
           for k in _COUNTERS if int(status.get(k) or 0) < 0]
    complete, failed = _true(status, "Complete"), _true(status, "Failed")
    target, met = _true(status, "FailureTarget"), _true(status, "SuccessCriteriaMet")
    start, completion = status.get("startTime"), status.get("completionTime")
    checks = [
        (changed.complete or changed.failed) and complete and failed,
        (changed.complete or changed.failure_target) and complete and target,
        (changed.complete or changed.completion) and completion is not None and not complete,
        (changed.complete or changed.completion) and completion is None and complete,
        (changed.start or changed.completion) and bool(start and completion
                                                       and completion < start),
        (changed.failed or changed.failure_target) and failed and not target,
        (changed.complete or changed.criteria_met) and complete and not met,
        (changed.finished or changed.active) and int(status.get("active") or 0) > 0
        and _finished(status),
        (changed.finished or changed.start) and start is None and _finished(status),
        (changed.finished or changed.uncounted) and _finished(status) and any(
            (status.get("uncountedTerminatedPods") or {}).values()),
        (changed.finished or changed.terminating) and int(status.get("terminating") or 0) > 0
        and _finished(status),
        (changed.ready or changed.active) and int(status.get("ready") or 0) > int(
            status.get("active") or 0),
    ]
    causes = [
        _conditions("cannot set Complete=True and Failed=true conditions"),
        _conditions("cannot set Complete=True and FailureTarget=true conditions"),
        _invalid("completionTime", completion,
                 "cannot set completionTime when there is no Complete=True condition"),
        _required("completionTime", "completionTime is required for Complete jobs"),
        _invalid("completionTime", completion, "completionTime cannot be set before startTime"),
        _conditions("cannot set Failed=True condition without the FailureTarget=true condition"),
        _conditions("cannot set Complete=True condition without the SuccessCriteriaMet=true "
                    "condition"),
        _invalid("active", status.get("active"), "active>0 is invalid for finished job"),
        _required("startTime", "startTime is required for finished job"),
        _invalid("uncountedTerminatedPods", None,
                 "uncountedTerminatedPods needs to be empty for finished job"),
        _invalid("terminating", status.get("terminating"),
                 "terminating>0 is invalid for finished job"),
        _invalid("ready", status.get("ready"), "cannot set more ready pods than active"),
    ]
    out += [cause for check, cause in zip(checks, causes, strict=True) if check]
    if changed.completed_indexes:
        out += _completed_indexes_problems(status.get("completedIndexes") or "", spec)
    if met and failed:
        out.append(_conditions("cannot set SuccessCriteriaMet=True and Failed=true conditions"))
    if met and target:
        out.append(_conditions(
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
    return out


def _completed_indexes_problems(indexes: str, spec: JsonObj) -> list[JsonObj]:
    if indexes and spec.get("completionMode") != "Indexed":
        return [_invalid("completedIndexes", indexes, "cannot set non-empty completedIndexes "
                                                      "when non-indexed completion mode")]
    error = index_format_error(indexes, int(spec.get("completions") or 0))
    if error is None or spec.get("completions") is None:
        return []
    return [_invalid("completedIndexes", indexes, f"error parsing completedIndexes: {error}")]


def index_format_error(indexes: str, completions: int) -> str | None:
    """Why `indexes` ("1,3-5") is not increasing intervals of indexes below `completions`."""
    last = None
    for interval in indexes.split(",") if indexes else ():
        parts = interval.split("-")
        if len(parts) > 2:
            return (f'the fragment "{interval}" violates the requirement that an index interval '
                    "can have at most two parts separated by '-'")
        bounds = []
        for part in parts:
            if not part.isdigit():
                return f'cannot convert string to integer for index: "{part}"'
            if int(part) >= completions:
                return f'too large index: "{part}"'
            bounds.append(int(part))
        if len(bounds) == 2 and bounds[0] >= bounds[1]:
            return f"non-increasing order, previous: {bounds[0]}, current: {bounds[1]}"
        if last is not None and last >= bounds[0]:
            return f"non-increasing order, previous: {last}, current: {bounds[0]}"
        last = bounds[-1]
    return None


def _transition_problems(job: JsonObj, old: JsonObj) -> list[JsonObj]:
    status, old_s, spec = job.get("status") or {}, old.get("status") or {}, job.get("spec") or {}
    out = [_conditions(f"cannot disable the terminal {kind}=True condition")
           for kind in _TERMINAL if _true(old_s, kind) and not _true(status, kind)]
    if int(status.get("failed") or 0) < int(old_s.get("failed") or 0):
        out.append(_invalid("failed", int(status.get("failed") or 0),
                            "cannot decrease the failed counter"))
    scalable = spec.get("completionMode") == "Indexed" and spec.get(
        "completions") == spec.get("parallelism")
    if not scalable and int(status.get("succeeded") or 0) < int(old_s.get("succeeded") or 0):
        out.append(_invalid("succeeded", int(status.get("succeeded") or 0),
                            "cannot decrease the succeeded counter"))
    completion, old_completion = status.get("completionTime"), old_s.get("completionTime")
    if completion and old_completion and completion != old_completion:
        out.append(_invalid("completionTime", completion, "completionTime cannot be mutated"))
    if (old_s.get("startTime") and status.get("startTime") != old_s["startTime"]
            and not spec.get("suspend")):
        out.append(_required("startTime", "startTime cannot be removed for unsuspended job"))
    if _true(old_s, "SuccessCriteriaMet") and not _true(status, "SuccessCriteriaMet"):
        out.append(_conditions("cannot disable the SuccessCriteriaMet=True condition"))
    if (_true(old_s, "Complete") and not _true(old_s, "SuccessCriteriaMet")
            and _true(status, "SuccessCriteriaMet")):
        out.append(_conditions(
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
    return out
