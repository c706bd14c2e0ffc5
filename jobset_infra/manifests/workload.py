"""Training workloads as JobSets: the TPU-aware decisions, as pure functions over plain data.

`plan_workload(spec)` turns a `WorkloadSpec` (replicated jobs, some of them `TpuJob`s that say
"this container on N slices of these pools") into a validated `WorkloadPlan`: the JobSet manifest,
its child Job names and the chips it asks for. For a TPU job it derives what users get wrong by
hand: replicas = slices, parallelism = completions = hosts per slice, the `google.com/tpu` request
and limit (all chips of a VM), the TPU toleration, the accelerator/topology nodeSelector, the
slice placement (exclusive placement on `cloud.google.com/gke-nodepool` by our controller, or,
with `placement=Placer.KUEUE_TAS`, Kueue's slice topology annotations: slices of `hosts` pods,
each in one node pool), the TPU ports, and hostNetwork with ClusterFirstWithHostNet DNS. It
checks the request against the pools (more slices or chips than exist), then the JobSet the way
the cluster would (`api.check`: the CRD's schema and CEL rules, unknown fields, upstream's
defaulting and webhook rules). Problems are reported together, each naming its argument.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api import constants as k
from jobset_infra.api import kueue_tas as tas
from jobset_infra.api import names
from jobset_infra.api.check import check_jobset
from jobset_infra.api.job_names import child_job_name
from jobset_infra.api.models import (
    Coordinator,
    FailurePolicy,
    JobSetSpec,
    Network,
    ReplicatedJob,
    SuccessPolicy,
)
from jobset_infra.manifests.jobset_spec_fields import (
    OWNED_SPEC_FIELDS,
    spec_field_problems,
    spec_fields,
)
from jobset_infra.manifests.meta import require_dns_label
from jobset_infra.manifests.tpu_pod import tpu_pod_spec
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import SLICE_DOMAIN_LABEL, Placer
from jobset_infra.tpu.pools import SlicePoolsPlan
from jobset_infra.tpu.slice import TpuSlice

__all__ = [
    "TpuJob",
    "TpuTarget",
    "WorkloadError",
    "WorkloadPlan",
    "WorkloadSpec",
    "child_job_names",
    "jobset_problems",
    "plan_workload",
    "tas_slice_annotations",
]

class WorkloadError(ValueError):
    """One or more problems with a workload; each line names the argument and the fix."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


@dataclass(frozen=True)
class TpuTarget:
    """The TPU slices a job may run on: their shape, how many exist, how pods reach them."""

    slice: TpuSlice
    slices: int
    """Slices (= node pools) that exist for this shape."""
    node_selector: Mapping[str, str]
    tolerations: tuple[Mapping[str, str], ...]
    pools: tuple[str, ...] = ()
    """Node-pool names, when known (from a SlicePoolsPlan)."""

    @classmethod
    def from_plan(cls, plan: SlicePoolsPlan) -> TpuTarget:
        """Return the target of a `TpuSlicePools` plan (its capacity labels select its nodes)."""
        return cls(
            slice=plan.slice,
            slices=plan.slices,
            node_selector={**plan.flavor_node_labels, **plan.capacity_node_labels},
            tolerations=plan.tolerations,
            pools=plan.pool_names,
        )

    @classmethod
    def from_slice(cls, tpu_slice: TpuSlice, slices: int) -> TpuTarget:
        """Return a target of `slices` slices of one shape (pools created elsewhere)."""
        return cls(tpu_slice, slices, dict(tpu_slice.node_labels), (tpu_slice.toleration,))

    @property
    def total_chips(self) -> int:
        """Return the chips of every slice of the target."""
        return self.slices * self.slice.chips


@dataclass(frozen=True)
class TpuJob:
    """A replicated job running one container on whole TPU slices, one pod per TPU VM."""

    name: str
    container: Mapping[str, Any]
    """A Kubernetes Container (camelCase keys); TPU resources and ports are added to it."""
    target: TpuTarget
    slices: int | None = None
    """Slices to use (= replicas); None = every slice of the target."""
    host_network: bool = True
    """hostNetwork + ClusterFirstWithHostNet DNS, as XPK and JobSet's TPU examples run."""
    backoff_limit: int = 0
    """Pod failures a child Job tolerates; 0 lets the JobSet failure policy restart all slices."""
    group_name: str | None = None
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    service_account_name: str | None = None
    termination_grace_period_seconds: int | None = None


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """A JobSet as its author thinks of it: replicated jobs, policies, queue.

    The one author-facing description of a JobSet: the Pulumi `JobSetArgs` extends it with
    where and after what to create it, rather than restating these fields.
    """

    name: str
    replicated_jobs: Sequence[TpuJob | ReplicatedJob | Mapping[str, Any]]
    namespace: str = "default"
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    failure_policy: FailurePolicy | Mapping[str, Any] | None = None
    success_policy: SuccessPolicy | Mapping[str, Any] | None = None
    network: Network | Mapping[str, Any] | None = None
    coordinator: Coordinator | Mapping[str, Any] | None = None
    ttl_seconds_after_finished: int | None = None
    queue: str | None = None
    """Kueue LocalQueue name; sets the kueue.x-k8s.io/queue-name label."""
    priority_class: str | None = None
    """Kueue WorkloadPriorityClass name; sets the kueue.x-k8s.io/priority-class label."""
    placement: Placer = Placer.CONTROLLER
    """Who puts each TPU slice in one node pool: the controller (exclusive-topology annotation)
    or Kueue TAS (slice topology annotations; the queue's flavors must name a Topology)."""
    spec: JobSetSpec | Mapping[str, Any] | None = None
    """Any other field of the JobSet spec, exactly as the API declares it (`api.models.JobSetSpec`
    or its wire mapping: startupPolicy, suspend, managedBy, volumeClaimPolicies, ...): set as
    given, so a field the API gains is settable with no change here. The fields above are added
    on top; the replicated jobs come from `replicated_jobs` only."""


@dataclass(frozen=True)
class WorkloadPlan:
    """The validated JobSet and what it implies."""

    manifest: Mapping[str, Any]
    """The JobSet manifest to apply (not defaulted: the CRD defaults it)."""
    child_job_names: tuple[str, ...]
    tpu_chips: int
    """google.com/tpu chips all pods together request."""

    @property
    def name(self) -> str:
        """Return metadata.name."""
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str:
        """Return metadata.namespace."""
        return str(self.manifest["metadata"]["namespace"])


def plan_workload(spec: WorkloadSpec) -> WorkloadPlan:
    """Return the JobSet for `spec`, validated; raise WorkloadError listing every problem."""
    problems = list(_spec_problems(spec))
    if problems:
        raise WorkloadError(problems)
    manifest = _manifest(spec)
    problems = jobset_problems(manifest)
    if problems:
        raise WorkloadError(problems)
    return WorkloadPlan(
        manifest=manifest,
        child_job_names=child_job_names(manifest),
        tpu_chips=sum(_chips(job) for job in spec.replicated_jobs),
    )


def child_job_names(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """Return the names of the child Jobs: `<jobset>-<replicatedJob>-<index>`."""
    name = manifest["metadata"]["name"]
    return tuple(
        child_job_name(name, rjob["name"], index)
        for rjob in manifest["spec"]["replicatedJobs"]
        for index in range(int(rjob.get("replicas", 1)))
    )


# --- checks before building ---------------------------------------------------------------------


_POLICY_FIELDS = (
    ("failure_policy", FailurePolicy),
    ("success_policy", SuccessPolicy),
    ("network", Network),
    ("coordinator", Coordinator),
)


def _policy_type_problems(spec: WorkloadSpec) -> list[str]:
    """A policy that is neither its api model nor a mapping (e.g. a list) is named, not a crash."""
    return [
        f"{name}: {type(value).__name__} is not a {model.__name__}; pass an api {model.__name__} "
        "or its manifest mapping"
        for name, model in _POLICY_FIELDS
        if (value := getattr(spec, name)) is not None and not isinstance(value, model | Mapping)
    ]


def _spec_problems(spec: WorkloadSpec) -> list[str]:
    problems: list[str] = []
    try:
        require_dns_label(spec.namespace, "namespace")
    except ValueError as exc:
        problems.append(str(exc))
    if not spec.replicated_jobs:
        problems.append("replicated_jobs: give at least one replicated job")
    for index, job in enumerate(spec.replicated_jobs):
        if isinstance(job, TpuJob):
            problems += _tpu_job_problems(f"replicated_jobs[{index}]", job)
        elif not isinstance(job, ReplicatedJob | Mapping):
            problems.append(
                f"replicated_jobs[{index}]: {type(job).__name__} is not a replicated job; pass "
                "tpu_job(...), an api ReplicatedJob or its manifest mapping"
            )
    problems += _policy_type_problems(spec)
    owned = {name: getattr(spec, name) for name in OWNED_SPEC_FIELDS.values()}
    problems += spec_field_problems(spec.spec, owned)
    problems += _capacity_problems(spec)
    if spec.queue is None and spec.priority_class is not None:
        problems.append(
            "priority_class: a Kueue priority class needs a queue; set queue as well"
        )
    problems += _kueue_name_problems(spec)
    return problems


def _kueue_name_problems(spec: WorkloadSpec) -> list[str]:
    """Return problems of queue / priority_class: object names that become label values."""
    problems = []
    for field_name, value in (("queue", spec.queue), ("priority_class", spec.priority_class)):
        if value is None:
            continue
        # Kueue object names (DNS subdomains) that also have to be valid label values.
        errors = names.dns1123_subdomain(value) + names.label_value(value)
        if errors:
            problems.append(
                f"{field_name}: {value!r} is not a Kueue object name usable as a label value: "
                f"{'; '.join(dict.fromkeys(errors))}"
            )
    return problems


def _tpu_job_problems(where: str, job: TpuJob) -> list[str]:
    problems = []
    if _slices(job) < 1:
        problems.append(f"{where}.slices: {_slices(job)} is less than 1; use at least one slice")
    if job.backoff_limit < 0:
        problems.append(f"{where}.backoff_limit: {job.backoff_limit} is negative")
    limits = (job.container.get("resources") or {}).get("limits") or {}
    requests = (job.container.get("resources") or {}).get("requests") or {}
    chips = job.target.slice.tpu_request
    for kind, values in (("limits", limits), ("requests", requests)):
        given = values.get(tpu.TPU_RESOURCE)
        if given is not None and str(given) != str(chips):
            problems.append(
                f"{where}.container.resources.{kind}: {tpu.TPU_RESOURCE} {given} does not match "
                f"the {chips} chips of a {job.target.slice.vm_type} VM; leave it out (it is "
                "derived)"
            )
    return problems


def _capacity_problems(spec: WorkloadSpec) -> list[str]:
    """Return problems of TPU jobs asking for more slices than their pools have, together."""
    targets: dict[tuple[TpuSlice, tuple[str, ...], int], TpuTarget] = {}
    used: dict[tuple[TpuSlice, tuple[str, ...], int], list[tuple[int, int]]] = {}
    for index, job in enumerate(spec.replicated_jobs):
        if isinstance(job, TpuJob):
            key = (job.target.slice, job.target.pools, job.target.slices)
            targets[key] = job.target
            used.setdefault(key, []).append((index, _slices(job)))
    problems = []
    for key, jobs in used.items():
        target = targets[key]
        total = sum(slices for _, slices in jobs)
        if total > target.slices:
            where = ", ".join(f"replicated_jobs[{i}].slices={n}" for i, n in jobs)
            problems.append(
                f"{where}: {total} slices ({total * target.slice.chips} chips) of "
                f"{target.slice.describe()} requested, only {target.slices} exist "
                f"({target.total_chips} chips); lower slices or add pools"
            )
    return problems


def _slices(job: TpuJob) -> int:
    return job.target.slices if job.slices is None else job.slices


def _chips(job: TpuJob | ReplicatedJob | Mapping[str, Any]) -> int:
    if not isinstance(job, TpuJob):
        return 0
    return _slices(job) * job.target.slice.chips


# --- building -----------------------------------------------------------------------------------


def _manifest(spec: WorkloadSpec) -> dict[str, Any]:
    tpu_jobs = [job for job in spec.replicated_jobs if isinstance(job, TpuJob)]
    only_tpu = bool(tpu_jobs) and len(tpu_jobs) == len(spec.replicated_jobs)
    annotations = dict(spec.annotations)
    by_controller = Placer(spec.placement) is Placer.CONTROLLER
    if only_tpu and by_controller:
        # One slice per child Job, one child Job per node pool: the whole JobSet is exclusive.
        annotations.setdefault(k.EXCLUSIVE_KEY, tpu.GKE_NODEPOOL_LABEL)
    metadata: dict[str, Any] = {
        "name": spec.name,
        "namespace": spec.namespace,
        "labels": {**spec.labels, **_kueue_labels(spec)},
    }
    if annotations:
        metadata["annotations"] = annotations
    if not metadata["labels"]:
        del metadata["labels"]
    rjobs = [_replicated_job(job, per_job=not only_tpu, by_controller=by_controller)
             for job in spec.replicated_jobs]
    body: dict[str, Any] = {**spec_fields(spec.spec), "replicatedJobs": rjobs}
    for key, value in (
        ("network", spec.network),
        ("successPolicy", spec.success_policy),
        ("failurePolicy", spec.failure_policy),
        ("coordinator", spec.coordinator),
    ):
        if value is not None:
            body[key] = value if isinstance(value, Mapping) else value.to_dict()
    if spec.ttl_seconds_after_finished is not None:
        body["ttlSecondsAfterFinished"] = spec.ttl_seconds_after_finished
    return {"apiVersion": k.API_VERSION, "kind": k.KIND, "metadata": metadata, "spec": body}


def _kueue_labels(spec: WorkloadSpec) -> dict[str, str]:
    labels = {}
    if spec.queue is not None:
        labels[k.KUEUE_QUEUE_NAME_LABEL] = spec.queue
    if spec.priority_class is not None:
        labels[k.KUEUE_PRIORITY_CLASS_LABEL] = spec.priority_class
    return labels


def _replicated_job(
    job: TpuJob | ReplicatedJob | Mapping[str, Any], *, per_job: bool, by_controller: bool
) -> dict[str, Any]:
    if isinstance(job, ReplicatedJob):
        return job.to_dict()
    if not isinstance(job, TpuJob):
        return copy.deepcopy(dict(job))
    hosts = job.target.slice.hosts
    template: dict[str, Any] = {
        "spec": {
            "parallelism": hosts,
            "completions": hosts,
            # TPU_WORKER_ID / TPU_WORKER_HOSTNAMES come from GKE's webhook for Indexed Jobs.
            "completionMode": k.COMPLETION_MODE_INDEXED,
            "backoffLimit": job.backoff_limit,
            "template": {"spec": tpu_pod_spec(job)},
        }
    }
    pod_meta: dict[str, Any] = {}
    if job.pod_labels:
        pod_meta["labels"] = dict(job.pod_labels)
    if not by_controller:
        pod_meta["annotations"] = tas_slice_annotations(hosts)
    if pod_meta:
        template["spec"]["template"]["metadata"] = pod_meta
    if per_job and by_controller:
        # Mixed with CPU jobs: only the TPU job's child Jobs each take a whole node pool.
        template["metadata"] = {"annotations": {k.EXCLUSIVE_KEY: tpu.GKE_NODEPOOL_LABEL}}
    rjob: dict[str, Any] = {"name": job.name, "replicas": _slices(job), "template": template}
    if job.group_name is not None:
        rjob["groupName"] = job.group_name
    return rjob


def tas_slice_annotations(hosts: int) -> dict[str, str]:
    """Return the pod-template annotations by which Kueue TAS keeps each slice of `hosts` pods
    (one child Job) inside one node pool. Slices of a whole pool's hosts, whose pods take every
    chip of their node, leave no room for a second slice there."""
    return {
        tas.PODSET_SLICE_REQUIRED_TOPOLOGY: SLICE_DOMAIN_LABEL,
        tas.PODSET_SLICE_SIZE: str(hosts),
    }


# --- checks after building ----------------------------------------------------------------------


def jobset_problems(manifest: Mapping[str, Any]) -> list[str]:
    """Return what the API server (our CRD's schema) and upstream's webhook rules would reject."""
    return [str(error) for error in check_jobset(dict(manifest)).errors]
