"""The five components as a Pulumi component package, for programs in any Pulumi language.

`package/` holds `PulumiPlugin.yaml` (runtime python) and the entry point that hosts these
classes with `pulumi.provider.experimental.component_provider_host`; a program in YAML,
TypeScript or Go runs `pulumi package add <path to package/>` and creates them by type
(`jobset-infra:index:JobSet`). Pulumi's analyzer infers the package schema from the classes:

- the arguments from the `args` annotation: a TypedDict per component of serialisable fields
  (strings, numbers, lists, mappings, `Input`s of those). Another component comes in by its
  outputs, never as a Python object: a JobSet waits for `JobSetSystem.ready` and `Kueue.ready`
  (`after`), Kueue for the JobSet API's, `JobSetSystem.apiReady` (`after`); the Kubernetes
  provider comes in `options` (`providers`), as for every component;
- the outputs from the `pulumi.Output` attributes the components declare (`ready`,
  `namespace`, `clusterQueueName`, ...).

Each class here is the Python component itself, only taking the serialisable arguments and
turning them into the Python API's (`JobSetSystemArgs`, `KueueArgs`, `JobSetArgs`, ...), whose
models validate them with the same errors naming the field. Structured settings (the controller
options, Kueue's install and queues, the cluster's other fields, slice pools) are mappings with
the field names the Python models and the stack config use (`replicas`, `local_queue_name`,
`release_channel`): those models are their one declaration; the JobSet's `spec` is the JobSet
API as the API spells it (`replicatedJobs`, `failurePolicy`, ...).

No postponed annotations in this module: the analyzer reads the annotations as objects.
"""

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import pulumi

from jobset_infra.components import gke_cluster, jobset, jobset_system, kueue, tpu_slice_pools
from jobset_infra.manifests.kueue_spec import KueueInstall, QueueSpec
from jobset_infra.manifests.wire import from_wire
from jobset_infra.manifests.workload import WorkloadError
from jobset_infra.tpu.parse import parse_slice_pools_spec
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan, plan_slice_pools

__all__ = ["COMPONENTS", "PACKAGE_NAME", "GkeCluster", "JobSet", "JobSetSystem", "Kueue",
           "TpuSlicePools"]

PACKAGE_NAME = "jobset-infra"


class GkeClusterArgs(TypedDict):
    """A GKE cluster: project and location, the arguments other resources wire in, and any
    other field of the cluster spec (`jobset_infra.tpu.cluster.GkeClusterSpec`)."""

    project: pulumi.Input[str]
    """GCP project (for example a project resource's id)."""
    location: str
    """Region (regional cluster) or zone."""
    network: NotRequired[pulumi.Input[str]]
    """VPC network name or self link (default: default)."""
    subnetwork: NotRequired[pulumi.Input[str]]
    """Subnetwork name or self link."""
    node_service_account: NotRequired[pulumi.Input[str]]
    """Email of an existing node service account (default: one is created)."""
    settings: NotRequired[dict[str, Any]]
    """Other GkeClusterSpec fields by name: release_channel, private_nodes, ..."""


class GkeCluster(gke_cluster.GkeCluster):
    """A GKE cluster with Workload Identity, Dataplane V2, a CPU system pool and a provider."""

    def __init__(self, name: str, args: GkeClusterArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        args = from_wire(args)
        given: dict[str, Any] = dict(args)
        settings: Mapping[str, Any] = given.pop("settings", None) or {}
        super().__init__(name, {**settings, **given}, opts)


class TpuSlicePoolsArgs(TypedDict):
    """TPU slice pools in a cluster: the cluster by its name output, and the pools' spec."""

    cluster: pulumi.Input[str]
    """The cluster's name (GkeCluster's `name` output)."""
    spec: dict[str, Any]
    """The slice pools (`jobset_infra.tpu.spec.SlicePoolsSpec` fields: name, accelerator,
    topology, zone, cluster_location, slices, capacity, ...)."""
    project: NotRequired[pulumi.Input[str]]
    """GCP project (default: the provider's)."""
    service_account: NotRequired[pulumi.Input[str]]
    """Node service account email (GkeCluster's `nodeServiceAccount` output)."""


class TpuSlicePools(tpu_slice_pools.TpuSlicePools):
    """One node pool per TPU slice."""

    def __init__(self, name: str, args: TpuSlicePoolsArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        args = from_wire(args)
        super().__init__(name, tpu_slice_pools.TpuSlicePoolsArgs(
            cluster=args["cluster"], spec=args["spec"], project=args.get("project"),
            service_account=args.get("service_account")), opts)


class JobSetSystemArgs(TypedDict):
    """The JobSet API (our CRD) and our controller."""

    image: pulumi.Input[str]
    """Controller image with a pinned tag or digest (for example an image build's digest)."""
    controller: NotRequired[dict[str, Any]]
    """Controller options by name (`ControllerOptions`): namespace, replicas, config,
    resources, service_monitor, image_pull_policy, metrics_scrapers, api_server_cidrs,
    node_selector, tolerations, ..."""
    pools: NotRequired[list[dict[str, Any]]]
    """The cluster's TPU slice pools, declared to the controller as placement domains: the
    same SlicePoolsSpec mappings the TpuSlicePools were given."""
    retain_crd: NotRequired[bool]
    """Keep the CRD when Pulumi deletes it (default true: deleting it deletes every JobSet)."""


class JobSetSystem(jobset_system.JobSetSystem):
    """The JobSet CRD and controller: RBAC, config, a 2-replica Deployment, PDB, metrics."""

    def __init__(self, name: str, args: JobSetSystemArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        args = from_wire(args)
        super().__init__(name, jobset_system.JobSetSystemArgs(
            image=args["image"], pools=slice_pool_plans(args.get("pools") or []),
            retain_crd=args.get("retain_crd", True), **(args.get("controller") or {})), opts)


class KueueArgs(TypedDict):
    """Kueue from its chart, and queues for the TPU slice pools."""

    install: NotRequired[dict[str, Any]]
    """How Kueue is installed (`KueueInstall` fields: version, namespace, replicas,
    chart_path, image, node_selector, tolerations, ...)."""
    queues: NotRequired[dict[str, Any]]
    """The queues (`QueueSpec` fields: local_queue_name, cluster_queue_name, namespaces, ...)."""
    pools: NotRequired[list[dict[str, Any]]]
    """The slice pools whose chips the queue hands out (SlicePoolsSpec mappings)."""
    install_only: NotRequired[bool]
    """Install Kueue without queue objects (default: when no pools are given)."""
    create_namespaces: NotRequired[bool]
    """Also create the LocalQueues' namespaces (except default)."""
    placement: NotRequired[Placer]
    """Who places TPU slices in node pools: the controller, or Kueue TAS."""
    after: NotRequired[list[pulumi.Input[Any]]]
    """Outputs to wait for before Kueue starts: JobSetSystem's `apiReady` (the CRD), so Kueue's
    JobSet integration finds the API; `ready` works too, but waits for the controller's rollout."""


class Kueue(kueue.Kueue):
    """Kueue with the JobSet integration, and TPU ResourceFlavors and queues for the pools."""

    def __init__(self, name: str, args: KueueArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        args = from_wire(args)
        pools = slice_pool_plans(args.get("pools") or [])
        super().__init__(name, kueue.KueueArgs(
            pools=pools,
            install=KueueInstall(**(args.get("install") or {})),
            queues=QueueSpec(**(args.get("queues") or {})),
            install_only=args.get("install_only", not pools),
            create_namespaces=args.get("create_namespaces", False),
            placement=Placer(args.get("placement", Placer.CONTROLLER)),
            after=list(args.get("after") or [])), opts)


class JobSetArgs(TypedDict):
    """One JobSet: the JobSet API's spec as the API declares it, and what it waits for."""

    name: str
    """metadata.name."""
    spec: dict[str, Any]
    """The JobSet spec exactly as the API declares it (replicatedJobs, failurePolicy,
    successPolicy, startupPolicy, suspend, network, ...)."""
    namespace: NotRequired[str]
    """metadata.namespace (default: default)."""
    labels: NotRequired[dict[str, str]]
    annotations: NotRequired[dict[str, str]]
    queue: NotRequired[str]
    """Kueue LocalQueue name (sets the kueue.x-k8s.io/queue-name label)."""
    priority_class: NotRequired[str]
    """Kueue WorkloadPriorityClass name."""
    placement: NotRequired[Placer]
    """Who puts each TPU slice in one node pool."""
    pools: NotRequired[list[dict[str, Any]]]
    """The cluster's slice pools (SlicePoolsSpec mappings): exclusive Jobs must fit them."""
    after: NotRequired[list[pulumi.Input[Any]]]
    """Outputs to wait for: JobSetSystem's and Kueue's `ready`."""


class JobSet(jobset.JobSet):
    """One JobSet (jobset.x-k8s.io/v1alpha2), created after the API and queues it needs."""

    def __init__(self, name: str, args: JobSetArgs,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        args = from_wire(args)
        spec = dict(args["spec"])
        replicated_jobs = spec.pop("replicatedJobs", None)
        if not isinstance(replicated_jobs, list) or not replicated_jobs:
            raise WorkloadError([f"JobSet {args['name']}: spec.replicatedJobs: give at least "
                                 "one replicated job (a list, as the JobSet API declares it)"])
        super().__init__(name, jobset.JobSetArgs(
            name=args["name"], replicated_jobs=replicated_jobs, spec=spec,
            namespace=args.get("namespace", "default"), labels=args.get("labels") or {},
            annotations=args.get("annotations") or {}, queue=args.get("queue"),
            priority_class=args.get("priority_class"),
            placement=Placer(args.get("placement", Placer.CONTROLLER)),
            pools=slice_pool_plans(args.get("pools") or []),
            after=list(args.get("after") or [])), opts)


def slice_pool_plans(specs: Sequence[Mapping[str, Any]]) -> list[SlicePoolsPlan]:
    """The plans of SlicePoolsSpec mappings, each checked as TpuSlicePools checks it."""
    return [plan_slice_pools(parse_slice_pools_spec(spec)) for spec in specs]


COMPONENTS: tuple[type[pulumi.ComponentResource], ...] = (
    GkeCluster, TpuSlicePools, JobSetSystem, Kueue, JobSet)
"""What the package hosts, in the order its schema lists them."""
