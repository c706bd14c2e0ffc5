"""`ControllerInstall`: what a platform team chooses about the controller's Deployment, validated.

Every choice has a safe default; a combination that would fail in the cluster (two replicas
without leader election, a Lease namespace the Role does not cover, an image without a pinned
tag, probes on a loopback address the kubelet cannot reach) is an error naming the field.

The choices are declared once, in `ControllerOptions`: the stack config's `controller` key
(`stack.config.ControllerSettings`) and the `JobSetSystem` component's arguments
(`components.jobset_system.JobSetSystemArgs`) are ControllerOptions plus where the image comes
from; `ControllerInstall`, what the manifest builders read, is ControllerOptions plus the image.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.manifests.meta import field_problems, require_dns_label

__all__ = [
    "ControllerInstall",
    "ControllerInstallError",
    "ControllerOptions",
    "MetricsScraper",
    "Resources",
    "bind_port",
    "check_tolerations",
    "parse_install",
    "pinned_image",
]

_IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*(@sha256:[0-9a-f]{64})?$")
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")


class ControllerInstallError(ValueError):
    """An invalid controller install argument; the message names the field and the fix."""


class Resources(BaseModel):
    """Requests and limits of the controller container (Kubernetes quantities)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cpu_request: str = "250m"
    memory_request: str = "256Mi"
    cpu_limit: str = "2"
    memory_limit: str = "2Gi"

    @field_validator("cpu_request", "memory_request", "cpu_limit", "memory_limit")
    @classmethod
    def _quantity(cls, value: str) -> str:
        if not _QUANTITY.match(value):
            raise ValueError(f"{value!r} is not a Kubernetes quantity such as '500m' or '1Gi'")
        return value

    def to_dict(self) -> dict[str, dict[str, str]]:
        """Return the container's `resources` field."""
        return {
            "requests": {"cpu": self.cpu_request, "memory": self.memory_request},
            "limits": {"cpu": self.cpu_limit, "memory": self.memory_limit},
        }


class MetricsScraper(BaseModel):
    """Pods allowed to reach the metrics port: those of `namespace` (with `pod_labels`, if any)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str
    pod_labels: dict[str, str] = Field(default_factory=dict)

    @field_validator("namespace")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        return require_dns_label(value, "value")


# GKE Managed Prometheus' collectors, and the namespace most Prometheus installs use.
DEFAULT_SCRAPERS = (MetricsScraper(namespace="gmp-system"), MetricsScraper(namespace="monitoring"))


def check_tolerations(value: tuple[dict[str, str], ...]) -> tuple[dict[str, str], ...]:
    """Pod tolerations as a system pool's Pods (the controller's, Kueue's) set them; raises
    ValueError naming the first bad field."""
    for item in value:
        unknown = sorted(set(item) - {"key", "operator", "value", "effect"})
        if unknown:
            raise ValueError(f"unknown toleration field {unknown[0]!r}; use key, operator, "
                             "value and effect")
        if item.get("operator", "Equal") not in ("Equal", "Exists"):
            raise ValueError(f"operator {item['operator']!r} is not Equal or Exists")
        if item.get("effect", "") not in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError(f"effect {item['effect']!r} is not NoSchedule, "
                             "PreferNoSchedule or NoExecute")
    return value


class ControllerOptions(BaseModel):
    """What a platform team chooses about the controller besides its image."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    namespace: str = "jobset-system"
    name: str = "jobset-controller"
    replicas: int = Field(default=2, ge=1, le=10)
    """1 leader and warm standbys (Lease leader election)."""
    config: ControllerConfig = ControllerConfig()
    """Every controller flag (api.controller_config), rendered into the config file."""
    resources: Resources = Resources()
    service_monitor: bool = False
    """Also render a Prometheus-operator ServiceMonitor (needs its CRD in the cluster)."""
    pod_monitoring: bool = False
    """Also render a GKE Managed Prometheus PodMonitoring (monitoring.googleapis.com/v1) and,
    with secure metrics, the scraper account and token it authenticates with."""
    image_pull_policy: str = "IfNotPresent"
    metrics_scrapers: tuple[MetricsScraper, ...] = DEFAULT_SCRAPERS
    """Who the NetworkPolicy lets reach the metrics port (each scrape is also authenticated and
    authorized). `()` lets nobody in; kubelet probes need no rule."""
    api_server_cidrs: tuple[str, ...] = ()
    """The API server's addresses (CIDRs) the NetworkPolicy lets the controller reach, e.g. the
    GKE cluster's endpoint as `<ip>/32`. Empty: TCP 443 and 6443 to any address (a
    NetworkPolicy has no other way to name the API server)."""
    node_selector: dict[str, str] = Field(default_factory=dict)
    """Node labels the controller's Pods must land on (a system node pool's, say). Empty: any."""
    tolerations: tuple[dict[str, str], ...] = ()
    """Taints the controller's Pods tolerate (a tainted system pool's), each as a Pod's
    toleration: `key`, `operator` (`Equal` or `Exists`), `value`, `effect`."""

    @field_validator("tolerations")
    @classmethod
    def _tolerations(cls, value: tuple[dict[str, str], ...]) -> tuple[dict[str, str], ...]:
        return check_tolerations(value)

    @field_validator("api_server_cidrs")
    @classmethod
    def _cidrs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        try:
            return tuple(str(ipaddress.ip_network(cidr, strict=False)) for cidr in value)
        except ValueError as err:
            raise ValueError(f"{err}; give CIDRs such as '34.1.2.3/32'") from None
    defaulting_policy: bool = True
    """Install the MutatingAdmissionPolicy that stores JobSets defaulted as upstream's webhook
    would (`api.defaulting_policy`: unnamed failure-policy rules named, an empty pod restart
    policy filled). Needs Kubernetes 1.36 or later; on 1.31-1.35 set False: the controller
    applies the same defaults when it reads a JobSet, only the stored object keeps `""`."""

    @field_validator("namespace", "name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        return require_dns_label(value, "value")

    @field_validator("image_pull_policy")
    @classmethod
    def _pull_policy(cls, value: str) -> str:
        allowed = ("Always", "IfNotPresent", "Never")
        if value not in allowed:
            raise ValueError(f"{value!r} is not one of {', '.join(allowed)}")
        return value

    @model_validator(mode="after")
    def _leader_election_fits(self) -> Self:
        election = self.config.leader_election
        explicit = election.model_fields_set
        if "leader_elect" in explicit and not election.leader_elect and self.replicas > 1:
            raise ValueError(
                f"config.leaderElection.leaderElect is false with replicas={self.replicas}: "
                "two active controllers would fight over the same JobSets; enable leader "
                "election or set replicas=1"
            )
        if "resource_namespace" in explicit and election.resource_namespace != self.namespace:
            raise ValueError(
                f"config.leaderElection.resourceNamespace is {election.resource_namespace!r} but "
                f"the controller's Role only grants Leases in {self.namespace!r}; remove it"
            )
        health = bind_port(self.config.health.health_probe_bind_address, "config.health")
        metrics = bind_port(self.config.metrics.bind_address, "config.metrics")
        if health == metrics:
            raise ValueError(
                f"config.health and config.metrics both use port {health}; two servers cannot "
                "listen on one port, give them different ports"
            )
        return self

    def options(self) -> dict[str, object]:
        """Return the options that were set, as keyword arguments of a ControllerInstall."""
        return {
            name: getattr(self, name)
            for name in ControllerOptions.model_fields
            if name in self.model_fields_set
        }


class ControllerInstall(ControllerOptions):
    """The controller's Deployment and its surroundings: the options and a pinned image."""

    image: str = Field(min_length=1)
    """Controller image with a pinned tag or digest, e.g. `.../jobset-controller:0.1.0`."""

    @field_validator("image")
    @classmethod
    def _pinned_image(cls, value: str) -> str:
        return pinned_image(value)

    def effective_config(self) -> ControllerConfig:
        """Return the config the pods run with: leader election on, in the install namespace."""
        election = self.config.leader_election
        # Off only when asked for explicitly (allowed with one replica); on by default.
        elect = election.leader_elect if "leader_elect" in election.model_fields_set else True
        election = election.model_copy(
            update={"leader_elect": elect, "resource_namespace": self.namespace}
        )
        return self.config.model_copy(update={"leader_election": election})

    @property
    def health_port(self) -> int:
        """Return the port of /healthz and /readyz."""
        return bind_port(self.config.health.health_probe_bind_address, "config.health")

    @property
    def metrics_port(self) -> int:
        """Return the port of /metrics."""
        return bind_port(self.config.metrics.bind_address, "config.metrics")


def pinned_image(value: str) -> str:
    """Return `value` if it is an image reference with a pinned tag or digest; else raise."""
    if not _IMAGE.match(value):
        raise ValueError(f"{value!r} is not an image reference (registry/path:tag)")
    last = value.split("@", maxsplit=1)[0].rsplit("/", 1)[-1]
    if "@" not in value and (":" not in last or last.endswith(":latest")):
        raise ValueError(
            f"{value!r} has no pinned tag: replicas could run different code; "
            "use an explicit version tag or an @sha256 digest"
        )
    return value


def bind_port(address: str, field: str) -> int:
    """Return the port of a bind address (":8081", "0.0.0.0:8081"); error if pods can't reach it."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{field}: {address!r} is not a bind address like ':8081'")
    if host in ("127.0.0.1", "localhost", "[::1]"):
        raise ValueError(
            f"{field}: {address!r} listens on loopback only, so the kubelet's probes and "
            "Prometheus cannot reach it; use ':<port>'"
        )
    return int(port)


def parse_install(**fields: object) -> ControllerInstall:
    """Return a validated ControllerInstall; raise ControllerInstallError naming each bad field."""
    try:
        return ControllerInstall.model_validate(fields)
    except ValidationError as err:
        raise ControllerInstallError("; ".join(field_problems(err))) from None
