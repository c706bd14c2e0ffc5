"""The core's slim view of a JobSet's Pod: only what in-place restart reads (KEP-467).

The runtime watches Pods only with the InPlaceRestart gate on, and caches one `PodView` per Pod
(built once per watch event by `pod_view_from_manifest`); upstream's reconciler lists them
through its `podsIndexByJobSet` index, as the runtime's Pod cache does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.placement.failure_cause import PodFailure, pod_failure_from_manifest

__all__ = ["INVALID_ATTEMPT", "PodView", "pod_view_from_manifest"]

# The label the Job controller puts on every Pod of a Job: the Job's name.
_JOB_NAME_LABEL = "batch.kubernetes.io/job-name"

INVALID_ATTEMPT = -1
"""`in_place_restart_attempt` of a Pod whose annotation is not a non-negative integer."""


@dataclass(frozen=True, slots=True)
class PodView:
    """A JobSet's Pod as in-place restart reads it."""

    name: str
    namespace: str
    jobset: str
    """The jobset-name label: the JobSet the Pod belongs to."""
    failed: bool = False
    """status.phase is Failed: the Pod is being replaced, its attempt no longer counts."""
    in_place_restart_attempt: int | None = None
    """The agent's `in-place-restart-attempt` annotation (None: not written yet;
    INVALID_ATTEMPT: not a non-negative integer)."""
    max_restart_count: int = 0
    """The largest restartCount of its containers and init containers."""
    job: str = ""
    """The Job that owns it (the Job controller's `job-name` label)."""
    started: bool = False
    """status.phase is past Pending (Running, Succeeded, Failed or Unknown): its containers
    ran. A pod bound to a Node whose kubelet never started it is still Pending."""
    evidence: PodFailure | None = None
    """What it tells about a failure (its node, DisruptionTarget reason, non-zero exit codes);
    fed to slice health's diagnosis of a failed Job when the runtime watches Pods."""


def _attempt(annotations: Mapping[str, Any]) -> int | None:
    raw = annotations.get(c.IN_PLACE_RESTART_ATTEMPT_KEY)
    if raw is None:
        return None
    try:
        value = int(str(raw))
    except ValueError:
        return INVALID_ATTEMPT
    return value if value >= 0 else INVALID_ATTEMPT


def _max_restart_count(status: Mapping[str, Any]) -> int:
    counts = [
        entry.get("restartCount")
        for key in ("initContainerStatuses", "containerStatuses")
        for entry in status.get(key) or ()
        if isinstance(entry, Mapping)
    ]
    return max((n for n in counts if isinstance(n, int) and not isinstance(n, bool)), default=0)


def pod_view_from_manifest(pod: Mapping[str, Any]) -> PodView:
    """The slim view of a Pod manifest. Pure; never raises on odd shapes."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    labels = meta.get("labels") or {}
    return PodView(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        jobset=str(labels.get(c.JOBSET_NAME_KEY, "")) if isinstance(labels, Mapping) else "",
        failed=status.get("phase") == "Failed" if isinstance(status, Mapping) else False,
        in_place_restart_attempt=_attempt(meta.get("annotations") or {}),
        max_restart_count=_max_restart_count(status) if isinstance(status, Mapping) else 0,
        job=str(labels.get(_JOB_NAME_LABEL, "")) if isinstance(labels, Mapping) else "",
        started=(status.get("phase") or "Pending") != "Pending"
        if isinstance(status, Mapping) else False,
        evidence=_evidence(pod),
    )


def _evidence(pod: Mapping[str, Any]) -> PodFailure | None:
    """The pod's failure evidence, or None when it has none (no exit code, no disruption)."""
    found = pod_failure_from_manifest(pod)
    return found if found.exit_codes or found.disruption else None
