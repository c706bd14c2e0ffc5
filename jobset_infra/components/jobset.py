"""`JobSet`: a training workload as a JobSet custom resource, checked at preview.

The shell around `jobset_infra.manifests.workload`: `plan_workload` derives the TPU settings and
validates the JobSet (api defaulting + validation, the CRD's schema and CEL rules, slices and
chips against the pools) before anything is registered; this component then creates that one
object through the explicit Kubernetes provider, after the JobSet API is served (`JobSetSystem`)
and, for a queued JobSet, after Kueue's queues exist.

    jax = JobSet("train", JobSetArgs(
        provider=cluster.provider,
        name="train",
        replicated_jobs=[tpu_job(pools, {"name": "jax", "image": IMAGE, "command": [...]})],
        failure_policy={"maxRestarts": 3},
        queue="tpu-queue", system=system, kueue=kueue,
    ))
"""

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from jobset_infra.components.inputs import once_resolved
from jobset_infra.components.jobset_system import JobSetSystem
from jobset_infra.components.kueue import Kueue
from jobset_infra.components.providers import is_kubernetes_provider, kubernetes_provider
from jobset_infra.components.tpu_slice_pools import TpuSlicePools
from jobset_infra.manifests.placement_domains import pool_domains, pool_plans
from jobset_infra.manifests.workload import (
    TpuJob,
    TpuTarget,
    WorkloadError,
    WorkloadPlan,
    WorkloadSpec,
    plan_workload,
)
from jobset_infra.placement.slice_modes import slice_placement_problems
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan
from jobset_infra.tpu.slice import TpuSlice

__all__ = ["JobSet", "JobSetArgs", "tpu_job", "tpu_target"]

TYPE_TOKEN = "jobset-infra:index:JobSet"
TTL_WARNING = (
    "JobSet {name}: ttl_seconds_after_finished deletes the finished JobSet, and the next "
    "`pulumi up` creates it again (running the job again); leave it unset for JobSets Pulumi "
    "manages, or `pulumi refresh` before `pulumi up`"
)

SliceSource = TpuSlicePools | SlicePoolsPlan | TpuTarget | tuple[TpuSlice, int]
"""Where TPU jobs run: a TpuSlicePools component, its plan, or (a slice shape, a slice count)."""


def tpu_target(source: SliceSource) -> TpuTarget:
    """Return the slices a TPU job may use, from pools, a plan or (slice, count)."""
    if isinstance(source, TpuSlicePools):
        return TpuTarget.from_plan(source.plan)
    if isinstance(source, SlicePoolsPlan):
        return TpuTarget.from_plan(source)
    if isinstance(source, TpuTarget):
        return source
    tpu_slice, slices = source
    return TpuTarget.from_slice(tpu_slice, slices)


def tpu_job(
    source: SliceSource,
    container: Mapping[str, Any],
    *,
    name: str = "slice",
    slices: int | None = None,
    host_network: bool = True,
    backoff_limit: int = 0,
) -> TpuJob:
    """Return a replicated job running `container` on `slices` slices (default: all of them)."""
    return TpuJob(
        name=name,
        container=container,
        target=tpu_target(source),
        slices=slices,
        host_network=host_network,
        backoff_limit=backoff_limit,
    )


@dataclass(frozen=True, kw_only=True)
class JobSetArgs(WorkloadSpec):
    """Arguments of `JobSet`: the workload (`WorkloadSpec`'s fields: name, replicated_jobs,
    namespace, labels, annotations, policies, network, coordinator, ttl, queue, priority class)
    plus where and after what to create it.

    `replicated_jobs` takes `tpu_job(...)` entries and plain replicated jobs (api models or
    manifests); the policy fields take the api models or their wire mappings.
    """

    provider: pulumi.ProviderResource | None = None
    """Kubernetes provider of the target cluster, if not given in opts (`ResourceOptions(
    providers=[...])`, the Pulumi way); never the ambient kubeconfig."""
    system: JobSetSystem | None = None
    """The JobSet API and controller; the JobSet is created once they are ready."""
    kueue: Kueue | None = None
    """Kueue, if the cluster runs it: a queued JobSet is created once Kueue serves and its queues
    exist, an unqueued one once Kueue's webhooks serve (they see every JobSet)."""
    pools: Sequence[TpuSlicePools | SlicePoolsPlan] = ()
    """The cluster's slice pools (as declared to the controller): the JobSet's exclusive Jobs
    must fit them, checked at preview by the allocator the controller places them with
    (`jobset_infra.placement.placement_problems`); TpuSlicePools given here are also waited for
    (and so outlive the JobSet on `pulumi destroy`)."""
    depends_on: Sequence[pulumi.Resource] = ()
    """More prerequisites."""
    after: Sequence[pulumi.Input[Any]] = ()
    """Outputs to wait for, where the components themselves are not at hand: a program in
    another language passes `JobSetSystem.ready` and `Kueue.ready` (the component package takes
    other components by their outputs). The JobSet's inputs take their dependencies."""


def plan_args(args: JobSetArgs) -> WorkloadPlan:
    """Return the validated workload; raise WorkloadError naming the JobSet and each field."""
    if not is_kubernetes_provider(args.provider):
        raise WorkloadError(
            [
                f"JobSet {args.name}: provider: pass the target cluster's "
                "pulumi_kubernetes.Provider (e.g. GkeCluster.provider); JobSet never uses the "
                "ambient kubeconfig"
            ]
        )
    try:
        plan = plan_workload(args)
        problems = _placement_problems(plan, args)
    except WorkloadError as exc:
        problems = list(exc.problems)
    except ValueError as exc:  # pools that are neither plans nor TpuSlicePools
        problems = [str(exc)]
    if problems:
        raise WorkloadError([f"JobSet {args.name}: {p}" for p in problems])
    return plan


def _placement_problems(plan: WorkloadPlan, args: JobSetArgs) -> list[str]:
    placer = Placer(args.placement)
    if args.kueue is not None and args.queue is not None and args.kueue.placement is not placer:
        return [f"placement: {placer.value}, but Kueue's queues were made for placement "
                f"{args.kueue.placement.value} (KueueArgs.placement); a JobSet asks for the "
                "placement of the queue it is admitted through"]
    domains = pool_domains(pool_plans(args.pools))
    return slice_placement_problems(plan.manifest, domains, placer)


class JobSet(pulumi.ComponentResource):
    """One JobSet (jobset.x-k8s.io/v1alpha2), created after the API and queues it needs."""

    # Only Output attributes are annotated in the class body: they are the component's outputs,
    # and Pulumi's analyzer reads the package schema from them (jobset_infra.components.package).
    name: pulumi.Output[str]
    namespace: pulumi.Output[str]
    child_job_names: pulumi.Output[list[str]]
    """`<jobset>-<replicatedJob>-<index>` of every child Job."""
    tpu_chips: pulumi.Output[int]

    def __init__(
        self, name: str, args: JobSetArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        try:
            provider = kubernetes_provider("JobSet", args.provider, opts)
        except ValueError as exc:
            raise WorkloadError([f"JobSet {args.name}: {exc}"]) from None
        args = dataclasses.replace(args, provider=provider)
        plan = plan_args(args)  # before anything is registered: a bad spec fails preview
        super().__init__(TYPE_TOKEN, name, None, opts)
        if args.ttl_seconds_after_finished is not None:
            pulumi.log.warn(TTL_WARNING.format(name=plan.name), resource=self)
        self.plan: WorkloadPlan = plan  # the validated manifest and what it implies
        manifest = plan.manifest
        self.resource = k8s.apiextensions.CustomResource(
            name,
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=once_resolved(args.after, manifest["metadata"]),
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.provider,
                depends_on=_prerequisites(args),
                # A JobSet's replicated jobs are immutable: a changed spec means a new JobSet.
                replace_on_changes=["spec"],
                delete_before_replace=True,
            ),
        )
        self.name = pulumi.Output.from_input(plan.name)
        self.namespace = pulumi.Output.from_input(plan.namespace)
        self.child_job_names = pulumi.Output.from_input(list(plan.child_job_names))
        self.tpu_chips = pulumi.Output.from_input(plan.tpu_chips)
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "childJobNames": self.child_job_names,
                "tpuChips": self.tpu_chips,
            }
        )


def _prerequisites(args: JobSetArgs) -> list[pulumi.Resource]:
    """Return what must exist first: the API and controller, Kueue's queues, the slice pools."""
    found: list[pulumi.Resource] = list(args.depends_on)
    found += [pools for pools in args.pools if isinstance(pools, TpuSlicePools)]
    if args.system is not None:
        found += args.system.ready_resources
    if args.kueue is not None and args.queue is not None:
        found += args.kueue.ready_resources
    elif args.kueue is not None:
        # Kueue's JobSet webhook (failurePolicy Fail) sees every JobSet in the namespaces it
        # manages, queued or not: created while Kueue starts, an unqueued JobSet is refused.
        found.append(args.kueue.installed)
    return found
