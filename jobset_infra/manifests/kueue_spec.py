"""`QueueSpec` and `KueueInstall`: what a platform team chooses about Kueue, validated.

Defaults give a working TPU queue: one ClusterQueue admitting from the `default` namespace, a
LocalQueue there, three priority classes and preemption of lower-priority workloads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobset_infra.manifests.controller_spec import check_tolerations
from jobset_infra.manifests.meta import field_problems, require_dns_label, require_dns_subdomain

__all__ = [
    "KueueInstall",
    "KueueSpecError",
    "QueueSpec",
    "check_queue_namespaces",
    "image_parts",
    "parse_kueue_install",
    "parse_queue_spec",
]

_INT32_MAX = 2**31 - 1
# Kueue releases whose v1beta2 API and Helm values this package renders for.
_VERSION = re.compile(r"^0\.(1[6-9]|[2-9][0-9])\.[0-9]+$")


class KueueSpecError(ValueError):
    """An invalid Kueue argument; the message names the field and the fix."""


class QueueSpec(BaseModel):
    """The queue objects: names, admitting namespaces, quota overrides, priority classes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cluster_queue_name: str = "tpu-cluster-queue"
    local_queue_name: str = "tpu-queue"
    namespaces: tuple[str, ...] = ("default",)
    """Namespaces that get a LocalQueue; the ClusterQueue admits only from these."""
    tpu_quota: dict[str, int] = Field(default_factory=dict)
    """Flavor name -> google.com/tpu quota, to hand out less than the pools hold (never more)."""
    priority_classes: dict[str, int] = Field(
        default_factory=lambda: {"low": 100, "medium": 500, "high": 1000}
    )
    """WorkloadPriorityClass name -> value; a JobSet picks one by its priority-class label."""
    preemption_within_cluster_queue: str = "LowerPriority"
    queueing_strategy: str = "BestEffortFIFO"
    cohort: str | None = None
    admission_check_name: str = "tpu-flex-start"
    """Name of the ProvisioningRequest AdmissionCheck (and its config) for queued pools."""
    topology_name: str = "tpu-slices"
    """Name of the Kueue Topology (node pool, then host) when Kueue TAS places the slices."""

    @field_validator("cluster_queue_name", "local_queue_name", "admission_check_name", "cohort",
                     "topology_name")
    @classmethod
    def _names(cls, value: str | None) -> str | None:
        return None if value is None else require_dns_subdomain(value, "value")

    @field_validator("namespaces")
    @classmethod
    def _namespaces(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("give at least one namespace, or no JobSet can use the queue")
        if len(set(value)) != len(value):
            raise ValueError(f"{list(value)} lists a namespace twice")
        for namespace in value:
            require_dns_label(namespace, "namespace")
        return value

    @field_validator("tpu_quota")
    @classmethod
    def _quota(cls, value: dict[str, int]) -> dict[str, int]:
        for name, chips in value.items():
            if chips < 0:
                raise ValueError(f"[{name}]: {chips} is negative; use 0 to close a flavor")
        return value

    @field_validator("priority_classes")
    @classmethod
    def _priorities(cls, value: dict[str, int]) -> dict[str, int]:
        for name, priority in value.items():
            require_dns_subdomain(name, "name")
            if not -_INT32_MAX - 1 <= priority <= _INT32_MAX:
                raise ValueError(f"[{name}]: {priority} does not fit in int32")
        return value

    @field_validator("preemption_within_cluster_queue")
    @classmethod
    def _preemption(cls, value: str) -> str:
        allowed = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    @field_validator("queueing_strategy")
    @classmethod
    def _strategy(cls, value: str) -> str:
        if value not in ("BestEffortFIFO", "StrictFIFO"):
            raise ValueError(f"{value!r} is not BestEffortFIFO or StrictFIFO")
        return value


class KueueInstall(BaseModel):
    """Kueue itself: chart version, namespace and controller-manager settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str = "0.19.2"
    """Helm chart version (no leading v); the v1beta2 API needs 0.16 or newer."""
    namespace: str = "kueue-system"
    release_name: str = "kueue"
    replicas: int = Field(default=1, ge=1, le=5)
    exclude_resource_prefixes: tuple[str, ...] = ("cpu", "memory", "ephemeral-storage")
    """Resources Kueue does not account: the queue meters TPU chips only (see docs/platform.md)."""
    manage_jobs_without_queue_name: bool = False
    client_qps: float = Field(default=300, gt=0)
    client_burst: int = Field(default=500, ge=1)
    chart_path: str | None = None
    """A local chart folder (air-gapped installs; the sigs.k8s.io/kueue module carries it under
    charts/kueue) instead of the OCI chart; its Chart.yaml must be `version`."""
    image: str | None = None
    """The manager's image as `repository:tag` or `repository:tag@sha256:...` (the chart joins
    repository and tag; a digest pins it), pulled only if not present. None: the chart's."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Node labels the manager's Pods must land on (a system node pool's, say). Empty: any."""
    tolerations: tuple[dict[str, str], ...] = ()
    """Taints the manager's Pods tolerate (a tainted system pool's), each as a Pod's toleration:
    `key`, `operator` (`Equal` or `Exists`), `value`, `effect`."""

    @field_validator("image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        if value is not None and image_parts(value) is None:
            raise ValueError(f"{value!r}: give repository:tag, optionally @sha256:<64 hex>, "
                             "e.g. jobset-infra.local/kueue:0.1.0@sha256:...")
        return value

    @field_validator("tolerations")
    @classmethod
    def _tolerations(cls, value: tuple[dict[str, str], ...]) -> tuple[dict[str, str], ...]:
        return check_tolerations(value)

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if value.startswith("v"):
            raise ValueError(f"{value!r}: Helm chart versions have no leading 'v'")
        if not _VERSION.match(value):
            raise ValueError(f"{value!r}: need an exact Kueue release 0.16.0 or newer, e.g. 0.19.2")
        return value

    @field_validator("namespace", "release_name")
    @classmethod
    def _dns(cls, value: str) -> str:
        return require_dns_label(value, "value")

    @model_validator(mode="after")
    def _release_name(self) -> Self:
        # The chart names objects "<release>-kueue" unless the release name contains "kueue";
        # we rely on the short form for the Deployment and webhook Service names.
        if "kueue" not in self.release_name:
            raise ValueError(f"release_name {self.release_name!r} must contain 'kueue'")
        return self

    @model_validator(mode="before")
    @classmethod
    def _no_loopback(cls, data: Any) -> Any:
        # Removed 2026-12-07 with the pod runner that ran Kueue's manager beside the API server:
        # a stack file that still has it gets the fix, not pydantic's "extra inputs".
        if isinstance(data, Mapping) and "loopback_webhooks" in data:
            raise ValueError(
                "loopback_webhooks is gone: the local cluster runs Kueue as it ships, on its "
                "system node; drop the key and set image, node_selector and tolerations as "
                "stacks/Pulumi.local.yaml does (docs/stacks.md)")
        return data


_IMAGE = re.compile(r"^(?P<repository>[a-z0-9][a-z0-9._/-]*(:[0-9]+/[a-z0-9._/-]+)?)"
                    r":(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})(?P<digest>@sha256:[0-9a-f]{64})?$")


def image_parts(image: str) -> tuple[str, str] | None:
    """(`repository`, `tag` with any `@sha256:` digest) as Kueue's chart composes its image
    (`repository:tag`); None when `image` has no tag."""
    match = _IMAGE.match(image)
    if match is None:
        return None
    return match["repository"], match["tag"] + (match["digest"] or "")


def check_queue_namespaces(queues: QueueSpec, install: KueueInstall) -> None:
    """Raise KueueSpecError when a LocalQueue sits where Kueue does not manage jobs.

    Kueue's webhooks skip kube-system and Kueue's own namespace (its default
    managedJobsNamespaceSelector), so a JobSet there would run unqueued, silently.
    """
    unmanaged = sorted(set(queues.namespaces) & {"kube-system", install.namespace})
    if unmanaged:
        raise KueueSpecError(
            f"queues.namespaces: Kueue does not manage jobs in {', '.join(unmanaged)}; "
            "put LocalQueues in the namespaces your JobSets run in"
        )


def parse_queue_spec(**fields: object) -> QueueSpec:
    """Return a validated QueueSpec; raise KueueSpecError naming each bad field."""
    try:
        return QueueSpec.model_validate(fields)
    except ValidationError as err:
        raise KueueSpecError("; ".join(field_problems(err))) from None


def parse_kueue_install(**fields: object) -> KueueInstall:
    """Return a validated KueueInstall; raise KueueSpecError naming each bad field."""
    try:
        return KueueInstall.model_validate(fields)
    except ValidationError as err:
        raise KueueSpecError("; ".join(field_problems(err))) from None
