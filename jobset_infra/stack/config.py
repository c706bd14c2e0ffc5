"""`StackConfig`: the typed configuration of the `stacks/` program, from `Pulumi.<stack>.yaml`.

Pure (no Pulumi import). `load_stack_config(raw)` takes the config as Pulumi hands it to a program
(`jobset-infra:key` -> string, structured values as JSON text) and returns a validated StackConfig,
or raises StackConfigError with one line per problem, each naming the key (`jobset-infra:slices.
topology: ...`) and the fix. Besides the shape it runs the same checks the components run at
preview (cluster spec, slice pools, controller install, Kueue versions), so `jobset-infra plan`
reports every config mistake at once. Keys of other namespaces (`gcp:`, `kubernetes:`) pass.

The controller and Kueue keys are the component models themselves (`ControllerOptions`,
`KueueInstall`, `QueueSpec` of `jobset_infra.manifests`), so their defaults and bounds are
declared once and the program hands them to the components unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from jobset_infra.api.quantity import parse_quantity_text
from jobset_infra.manifests.controller_spec import ControllerOptions
from jobset_infra.manifests.kueue_spec import KueueInstall, QueueSpec
from jobset_infra.stack.checks import NAMESPACE, semantic_problems
from jobset_infra.stack.config_keys import config_problems, own_keys
from jobset_infra.tpu.cluster import GkeClusterSpec, pools_in_cluster
from jobset_infra.tpu.parse import bool_for_int, parse_cluster_spec, parse_slice_pools_spec
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan, plan_slice_pools
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans
from jobset_infra.tpu.spec import SlicePoolsSpec

__all__ = [
    "NAMESPACE",
    "ControllerBuild",
    "ControllerSettings",
    "KueueSettings",
    "StackConfig",
    "StackConfigError",
    "WorkloadSettings",
    "load_stack_config",
    "placeholder_problems",
]

PLACEHOLDER_PROJECT = "my-gcp-project"
"""The project id the committed gke stacks and the template carry until you set yours."""


class StackConfigError(ValueError):
    """Stack configuration problems, one line each, naming the key and the fix."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_int(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic reads `true` as 1 where an int is wanted: `slices: true` would be one slice.
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and bool_for_int(field.annotation, value):
            raise ValueError(f"expected an integer, got {str(value).lower()}")
        return value


class ControllerBuild(_Strict):
    """Build the controller image from the repo's Dockerfile and push it (GKE only)."""

    tag: str = Field(min_length=1)
    repository: str = "jobset-infra"
    context: str = "."


class ControllerSettings(ControllerOptions):
    """The JobSet controller: its options (`ControllerOptions`: replicas, namespace, config,
    resources, ...) and a pinned image, or a build."""

    image: str | None = None
    """Checked with the other semantic problems (`_check_controller`): a pinned tag or digest."""
    build: ControllerBuild | None = None
    retain_crd: bool = True
    """Keep the JobSet CRD (and so every JobSet) on `pulumi destroy`; false on throwaway
    clusters, so destroy leaves nothing behind (docs/operations.md)."""

    @model_validator(mode="after")
    def _one_image(self) -> Self:
        if (self.image is None) == (self.build is None):
            raise ValueError("give exactly one of image (a pinned tag or digest) and build")
        return self


class KueueSettings(_Strict):
    """Kueue: whether to install it, the install (`KueueInstall`) and the queues (`QueueSpec`)."""

    enabled: bool = True
    install: KueueInstall = Field(default_factory=KueueInstall)
    queues: QueueSpec = Field(default_factory=QueueSpec)
    """LocalQueue `local_queue_name` in every namespace of `namespaces`, one ClusterQueue."""


class WorkloadSettings(_Strict):
    """The stack's demo JobSet: TPU on GKE (one pod per VM, whole slices), CPU on local."""

    enabled: bool = True
    name: str = "demo"
    namespace: str = "default"
    image: str = Field(min_length=1)
    command: tuple[str, ...] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    slices: int | None = Field(default=None, ge=1)
    """TPU: slices to run on (= replicas); None = every slice."""
    replicas: int = Field(default=1, ge=1)
    """CPU: child Jobs."""
    parallelism: int = Field(default=1, ge=1)
    """CPU: pods per child Job."""
    cpu: str = "100m"
    memory: str = "128Mi"
    max_restarts: int = Field(default=0, ge=0)
    queued: bool | None = None
    """Submit through Kueue; None = yes when the stack has TPU pools (Kueue has a TPU queue)."""
    priority_class: str | None = None
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0)

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, value: str) -> str:
        amount = parse_quantity_text(value)
        if amount is None:
            raise ValueError(f"{value!r} is not a Kubernetes quantity; use e.g. 500m, 2 or 4Gi")
        if amount < 0:
            raise ValueError(f"{value!r} is negative; a request is 0 or more")
        return value


class StackConfig(_Strict):
    """Everything a stack decides; `platform` picks an existing cluster or a new GKE cluster."""

    platform: Literal["local", "gke"]
    """`local`: the Kubernetes half onto an existing cluster (your kubeconfig), no GCP. `gke`: a
    new GKE cluster with TPU slice pools, then the same Kubernetes half onto it."""
    kubeconfig: str | None = None
    """local: kubeconfig path (default ~/.kube/config); `~` is expanded. gke: set it to deploy
    only the Kubernetes half onto that existing cluster, whose node pools must already be shaped
    like `slices` (no GCP resource is created; e.g. a local cluster started with `jobset-infra
    cluster up --nodes <slices.name>=<shape>:<slices>`)."""
    context: str | None = None
    """kubeconfig context; None = the file's current context."""
    nodes: str | None = None
    """local: the existing cluster's node pools in `cluster up --nodes` syntax (v5e-2x4:4,cpu:2);
    its TPU pools become the controller's placement domains and Kueue's TPU queue."""
    kwok_pools: str | None = None
    """local: TPU slice pools the stack itself creates as kwok Nodes (same syntax as `nodes`), the
    local stand-in for the GKE node pools a gke stack owns: changing it replaces, shrinks or
    deletes them through the engine. Placement domains and Kueue's queue like `nodes`."""
    drain_jobsets: bool = False
    """Let an update that replaces, shrinks or deletes a slice pool under running JobSets suspend
    them first (through Kueue when queued) and resume them on the new pools afterwards. Without
    it such an update fails at preview, naming each JobSet (docs/resilience.md)."""
    project: str | None = None
    """gke: GCP project."""
    region: str | None = None
    """gke: cluster location (a region, or a zone for a zonal cluster)."""
    zone: str | None = None
    """gke: zone of the TPU slices (in the region; v5e: e.g. us-west4-a)."""
    cluster: dict[str, Any] = Field(default_factory=dict)
    """gke: more GkeCluster fields (name, release_channel, private_nodes, ...)."""
    slices: dict[str, Any] | None = None
    """gke: the TpuSlicePools spec (name, accelerator, topology, machine_type, slices, ...)."""
    controller: ControllerSettings
    """The JobSet controller: exactly one of `image` and `build`, and its options."""
    kueue: KueueSettings = Field(default_factory=KueueSettings)
    """Kueue: whether to install it, its install and its queues."""
    placement: Placer = Placer.CONTROLLER
    """Who places each TPU slice in one node pool: `controller` (ours: the exclusive-topology
    annotation) or `kueue-tas` (Kueue's Topology-Aware Scheduling: a Topology of GKE's node-pool
    and host labels, slice annotations on the JobSet). One mode for the stack's queue."""
    workload: WorkloadSettings | None = None
    """The stack's demo JobSet (TPU on gke and on local TPU pools, else CPU); none if unset."""

    @model_validator(mode="after")
    def _platform_keys(self) -> Self:
        problems = (
            _local_problems(self) if self.platform == "local" else _gke_problems(self)
        )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @field_validator("nodes", "kwok_pools")
    @classmethod
    def _pools(cls, value: str | None) -> str | None:
        if value is not None:
            parse_pools_text(value)  # a PoolsTextError (ValueError) is reported under `nodes`
        return value

    @property
    def existing_cluster(self) -> bool:
        """Return whether the stack deploys onto a cluster it does not create."""
        return self.platform == "local" or self.kubeconfig is not None

    @property
    def queued(self) -> bool:
        """Return whether the demo JobSet goes through Kueue (default: when there are TPUs)."""
        if self.workload is None or not self.kueue.enabled:
            return False
        if self.workload.queued is not None:
            return self.workload.queued
        return bool(self.pool_plans())

    def pool_plans(self) -> tuple[SlicePoolsPlan, ...]:
        """Return the TPU slice pools: local from `nodes`, gke from `slices`."""
        if self.platform == "gke":
            return (self.slice_pools_plan(),)
        return (*tpu_plans(parse_pools_text(self.nodes or "")), *self.kwok_pool_plans())

    def kwok_pool_plans(self) -> tuple[SlicePoolsPlan, ...]:
        """Return the TPU slice pools the stack creates as kwok Nodes (local only)."""
        return tuple(tpu_plans(parse_pools_text(self.kwok_pools or "")))

    def cluster_spec(self) -> GkeClusterSpec:
        """Return the GkeCluster spec (gke only)."""
        fields = {**self.cluster, "project": self.project, "location": self.region}
        return parse_cluster_spec(fields)

    def slice_pools_spec(self) -> SlicePoolsSpec:
        """Return the TpuSlicePools spec (gke only), zone from `zone`."""
        return parse_slice_pools_spec({**(self.slices or {}), "zone": self.zone})

    def slice_pools_plan(self) -> SlicePoolsPlan:
        """Return the planned pools, in the cluster as TpuSlicePoolsArgs.for_cluster puts them."""
        return plan_slice_pools(pools_in_cluster(self.slice_pools_spec(), self.cluster_spec()))


def _local_problems(config: StackConfig) -> list[str]:
    gke_only = ("project", "region", "zone", "slices")
    problems = [
        f"{key}: the local platform uses an existing cluster and no GCP; remove it "
        "(or set platform: gke)"
        for key in gke_only
        if getattr(config, key) is not None
    ]
    if config.cluster:
        problems.append("cluster: GKE settings need platform: gke; remove it")
    if config.controller.build is not None:
        problems.append(
            "controller.build: local has no registry to push to; build the image, load it into "
            "the cluster (kind load docker-image) and set controller.image"
        )
    problems += _kwok_pool_problems(config)
    if config.workload and config.workload.queued and config.kueue.enabled and not problems \
            and not config.pool_plans():
        problems.append("workload.queued: the stack has no TPU pools (nodes), so Kueue has no "
                        "queue; set it to false or add TPU pools to nodes")
    return problems


def _kwok_pool_problems(config: StackConfig) -> list[str]:
    if config.kwok_pools is None:
        return []
    entries = parse_pools_text(config.kwok_pools)
    if len(tpu_plans(entries)) != len(entries):
        return ["kwok_pools: only TPU slice pools (the CPU pool is the cluster's: put cpu:<n> "
                "in nodes)"]
    existing = {p.name for plan in tpu_plans(parse_pools_text(config.nodes or ""))
                for p in plan.pools}
    twice = sorted(existing & {p.name for plan in config.kwok_pool_plans() for p in plan.pools})
    if twice:
        return [f"kwok_pools: pool {twice[0]!r} is also in nodes (the cluster's own pools); "
                "name the stack's pools apart, e.g. mine=v5e-2x4:2"]
    return []


def _gke_problems(config: StackConfig) -> list[str]:
    required = ("project", "region", "zone", "slices")
    problems = [
        f"{key}: required on platform gke (pulumi config set {NAMESPACE}:{key} ...)"
        for key in required
        if getattr(config, key) is None
    ]
    for key in ("nodes", "kwok_pools"):
        if getattr(config, key) is not None:
            problems.append(f"{key}: GKE stacks plan their pools from slices; remove it")
    if config.context is not None and config.kubeconfig is None:
        problems.append("context: GKE stacks build their own provider; remove it (or set "
                        "kubeconfig to deploy onto an existing cluster)")
    if config.kubeconfig is not None and config.controller.build is not None:
        problems.append("controller.build: with kubeconfig set the stack creates no GCP "
                        "resources (no registry to push to); set controller.image")
    return problems


def load_stack_config(raw: Mapping[str, Any]) -> StackConfig:
    """Return the validated config of `raw` (`project:key` -> value); raise StackConfigError."""
    values, problems = own_keys(raw, StackConfig.model_fields)
    try:
        config = StackConfig.model_validate(values)
    except ValidationError as exc:
        raise StackConfigError(problems + config_problems(exc, StackConfig)
                               + _problems_beside(values, exc)) from None
    problems += semantic_problems(config)
    if problems:
        raise StackConfigError(problems)
    return config


# Keys whose whole value has a default: when only they are malformed, the rest of the config is
# still checked with their defaults, so one run reports every mistake.
_DEFAULTED_KEYS = frozenset({"kueue"})


def _problems_beside(values: dict[str, Any], exc: ValidationError) -> list[str]:
    """Return the semantic problems of the other keys when only defaulted keys were malformed."""
    bad = {str(error["loc"][0]) for error in exc.errors() if error["loc"]}
    if not bad or not bad <= _DEFAULTED_KEYS:
        return []
    try:
        rest = StackConfig.model_validate({k: v for k, v in values.items() if k not in bad})
    except ValidationError:
        return []
    prefixes = tuple(f"{NAMESPACE}:{key}" for key in bad)
    return [p for p in semantic_problems(rest) if not p.startswith(prefixes)]


def placeholder_problems(config: StackConfig) -> list[str]:
    """What a gke stack still has of the committed placeholders, each naming its key and fix:
    the placeholder project, and a controller image under it (never built, so nothing could pull
    it). Pure; the program warns of them at preview and refuses them on update."""
    if config.platform != "gke" or config.existing_cluster:
        return []
    problems = []
    if config.project == PLACEHOLDER_PROJECT:
        problems.append(f"{NAMESPACE}:project: {PLACEHOLDER_PROJECT!r} is the placeholder; set "
                        f"your project: pulumi config set {NAMESPACE}:project <project-id>")
    image = config.controller.image or ""
    if f"/{PLACEHOLDER_PROJECT}/" in image:
        problems.append(
            f"{NAMESPACE}:controller.image: {image!r} is in the placeholder project's registry "
            "and was never built; push the image to yours and set it (pulumi config set --path "
            f"'{NAMESPACE}:controller.image' <ref>), or set controller.build to build it")
    return problems
