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
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import ChildJob, Manifest, UpdateJob
from jobset_infra.placement.strategy import node_selector_strategy

__all__ = [
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


def resume_job(
    job: ChildJob, job_template: Mapping[str, Any], placed: Mapping[str, str] | None = None
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
    return UpdateJob(
        job.namespace,
        job.name,
        job.resource_version,
        patch,
        clear_start_time=job.start_time is not None,
        why="jobset resumed",
    )
