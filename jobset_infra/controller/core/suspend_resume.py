"""Suspend and resume child Jobs, as Kueue relies on (upstream `suspendJobs`, `resumeJob`,
jobset_controller.go l.562-682).

Suspend: every active Job that is not suspended gets spec.suspend=true.
Resume, per Job: clear status.startTime (the Job API accepts scheduling-directive changes of a
template only while it is unset), merge the replicated job's current pod template labels,
annotations, nodeSelector, tolerations and schedulingGates into the Job, set spec.suspend=false.

Deliberate differences from upstream, each tested and in docs/controller-core.md:

* nodeSelector keys that are no longer in the template (Kueue removed them when it suspended the
  JobSet, e.g. the previous flavor's node pool) are removed from the Job, instead of being kept and
  leaving the Job pinned to the old flavor. Keys the controller itself owns are kept.
* tolerations and schedulingGates are merged as an ordered union (the Job's entries first, then
  the template's new ones in template order) instead of a set union in random order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import ChildJob, EmitEvent, Manifest, UpdateJob
from jobset_infra.placement.strategy import node_selector_strategy

__all__ = [
    "ResumeCarries",
    "controller_node_selector",
    "resume_job",
    "suspend_jobs",
]


def suspend_jobs(active: Iterable[ChildJob]) -> tuple[UpdateJob, ...]:
    """Return the updates that suspend every active Job not suspended yet."""
    return tuple(
        UpdateJob(
            job.namespace,
            job.name,
            job.resource_version,
            {"spec": {"suspend": True}},
            why="jobset suspended",
        )
        for job in active
        if not job.suspend
    )


def controller_node_selector(job: ChildJob) -> dict[str, str]:
    """Return the nodeSelector entries the controller itself put on `job` at creation."""
    if node_selector_strategy(job.annotations):
        return {c.NAMESPACED_JOB_KEY: f"{job.namespace}_{job.name}"}
    return {}


def _map_patch(current: Mapping[str, str], template: Mapping[str, str]) -> dict[str, Any]:
    """Merge-patch entries that make `current` hold every template entry (template wins)."""
    return {k: v for k, v in template.items() if current.get(k) != v}


def _exact_map_patch(current: Mapping[str, str], desired: Mapping[str, str]) -> dict[str, Any]:
    """Merge-patch entries that turn `current` into exactly `desired` (null removes a key)."""
    patch: dict[str, Any] = {k: None for k in current if k not in desired}
    patch.update(_map_patch(current, desired))
    return patch


def _ordered_union(
    current: Sequence[Mapping[str, Any]], template: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]] | None:
    """Return current + template entries not in current, in order; None when nothing is added."""
    added = [dict(item) for item in template if item not in current]
    if not added:
        return None
    return [*(dict(item) for item in current), *added]


def _pod_template_patch(
    job: ChildJob, pod_template: Mapping[str, Any], owned: Mapping[str, str]
) -> dict[str, Any]:
    meta = pod_template.get("metadata") or {}
    spec = pod_template.get("spec") or {}
    meta_patch = {
        key: patch
        for key, patch in (
            ("labels", _map_patch(job.template_labels, meta.get("labels") or {})),
            ("annotations", _map_patch(job.template_annotations, meta.get("annotations") or {})),
        )
        if patch
    }
    desired_selector = {**(spec.get("nodeSelector") or {}), **owned}
    spec_patch: dict[str, Any] = {}
    selector = _exact_map_patch(job.node_selector, desired_selector)
    if selector:
        spec_patch["nodeSelector"] = selector
    for key, current in (
        ("tolerations", job.tolerations),
        ("schedulingGates", job.scheduling_gates),
    ):
        merged = _ordered_union(current, spec.get(key) or [])
        if merged is not None:
            spec_patch[key] = merged
    patch: dict[str, Any] = {}
    if meta_patch:
        patch["metadata"] = meta_patch
    if spec_patch:
        patch["spec"] = spec_patch
    return patch


@dataclass(frozen=True, slots=True)
class ResumeCarries:
    """What a resume carries to the Job besides upstream's five pod-template fields."""

    execution_attempt: str | None = None
    """The execution-attempt annotation for the Job and its Pods (ExecutionAttemptsTracking)."""
    resources: bool = False
    """Container and init-container resources (MutablePodResourcesForSuspendedJobSets)."""
    on_refusal: EmitEvent | None = None
    """The Warning to emit when the API server refuses the resume (KEP-1150's mitigation)."""


def _with_execution_attempt(job: ChildJob, patch: Manifest, value: str) -> None:
    key = c.EXECUTION_ATTEMPT_KEY
    if job.annotations.get(key) != value:
        patch.setdefault("metadata", {}).setdefault("annotations", {})[key] = value
    if job.template_annotations.get(key) != value:
        template = patch["spec"].setdefault("template", {})
        template.setdefault("metadata", {}).setdefault("annotations", {})[key] = value


def _with_resources(patch: Manifest, pod_template: Mapping[str, Any]) -> None:
    """Each container's resources, replaced whole from the template (KEP-1150). A strategic
    merge patch: containers merge by name, `$patch: replace` makes the resources exactly the
    template's (its claims included, which cannot have changed)."""
    spec = pod_template.get("spec") or {}
    target = patch["spec"].setdefault("template", {}).setdefault("spec", {})
    for key in ("initContainers", "containers"):
        entries = [
            {"name": item["name"], "resources": {"$patch": "replace", **(item.get("resources")
                                                                       or {})}}
            for item in spec.get(key) or ()
            if isinstance(item, Mapping) and isinstance(item.get("name"), str)
        ]
        if entries:
            target[key] = entries


def resume_job(
    job: ChildJob,
    job_template: Mapping[str, Any],
    placed: Mapping[str, str] | None = None,
    carries: ResumeCarries = ResumeCarries(),
) -> UpdateJob:
    """Return the update that resumes `job` from its replicated job's current `job_template`.

    `placed`: nodeSelector entries exclusive placement assigned for this resume; they and the
    node-selector strategy's entry are controller-owned and never dropped as stale.
    """
    pod_template = (job_template.get("spec") or {}).get("template") or {}
    owned = {**controller_node_selector(job), **(placed or {})}
    patch: Manifest = {"spec": {"suspend": False}}
    template_patch = _pod_template_patch(job, pod_template, owned)
    if template_patch:
        patch["spec"]["template"] = template_patch
    if carries.execution_attempt is not None:
        _with_execution_attempt(job, patch, carries.execution_attempt)
    if carries.resources:
        _with_resources(patch, pod_template)
    return UpdateJob(
        job.namespace,
        job.name,
        job.resource_version,
        patch,
        clear_start_time=job.start_time is not None,
        why="jobset resumed",
        strategic=carries.resources,
        on_refusal=carries.on_refusal if carries.resources else None,
    )
