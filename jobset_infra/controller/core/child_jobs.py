"""Construct child Jobs from a JobSet's replicated jobs (upstream `constructJob` and
`labelAndAnnotateObject`, jobset_controller.go l.938-1079).

Every Job is named `<jobset>-<replicatedJob>-<index>` and carries, as labels and annotations on
both the Job and its pod template, the JobSet name and UID, the replicated job name and replicas,
global replicas, job index, global index, group name, group replicas, group index, the job key
(SHA1 of `<namespace>/<jobName>`), the restart attempt and, when set, the coordinator endpoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.job_names import child_job_name
from jobset_infra.api.models import JobSet, ReplicatedJob
from jobset_infra.controller.core.identity import (
    coordinator_endpoint,
    dns_hostnames_enabled,
    job_key,
    owner_reference,
    subdomain,
)
from jobset_infra.controller.core.types import CreateJob, Manifest
from jobset_infra.controller.core.volume_claim_policy import add_claimed_volumes
from jobset_infra.placement.strategy import child_job_annotations, node_selector_strategy

__all__ = ["JobFactory", "JobIndexes", "construct_jobs", "exclusive_annotations", "pending_jobs"]


@dataclass(frozen=True, slots=True)
class JobIndexes:
    """Replica arithmetic over the spec (upstream globalReplicas/globalJobIndex/group*)."""

    global_replicas: int
    global_offset: Mapping[str, int]
    group_replicas: Mapping[str, int]
    group_offset: Mapping[str, int]

    @classmethod
    def of(cls, rjobs: Sequence[ReplicatedJob]) -> JobIndexes:
        """Return the indexes of `rjobs` in spec order."""
        total = 0
        global_offset: dict[str, int] = {}
        group_total: dict[str, int] = {}
        group_offset: dict[str, int] = {}
        for rjob in rjobs:
            global_offset[rjob.name] = total
            group_offset[rjob.name] = group_total.get(rjob.group_name, 0)
            total += rjob.replicas
            group_total[rjob.group_name] = group_total.get(rjob.group_name, 0) + rjob.replicas
        return cls(total, global_offset, group_total, group_offset)


def exclusive_annotations(js: JobSet, rjob: ReplicatedJob) -> dict[str, str]:
    """Exclusive-placement annotations the Jobs of `rjob` carry (placement decides which)."""
    return child_job_annotations(
        js.metadata.annotations or {}, _job_meta(rjob).get("annotations") or {}
    )


def _job_meta(rjob: ReplicatedJob) -> dict[str, Any]:
    meta = rjob.template.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _common_keys(
    js: JobSet, rjob: ReplicatedJob, indexes: JobIndexes, attempt: int
) -> dict[str, str]:
    """Keys that are the same for every Job of `rjob` (labels and annotations alike)."""
    keys = {
        c.JOBSET_NAME_KEY: js.name,
        c.JOBSET_UID_KEY: js.metadata.uid or "",
        c.REPLICATED_JOB_NAME_KEY: rjob.name,
        c.RESTARTS_KEY: str(attempt),
        c.REPLICATED_JOB_REPLICAS_KEY: str(rjob.replicas),
        c.GLOBAL_REPLICAS_KEY: str(indexes.global_replicas),
        c.GROUP_NAME_KEY: rjob.group_name,
        c.GROUP_REPLICAS_KEY: str(indexes.group_replicas.get(rjob.group_name, 0)),
    }
    endpoint = coordinator_endpoint(js)
    if endpoint is not None:
        keys[c.COORDINATOR_KEY] = endpoint
    return keys


def _per_job_keys(
    js: JobSet, rjob: ReplicatedJob, indexes: JobIndexes, index: int, name: str
) -> dict[str, str]:
    return {
        c.JOB_INDEX_KEY: str(index),
        c.JOB_KEY: job_key(js.namespace, name),
        c.JOB_GLOBAL_INDEX_KEY: str(indexes.global_offset[rjob.name] + index),
        c.JOB_GROUP_INDEX_KEY: str(indexes.group_offset[rjob.name] + index),
    }


def _copy(value: Any) -> Any:
    """Deep copy of JSON-like data; several times faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _add_node_selector_strategy(pod_spec: dict[str, Any], namespace: str, name: str) -> None:
    """Upstream's node-selector strategy: pin to nodes labelled for this Job, tolerate the taint."""
    selector = dict(pod_spec.get("nodeSelector") or {})
    selector[c.NAMESPACED_JOB_KEY] = f"{namespace}_{name}"
    pod_spec["nodeSelector"] = selector
    toleration = {"key": c.NO_SCHEDULE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or []), toleration]


def _construct_job(
    js: JobSet,
    rjob: ReplicatedJob,
    index: int,
    common: Mapping[str, str],
    *,
    indexes: JobIndexes,
    job_attempt: int | None,
    execution_attempt: str | None,
) -> Manifest:
    """Return one child Job manifest: labels and annotations, DNS, placement, suspend."""
    name = child_job_name(js.name, rjob.name, index)
    keys = {**common, **_per_job_keys(js, rjob, indexes, index, name)}
    if job_attempt is not None:
        keys[c.JOB_RESTART_ATTEMPT_KEY] = str(job_attempt)
    exclusive = exclusive_annotations(js, rjob)
    if execution_attempt is not None:  # an annotation only (KEP-1282)
        exclusive = {**exclusive, c.EXECUTION_ATTEMPT_KEY: execution_attempt}
    meta = _job_meta(rjob)
    spec: dict[str, Any] = _copy(rjob.template.get("spec") or {})
    pod_template = spec.setdefault("template", {})
    pod_meta = pod_template.setdefault("metadata", {})
    pod_meta["labels"] = {**(pod_meta.get("labels") or {}), **keys}
    pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **keys, **exclusive}
    pod_spec = pod_template.setdefault("spec", {})
    if dns_hostnames_enabled(js):
        pod_spec["subdomain"] = subdomain(js)
    if node_selector_strategy(exclusive):
        _add_node_selector_strategy(pod_spec, js.namespace, name)
    add_claimed_volumes(js, pod_spec)
    spec["suspend"] = js.spec.suspend is True
    return {
        "apiVersion": c.JOB_API_VERSION,
        "kind": c.JOB_KIND,
        "metadata": {
            "name": name,
            "namespace": js.namespace,
            "labels": {**(meta.get("labels") or {}), **keys},
            "annotations": {**(meta.get("annotations") or {}), **keys, **exclusive},
            "ownerReferences": [owner_reference(js)],
        },
        "spec": spec,
    }


@dataclass(frozen=True, slots=True)
class JobFactory:
    """What every Job of one replicated job shares; builds one Job's manifest when asked (the
    executor asks as it sends the create, so a pass holds only the manifests in flight)."""

    js: JobSet
    rjob: ReplicatedJob
    indexes: JobIndexes
    common: Mapping[str, str]
    execution_attempt: str | None = None

    def job_name(self, index: int) -> str:
        """The name of the Job of `index`."""
        return child_job_name(self.js.name, self.rjob.name, index)

    def build(self, index: int, job_attempt: int | None) -> Manifest:
        """The manifest of the Job of `index` (`job_attempt`: its job-restart-attempt, or None)."""
        return _construct_job(self.js, self.rjob, index, self.common, indexes=self.indexes,
                              job_attempt=job_attempt, execution_attempt=self.execution_attempt)


def pending_jobs(
    js: JobSet,
    rjob: ReplicatedJob,
    existing_names: Iterable[str] | AbstractSet[str],
    restart_attempt: int,
    job_restarts: Sequence[int] | None = None,
    *,
    execution_attempt: str | None = None,
) -> tuple[CreateJob, ...]:
    """Return a create for each Job of `rjob` that does not exist yet (upstream
    constructJobsFromTemplate), in index order, each holding its name's index and the factory
    that builds its manifest, not the manifest.

    `existing_names` holds every Job of this JobSet still present, previous attempts included: a
    Job still terminating blocks recreation of its name, which is how Recreate waits per Job.
    `job_restarts` (RestartJob gate) gives each index's job-restart-attempt; None means the gate
    is off and the label is not set. `execution_attempt` (ExecutionAttemptsTracking gate) is
    the execution-attempt annotation's value; None leaves it out. Pure.
    """
    names = existing_names if isinstance(existing_names, AbstractSet) else set(existing_names)
    indexes = JobIndexes.of(js.spec.replicated_jobs)
    factory = JobFactory(js, rjob, indexes, _common_keys(js, rjob, indexes, restart_attempt),
                         execution_attempt)
    creates: list[CreateJob] = []
    jobset_name, rjob_name = js.name, rjob.name  # read once: this loop runs over every replica
    for index in range(rjob.replicas):
        if child_job_name(jobset_name, rjob_name, index) in names:
            continue
        attempt = None
        if job_restarts is not None:
            attempt = job_restarts[index] if index < len(job_restarts) else 0
        creates.append(CreateJob(factory, index, attempt))
    return tuple(creates)


def construct_jobs(
    js: JobSet,
    rjob: ReplicatedJob,
    existing_names: Iterable[str] | AbstractSet[str],
    restart_attempt: int,
    job_restarts: Sequence[int] | None = None,
    *,
    execution_attempt: str | None = None,
) -> tuple[Manifest, ...]:
    """Return the manifests of the Jobs `pending_jobs` would create, built. Pure."""
    creates = pending_jobs(js, rjob, existing_names, restart_attempt, job_restarts,
                           execution_attempt=execution_attempt)
    return tuple(create.manifest for create in creates)
