"""`JobSetSystem`: the JobSet API (our CRD) and our Python controller, installed in one step.

The shell around `jobset_infra.manifests.jobset_system`: validate the arguments (pure, raises at
preview), render every object, then create them with `parent=self` through the explicit
Kubernetes provider, in this order:

1. the CRD and the namespace;
2. ServiceAccount, RBAC and the config file (namespaced ones after the namespace);
3. the Deployment, after the CRD and everything it mounts or runs as. pulumi-kubernetes awaits a
   Deployment until its pods are Available, so the Deployment resource completes only once the
   controller answers /readyz;
4. the PDB, the metrics Service and the optional ServiceMonitor.

`ready` resolves after the CRD and the awaited Deployment; a JobSet that depends on the component
(or on `ready_resources`) is created only when the API exists and a controller serves it.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
from pulumi_docker_build import Image, Platform
from pydantic import ConfigDict, ValidationError

from jobset_infra.components.inputs import checked, is_deferred
from jobset_infra.components.k8s_objects import kubernetes_object
from jobset_infra.components.providers import is_kubernetes_provider, kubernetes_provider
from jobset_infra.manifests import controller
from jobset_infra.manifests.controller_spec import (
    ControllerInstall,
    ControllerInstallError,
    ControllerOptions,
    parse_install,
)
from jobset_infra.manifests.jobset_system import SystemObjects, system_objects
from jobset_infra.manifests.meta import Manifest, field_problems
from jobset_infra.manifests.placement_domains import pool_plans, with_pool_domains
from jobset_infra.tpu.pools import SlicePoolsPlan

__all__ = [
    "ImageBuild",
    "JobSetSystem",
    "JobSetSystemArgs",
    "image_reference",
    "validate_args",
]

TYPE_TOKEN = "jobset-infra:index:JobSetSystem"
_DEFAULTING_KEYS = ("defaulting-policy", "defaulting-policy-binding")
IMAGE_NAME = "jobset-controller"
IMAGE_STAND_IN = "registry.invalid/jobset-controller@sha256:" + "0" * 64
"""Checked in place of an image given as an Output, until the Output resolves."""


@dataclass(frozen=True)
class ImageBuild:
    """Build the controller image from the repo's Dockerfile and push it to Artifact Registry."""

    project: str
    location: str
    """Artifact Registry region, e.g. "us-west4" (use the cluster's region)."""
    tag: str
    """Image tag, e.g. the package version; the Deployment pins the pushed digest as well."""
    repository: str = "jobset-infra"
    context: str = "."
    """Build context: the repository root holding `Dockerfile` (Pulumi runs from the project)."""
    platform: str = "linux/amd64"


class JobSetSystemArgs(ControllerOptions):
    """Arguments of `JobSetSystem`: the controller options (`ControllerOptions`' fields:
    namespace, replicas, config, resources, service_monitor, ..., declared there and never
    restated here) plus the cluster, the image and the pools. Keyword arguments only; a bad
    option is a `ControllerInstallError` naming the field."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    provider: Any = None
    """Kubernetes provider of the target cluster, if not given in opts (`ResourceOptions(
    providers=[...])`, the Pulumi way); never the ambient kubeconfig."""
    image: str | pulumi.Output[str] | None = None
    """Controller image with a pinned tag or digest (plain, or another resource's output such
    as an image build's digest ref, checked when it resolves); or leave None and give `build`."""
    build: ImageBuild | None = None
    pools: Sequence[SlicePoolsPlan | Any] = ()
    """Slice pools (`TpuSlicePools` or their `.plan`) declared to the controller as domains."""
    retain_crd: bool = True
    """Keep the CRD when Pulumi deletes it (destroy, rename): deleting it deletes every JobSet."""

    def __init__(self, **fields: Any) -> None:
        try:
            super().__init__(**fields)
        except ValidationError as err:
            raise ControllerInstallError("; ".join(field_problems(err))) from None


def image_reference(build: ImageBuild) -> str:
    """Return the tag a build pushes: `<location>-docker.pkg.dev/<project>/<repo>/<name>:<tag>`."""
    return (
        f"{build.location}-docker.pkg.dev/{build.project}/{build.repository}/{IMAGE_NAME}:"
        f"{build.tag}"
    )


def validate_args(args: JobSetSystemArgs) -> ControllerInstall:
    """Return the validated install; raise ControllerInstallError / ValueError naming the field."""
    if not is_kubernetes_provider(args.provider):
        raise ValueError(
            "provider: pass the target cluster's pulumi_kubernetes.Provider (e.g. "
            "GkeCluster.provider); JobSetSystem never uses the ambient kubeconfig"
        )
    if args.image is not None and args.build is None:
        # An Output is checked when it resolves (`_image`); a stand-in passes the plain checks.
        image = IMAGE_STAND_IN if is_deferred(args.image) else str(args.image)
    elif args.build is not None and args.image is None:
        image = image_reference(args.build)
    else:
        raise ValueError("image/build: give exactly one: a pinned image, or an ImageBuild")
    options = {**args.options(), "config": with_pool_domains(args.config, pool_plans(args.pools))}
    return parse_install(image=image, **options)


class JobSetSystem(pulumi.ComponentResource):
    """The JobSet CRD and controller: RBAC, config, a 2-replica Deployment, PDB, metrics."""

    ready: pulumi.Output[bool]
    """Resolves once the CRD exists and the controller Deployment is Available."""
    api_ready: pulumi.Output[bool]
    """Resolves once the CRD exists, the controller perhaps not yet running: what Kueue's
    `after` needs (its JobSet integration wants the API, not our controller)."""
    namespace: pulumi.Output[str]
    """The controller's namespace."""
    image: pulumi.Output[str]
    """The image the controller runs (with digest when built here)."""
    # Only Output attributes are annotated in the class body: they are the component's outputs,
    # and Pulumi's analyzer reads the package schema from them (jobset_infra.components.package).

    def __init__(
        self, name: str, args: JobSetSystemArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        provider = kubernetes_provider("JobSetSystem", args.provider, opts)
        args = args.model_copy(update={"provider": provider})
        super().__init__(TYPE_TOKEN, name, None, opts)
        install = validate_args(args)  # before any child exists: bad arguments fail preview
        objects = system_objects(install)
        self._name = name
        self._provider = args.provider
        image = self._image(args, install)
        crd = kubernetes_object(
            f"{name}-crd",
            objects.crd,
            pulumi.ResourceOptions.merge(
                self._options(), pulumi.ResourceOptions(retain_on_delete=args.retain_crd)
            ),
        )
        for policy, key in zip(objects.defaulting, _DEFAULTING_KEYS, strict=False):
            self._create(key, policy, [crd])
        ns = self._create("namespace", objects.namespace)
        prerequisites = self._prerequisites(objects, ns)
        deployment = self._deployment(objects, image, [crd, *prerequisites])
        for key, manifest in (
            ("pdb", objects.pod_disruption_budget),
            ("metrics", objects.metrics_service),
            ("metrics-reader", objects.metrics_reader_role),
            ("service-monitor", objects.service_monitor),
            *((f"pod-monitoring-{m['kind'].lower()}", m) for m in objects.pod_monitoring),
        ):
            if manifest is not None:
                self._create(key, manifest, [ns])
        self.crd = crd
        self.deployment = deployment
        # The controller's namespace: what else the stack keeps there waits for it.
        self.namespace_object: pulumi.Resource = ns
        # CRD and Deployment: `depends_on` these (or the component) before creating JobSets.
        self.ready_resources: list[pulumi.Resource] = [crd, deployment]
        self.namespace = pulumi.Output.from_input(install.namespace)
        self.image = image
        self.ready = pulumi.Output.all(crd.id, deployment.id).apply(lambda _: True)
        self.api_ready = crd.id.apply(lambda _: True)
        self.register_outputs({"ready": self.ready, "apiReady": self.api_ready,
                               "namespace": self.namespace, "image": self.image})

    def _options(self, depends_on: Sequence[pulumi.Resource] = ()) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(
            parent=self, provider=self._provider, depends_on=list(depends_on)
        )

    def _create(
        self, key: str, manifest: Manifest, depends_on: Sequence[pulumi.Resource] = ()
    ) -> pulumi.CustomResource:
        return kubernetes_object(f"{self._name}-{key}", manifest, self._options(depends_on))

    def _prerequisites(
        self, objects: SystemObjects, ns: pulumi.Resource
    ) -> list[pulumi.CustomResource]:
        scoped = [
            self._create(key, manifest)
            for key, manifest in (("workload-role", objects.workload_role),
                                  ("workload-role-binding", objects.workload_role_binding))
            if manifest is not None
        ]
        return [
            *scoped,
            self._create("service-account", objects.service_account, [ns]),
            self._create("cluster-role", objects.cluster_role),
            self._create("cluster-role-binding", objects.cluster_role_binding),
            self._create("leader-election-role", objects.role, [ns]),
            self._create("leader-election-role-binding", objects.role_binding, [ns]),
            self._create("network-policy", objects.network_policy, [ns]),
            self._create("config", objects.config_map, [ns]),
        ]

    def _deployment(
        self,
        objects: SystemObjects,
        image: pulumi.Output[str],
        depends_on: Sequence[pulumi.Resource],
    ) -> pulumi.CustomResource:
        manifest = objects.deployment
        return k8s.apps.v1.Deployment(
            f"{self._name}-controller",
            metadata=manifest["metadata"],
            spec=image.apply(lambda ref: controller.with_image(manifest, ref)["spec"]),
            opts=self._options(depends_on),
        )

    def _image(self, args: JobSetSystemArgs, install: ControllerInstall) -> pulumi.Output[str]:
        if args.build is None and is_deferred(args.image):
            given: pulumi.Output[str] = args.image  # type: ignore[assignment]  # deferred
            return checked(given, lambda ref: validate_args(args.model_copy(update={
                "image": ref})))
        if args.build is None:
            return pulumi.Output.from_input(install.image)
        build = args.build
        repository = gcp.artifactregistry.Repository(
            f"{self._name}-images",
            project=build.project,
            location=build.location,
            repository_id=build.repository,
            format="DOCKER",
            description="jobset-infra controller images",
            opts=pulumi.ResourceOptions(parent=self),
        )
        context = Path(build.context)
        image = Image(
            f"{self._name}-image",
            context={"location": str(context)},
            dockerfile={"location": str(context / "Dockerfile")},
            platforms=[Platform(build.platform)],
            tags=[install.image],
            push=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[repository]),
        )
        # tag@sha256:...: a rebuilt image under the same tag still rolls the Deployment.
        ref: pulumi.Output[str] = image.ref
        return ref

