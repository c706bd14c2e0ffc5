"""Update validation of a JobSet: what of upstream ValidateUpdate (§4.3) CEL cannot express.

The CRD's transition rules (`rules`: names and order fixed, changes only while suspended,
managedBy fixed; `models`: network, successPolicy, failurePolicy, startupPolicy,
volumeClaimPolicies and dependsOn immutable) cover the rest. The replicated jobs are immutable,
except that
- while the old or the new JobSet is suspended, each pod template's labels, annotations,
  nodeSelector, tolerations and schedulingGates may change (what Kueue writes on admission);
- with the ElasticJobSet gate, parallelism/completions of Indexed jobs may change (P == C >= 1)
  unless the JobSet already finished.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.api.errors import FieldError, invalid
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.models import JobSet

__all__ = ["SUSPENDED_MUTABLE_POD_FIELDS", "replicated_jobs_problems"]

# Pod-template fields that may change while the JobSet is (or becomes, or stops being) suspended.
SUSPENDED_MUTABLE_POD_FIELDS: Final = (
    ("metadata", "labels"),
    ("metadata", "annotations"),
    ("spec", "nodeSelector"),
    ("spec", "tolerations"),
    ("spec", "schedulingGates"),
)
_ELASTIC_FIELDS: Final = ("parallelism", "completions")


def replicated_jobs_problems(
    new: JobSet, old: JobSet, gates: FeatureGates
) -> Iterator[FieldError]:
    """Elastic scaling out of bounds, and a suspended JobSet's changes beyond the pod fields
    Kueue writes (other changes to the list are the CRD's transition rules)."""
    # 1. Start from the new replicated jobs; old ones are looked up by name.
    munged = [r.to_dict() for r in new.spec.replicated_jobs]
    old_rjobs = [r.to_dict() for r in old.spec.replicated_jobs]
    old_by_name = {r["name"]: r for r in old_rjobs}
    # 2. ElasticJobSet: validate P/C changes, then treat them as unchanged.
    if gates.enabled(Feature.ELASTIC_JOBSET):
        for i, rjob in enumerate(munged):
            before = old_by_name.get(rjob["name"])
            if before is not None and _indexed(rjob) and _indexed(before):
                yield from _elastic(i, rjob, before, _finished(old))
                _copy_fields(before, rjob, [("spec", f) for f in _ELASTIC_FIELDS])
    # 3. Not suspended, or the names changed: the CRD's transition rules decide.
    suspended = bool(old.spec.suspend or new.spec.suspend)
    if not suspended or [r["name"] for r in munged] != [r["name"] for r in old_rjobs]:
        return
    # 4. Suspended (before or after): scheduling directives of the pod template may change.
    for rjob in munged:
        _copy_pod_fields(old_by_name[rjob["name"]], rjob)
    # 5. Everything else is immutable.
    if munged != old_rjobs:
        yield FieldError("spec.replicatedJobs", c.RJOBS_SUSPENDED_CHANGES_MESSAGE)


def _elastic(
    i: int, rjob: Mapping[str, Any], before: Mapping[str, Any], finished: bool
) -> Iterator[FieldError]:
    spec, old_spec = _job_spec(rjob), _job_spec(before)
    if all(spec.get(f) == old_spec.get(f) for f in _ELASTIC_FIELDS):
        return
    path = f"spec.replicatedJobs[{i}].template.spec"
    if finished:
        yield FieldError(path, c.ELASTIC_TERMINAL_MESSAGE)
        return
    parallelism, completions = spec.get("parallelism"), spec.get("completions")
    for name, value in (("parallelism", parallelism), ("completions", completions)):
        if isinstance(value, int) and value < 1:
            yield invalid(f"{path}.{name}", value, c.ELASTIC_MIN_MESSAGE)
    if parallelism is not None and completions is not None and parallelism != completions:
        yield invalid(f"{path}.completions", completions, c.ELASTIC_EQUAL_MESSAGE)


def _finished(js: JobSet) -> bool:
    status = js.status
    if status is None:
        return False
    if status.terminal_state in (c.CONDITION_COMPLETED, c.CONDITION_FAILED):
        return True
    return any(
        cond.type in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) and cond.status == "True"
        for cond in status.conditions
    )


def _job_spec(rjob: Mapping[str, Any]) -> dict[str, Any]:
    spec = rjob.get("template", {}).get("spec")
    return spec if isinstance(spec, dict) else {}


def _indexed(rjob: Mapping[str, Any]) -> bool:
    return _job_spec(rjob).get("completionMode") == c.COMPLETION_MODE_INDEXED


def _copy_pod_fields(source: Mapping[str, Any], target: dict[str, Any]) -> None:
    pod_source = _job_spec(source).get("template")
    pod_target = _job_spec(target).get("template")
    if isinstance(pod_source, dict) and isinstance(pod_target, dict):
        _copy_fields(pod_source, pod_target, SUSPENDED_MUTABLE_POD_FIELDS, wrapped=False)


def _copy_fields(
    source: Mapping[str, Any],
    target: dict[str, Any],
    fields: Any,
    *,
    wrapped: bool = True,
) -> None:
    """Make target[a][b] equal source[a][b] (absent stays absent) for each (a, b) in fields.

    With `wrapped`, source/target are replicated jobs and (a, b) are inside `template`.
    """
    src_root = source.get("template", {}) if wrapped else source
    dst_root = target.get("template", {}) if wrapped else target
    for outer, inner in fields:
        src = src_root.get(outer)
        src = src if isinstance(src, dict) else {}
        dst = dst_root.get(outer)
        if dst is None and inner in src:
            dst = dst_root[outer] = {}
        if not isinstance(dst, dict):
            continue
        if inner in src:
            dst[inner] = copy.deepcopy(src[inner])
        else:
            dst.pop(inner, None)
        if not dst and outer not in src_root:
            del dst_root[outer]  # an emptied section the old object never had
