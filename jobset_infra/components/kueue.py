"""`Kueue`: Kueue from its pinned Helm chart, with queues derived from the TPU slice pools.

The shell around `jobset_infra.manifests.kueue_install` and `kueue_queues`: validate (pure, raises
at preview), then create

1. Kueue itself, from the OCI chart as a Helm release (`helm.v3.Release`), or from a local chart
   folder (`KueueInstall.chart_path`, for air-gapped clusters and the local cluster) as a
   `helm.v4.Chart` in its own Namespace. Either waits for its resources, and Kueue's Deployment
   turns Available only when its /readyz passes, which Kueue gates on its webhook certificates
   and webhook server (reference kueue-and-pulumi.md §A1). So the install completes only once
   Kueue's webhooks serve;
2. the queue objects, each `depends_on` the install: every Kueue kind goes through a
   `failurePolicy: Fail` webhook, and creating them earlier would fail. Inside the group a
   ClusterQueue follows the flavors, priority classes and admission check it names, and
   LocalQueues follow their ClusterQueue.

Why a Release for the OCI chart: a Release is one resource whose completion means "all of Kueue
is up", which is exactly the dependency queues need. A local chart folder is what
helm.v4.Chart takes; `depends_on` a Chart waits for every object it rendered.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from jobset_infra.api import constants as k
from jobset_infra.components.inputs import once_resolved
from jobset_infra.components.k8s_objects import kubernetes_object
from jobset_infra.components.providers import (
    explicit_dependencies,
    is_kubernetes_provider,
    kubernetes_provider,
)
from jobset_infra.manifests.kueue_install import KUEUE_CHART, helm_values
from jobset_infra.manifests.kueue_queues import QueueObjects, namespace_manifest, queue_objects
from jobset_infra.manifests.kueue_spec import KueueInstall, QueueSpec, check_queue_namespaces
from jobset_infra.manifests.meta import Manifest
from jobset_infra.manifests.placement_domains import pool_plans
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan

__all__ = ["Kueue", "KueueArgs", "validate_args"]

TYPE_TOKEN = "jobset-infra:index:Kueue"
# Helm --wait limit: image pulls and certificate generation on a fresh cluster take minutes.
RELEASE_TIMEOUT_SECONDS = 600


@dataclass(frozen=True)
class KueueArgs:
    """Arguments of `Kueue`; validated before anything is created."""

    pools: Sequence[SlicePoolsPlan | Any] = ()
    """Slice pools (`TpuSlicePools` or their `.plan`) whose chips the queue hands out."""
    provider: pulumi.ProviderResource | None = None
    """Kubernetes provider of the target cluster, if not given in opts (`ResourceOptions(
    providers=[...])`, the Pulumi way); never the ambient kubeconfig."""
    queues: QueueSpec = field(default_factory=QueueSpec)
    install: KueueInstall = field(default_factory=KueueInstall)
    create_namespaces: bool = False
    """Also create the LocalQueues' namespaces (except `default`); off when others own them."""
    install_only: bool = False
    """Install Kueue without queue objects (a cluster with no TPU pools, e.g. the local stack)."""
    placement: Placer = Placer.CONTROLLER
    """Who places TPU slices in node pools: the controller, or Kueue TAS (then a Topology of
    node pools and hosts, named by every flavor). JobSets queued here must ask for the same."""
    after: Sequence[pulumi.Input[Any]] = ()
    """Outputs to wait for before installing, where the components themselves are not at hand
    (a program in another language passes `JobSetSystem.ready`): so Kueue's JobSet integration
    finds the API when it starts. In Python, `depends_on=[system]` in opts does the same."""


def _check_chart(folder: Path, version: str) -> None:
    chart = folder / "Chart.yaml"
    if not chart.exists() and pulumi.runtime.is_dry_run():
        # `jobset-infra plan` on a machine without the chart: the real engine would fail here.
        pulumi.log.warn(f"kueue.install.chart_path: {folder} does not exist (fine for an "
                        "offline preview)")
        return
    try:
        found = (yaml.safe_load(chart.read_text()) or {}).get("version")
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(
            f"kueue.install.chart_path: {folder} is not a Helm chart folder ({err}); point it at "
            "Kueue's charts/kueue (`go mod download -json sigs.k8s.io/kueue@v<version>` prints the "
            "module's Dir)"
        ) from None
    if str(found) != version:
        raise ValueError(
            f"kueue.install.chart_path: {chart} is chart version {found}, but "
            f"kueue.install.version is {version}; use the chart of that release or change the "
            "version"
        )


def validate_args(args: KueueArgs) -> QueueObjects | None:
    """Return the queue objects; raise QueueError / ValueError naming the bad field."""
    if not is_kubernetes_provider(args.provider):
        raise ValueError(
            "provider: pass the target cluster's pulumi_kubernetes.Provider (e.g. "
            "GkeCluster.provider); Kueue never uses the ambient kubeconfig"
        )
    if args.install.chart_path is not None:
        _check_chart(Path(args.install.chart_path).expanduser(), args.install.version)
    if args.install_only:
        return None
    check_queue_namespaces(args.queues, args.install)
    return queue_objects(args.queues, pool_plans(args.pools), Placer(args.placement))


class Kueue(pulumi.ComponentResource):
    """Kueue with the JobSet integration, and TPU ResourceFlavors and queues for the pools."""

    cluster_queue_name: pulumi.Output[str]
    """The ClusterQueue holding the TPU quota."""
    local_queue_name: pulumi.Output[str]
    """The LocalQueue name, the same in every namespace; JobSets set it as their queue label."""
    queue_label: pulumi.Output[str]
    """The label key JobSets put the LocalQueue name under."""
    flavor_names: pulumi.Output[list[str]]
    """The ResourceFlavors, one per slice shape and capacity kind."""
    ready: pulumi.Output[bool]
    """Resolves once Kueue serves and every queue object exists."""
    # Only Output attributes are annotated in the class body: they are the component's outputs,
    # and Pulumi's analyzer reads the package schema from them (jobset_infra.components.package).

    def __init__(
        self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        args = replace(args, provider=kubernetes_provider("Kueue", args.provider, opts))
        super().__init__(TYPE_TOKEN, name, None, opts)
        objects = validate_args(args)  # before any child exists: bad arguments fail preview
        self._name = name
        self._provider = args.provider
        self._after = list(args.after)
        # Who places slices admitted through these queues (KueueArgs.placement).
        self.placement: Placer = Placer(args.placement)
        after = explicit_dependencies(opts)
        installed = (self._chart(args.install, after) if args.install.chart_path is not None
                     else self._release(args.install, after))
        namespaces = self._namespaces(args) if args.create_namespaces else []
        queue_resources = self._queues(objects, installed, namespaces) if objects else []
        # The Helm release or chart; complete once Kueue's webhooks serve. Unqueued JobSets wait
        # for it: Kueue's JobSet webhook (failurePolicy Fail) sees them too.
        self.installed: pulumi.Resource = installed
        # `depends_on` these (or the component) before creating queued JobSets.
        self.ready_resources: list[pulumi.Resource] = [installed, *queue_resources]
        self.cluster_queue_name = pulumi.Output.from_input(args.queues.cluster_queue_name)
        self.local_queue_name = pulumi.Output.from_input(args.queues.local_queue_name)
        self.queue_label = pulumi.Output.from_input(k.KUEUE_QUEUE_NAME_LABEL)
        self.flavor_names = pulumi.Output.from_input(
            [f.name for f in objects.flavors] if objects else []
        )
        self.ready = pulumi.Output.all(*(_done(r) for r in self.ready_resources)).apply(
            lambda _: True
        )
        self.register_outputs(
            {
                "clusterQueueName": self.cluster_queue_name,
                "localQueueName": self.local_queue_name,
                "queueLabel": self.queue_label,
                "flavorNames": self.flavor_names,
                "ready": self.ready,
            }
        )

    def _options(self, depends_on: Sequence[pulumi.Resource]) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, provider=self._provider, depends_on=list(depends_on)
        )

    def _release(
        self, install: KueueInstall, after: Sequence[pulumi.Resource]
    ) -> k8s.helm.v3.Release:
        return k8s.helm.v3.Release(
            f"{self._name}-kueue",
            name=install.release_name,
            chart=KUEUE_CHART,
            version=install.version,
            namespace=install.namespace,
            create_namespace=True,
            values=once_resolved(self._after, helm_values(install)),
            timeout=RELEASE_TIMEOUT_SECONDS,
            opts=self._options(after),
        )

    def _chart(self, install: KueueInstall, after: Sequence[pulumi.Resource]) -> k8s.helm.v4.Chart:
        assert install.chart_path is not None
        namespace = self._create(namespace_manifest(install.namespace), after)
        return k8s.helm.v4.Chart(
            f"{self._name}-kueue",
            chart=str(Path(install.chart_path).expanduser()),
            name=install.release_name,
            namespace=install.namespace,
            values=once_resolved(self._after, helm_values(install)),
            opts=self._options([namespace, *after]),
        )

    def _namespaces(self, args: KueueArgs) -> list[pulumi.CustomResource]:
        return [
            self._create(namespace_manifest(ns), [])
            for ns in args.queues.namespaces
            if ns != "default"
        ]

    def _queues(
        self,
        objects: QueueObjects,
        release: pulumi.Resource,
        namespaces: Sequence[pulumi.Resource],
    ) -> list[pulumi.CustomResource]:
        topologies = [self._create(m, [release]) for m in objects.topologies]
        # A TAS flavor names its Topology: create that first.
        flavors = [self._create(m, [release, *topologies]) for m in objects.resource_flavors]
        named = [*objects.priority_classes, *objects.provisioning]
        referenced = [*topologies, *flavors, *(self._create(m, [release]) for m in named)]
        cluster_queue = self._create(objects.cluster_queue, [release, *referenced])
        local_queues = [
            self._create(m, [release, cluster_queue, *namespaces]) for m in objects.local_queues
        ]
        return [*referenced, cluster_queue, *local_queues]

    def _create(
        self, manifest: Manifest, depends_on: Sequence[pulumi.Resource]
    ) -> pulumi.CustomResource:
        meta = manifest["metadata"]
        scope = f"{meta['namespace']}-" if "namespace" in meta else ""
        key = f"{self._name}-{manifest['kind'].lower()}-{scope}{meta['name']}"
        return kubernetes_object(key, manifest, self._options(depends_on))


def _done(resource: pulumi.Resource) -> pulumi.Output[Any]:
    """An output that resolves once `resource` is created (a Chart: once it rendered all)."""
    if isinstance(resource, pulumi.CustomResource):
        return resource.id
    if isinstance(resource, k8s.helm.v4.Chart):
        return resource.resources
    return resource.urn
