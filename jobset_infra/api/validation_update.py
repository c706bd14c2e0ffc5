"""Update validation of a JobSet: what of upstream ValidateUpdate (§4.3) CEL cannot express.

The CRD's transition rules (`rules`: names and order fixed, changes only while suspended,
managedBy fixed; `models`: network, successPolicy, failurePolicy, startupPolicy,
volumeClaimPolicies and dependsOn immutable) cover the rest. The replicated jobs are immutable,
except that
- while the old or the new JobSet is suspended, each pod template's labels, annotations,
  nodeSelector, tolerations and schedulingGates may change (what Kueue writes on admission);
- with the ElasticJobSet gate, parallelism/completions of Indexed jobs may change (the CRD
  rendered with the gate checks P == C >= 1, and not once the JobSet finished);
- with the MutablePodResourcesForSuspendedJobSets gate (KEP-1150), while suspended, containers'
  and init containers' resource requests and limits may change too (not their claims).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.api.errors import FieldError
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
_RESOURCE_FIELDS: Final = (("resources", "requests"), ("resources", "limits"))


def replicated_jobs_problems(
    new: JobSet, old: JobSet, gates: FeatureGates
) -> Iterator[FieldError]:
    """Elastic scaling out of bounds, and a suspended JobSet's changes beyond the pod fields
    Kueue writes (other changes to the list are the CRD's transition rules)."""
    # 1. Start from the new replicated jobs; old ones are looked up by name.
    munged = [r.to_dict() for r in new.spec.replicated_jobs]
    old_rjobs = [r.to_dict() for r in old.spec.replicated_jobs]
    old_by_name = {r["name"]: r for r in old_rjobs}
    # 2. ElasticJobSet: P/C changes of Indexed jobs are the CRD's rules (rendered with the
    #    gate: P == C >= 1, not once finished); here they count as unchanged.
    if gates.enabled(Feature.ELASTIC_JOBSET):
        for rjob in munged:
            before = old_by_name.get(rjob["name"])
            if before is not None and _indexed(rjob) and _indexed(before):
                _copy_fields(before, rjob, [("spec", f) for f in _ELASTIC_FIELDS])
    # 3. Not suspended, or the names changed: the CRD's transition rules decide.
    suspended = bool(old.spec.suspend or new.spec.suspend)
    if not suspended or [r["name"] for r in munged] != [r["name"] for r in old_rjobs]:
        return
    # 4. Suspended (before or after): scheduling directives of the pod template may change,
    #    and with MutablePodResourcesForSuspendedJobSets containers' requests and limits.
    resources = gates.enabled(Feature.MUTABLE_POD_RESOURCES)
    for rjob in munged:
        _copy_pod_fields(old_by_name[rjob["name"]], rjob)
        if resources:
            _copy_container_resources(old_by_name[rjob["name"]], rjob)
    # 5. Everything else is immutable.
    if munged != old_rjobs:
        yield FieldError("spec.replicatedJobs", c.RJOBS_SUSPENDED_CHANGES_MESSAGE)


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


def _copy_container_resources(source: Mapping[str, Any], target: dict[str, Any]) -> None:
    """KEP-1150: each container's requests and limits as the old one had them (matched by name);
    everything else of a container, its resource claims included, stays compared."""
    old_pod = (_job_spec(source).get("template") or {}).get("spec") or {}
    new_pod = (_job_spec(target).get("template") or {}).get("spec") or {}
    for key in ("containers", "initContainers"):
        before = {x.get("name"): x for x in old_pod.get(key) or () if isinstance(x, dict)}
        for container in new_pod.get(key) or ():
            old = before.get(container.get("name")) if isinstance(container, dict) else None
            if old is not None:
                _copy_fields(old, container, _RESOURCE_FIELDS, wrapped=False)


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
