"""Configuration of `jobset-controller`: every flag and config-file field, with upstream's defaults.

The config file keeps the shape of upstream's `config.jobset.x-k8s.io/v1alpha1` `Configuration`
(camelCase keys, Go duration strings such as "15s"), so an existing upstream config file loads as
is; our additions (`controller`, `placement`, `logging`) sit beside upstream's sections. Precedence
is the upstream one: defaults < config file < flags given explicitly on the command line.

Pure: parsing and rendering only; the runtime (`controller.runtime.main`) reads files and argv and
passes their text here. Errors are `ControllerConfigError`s that name the key and say how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Self

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from jobset_infra.api import constants as c
from jobset_infra.api.features import FeatureGates

CONFIG_API_VERSION = c.CONFIG_API_VERSION
CONFIG_KIND = c.CONFIG_KIND
LEADER_ELECTION_ID = c.LEADER_ELECTION_ID
# GKE's node-pool label (a TPU slice is one pool); api may not import tpu, so it is restated here
# and tests/api pins it to tpu.constants.GKE_NODEPOOL_LABEL.
DEFAULT_TOPOLOGY_KEY = "cloud.google.com/gke-nodepool"
# Upstream sections we accept so an upstream config file loads, but do not act on: we serve no
# webhooks and the metrics endpoint is plain HTTP. The runtime logs a warning when they are set.
IGNORED_UPSTREAM_SECTIONS = ("webhook", "internalCertManagement", "tls")

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ControllerConfigError(ValueError):
    """A config file or flag value is wrong; the message names the key and the fix."""


def parse_duration(value: object) -> float:
    """Seconds from a Go duration string ("1m30s", "500ms") or a plain number of seconds."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration like '15s', got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration like '15s', got {value!r}")
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"expected a duration like '15s', '1m30s' or '500ms', got {value!r}")
    return sum(float(n) * _DURATION_UNITS[u] for n, u in parts)


def format_duration(seconds: float) -> str:
    """The Go duration string for a number of seconds ("15s", "0.5s" -> "500ms")."""
    if seconds == 0:
        return "0s"
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    millis = seconds * 1000
    if millis == int(millis):
        return f"{int(millis)}ms"
    return f"{seconds}s"


Seconds = Annotated[float, BeforeValidator(parse_duration), Field(gt=0)]
SecondsOrZero = Annotated[float, BeforeValidator(parse_duration), Field(ge=0)]


class _Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, alias_generator=to_camel
    )


class PlacementMode(StrEnum):
    """How the controller places child Jobs of JobSets that ask for exclusive topology."""

    AUTO = "auto"  # exclusive domains when domains are known, else affinity
    EXCLUSIVE = "exclusive"  # always assign a free domain through a nodeSelector
    AFFINITY = "affinity"  # upstream-like pod (anti-)affinity, no domain bookkeeping
    OFF = "off"  # ignore the exclusive-topology annotation


class LogFormat(StrEnum):
    JSON = "json"
    TEXT = "text"


class LogLevel(StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class ClientConnection(_Section):
    """Client-side rate limit of requests to the API server (upstream: 500/500)."""

    qps: float = Field(default=500.0, gt=0)
    burst: int = Field(default=500, ge=1)


class LeaderElection(_Section):
    """Lease-based leader election; durations as in controller-runtime (15 s / 10 s / 2 s)."""

    leader_elect: bool = False
    resource_lock: str = "leases"
    resource_name: str = LEADER_ELECTION_ID
    resource_namespace: str = "jobset-system"
    lease_duration: Seconds = 15.0
    renew_deadline: Seconds = 10.0
    retry_period: Seconds = 2.0

    @field_validator("resource_lock")
    @classmethod
    def _only_leases(cls, value: str) -> str:
        if value != "leases":
            raise ValueError(f"only 'leases' is supported, got {value!r}")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        # client-go rejects these too: a leader must renew before others may take over.
        if self.lease_duration <= self.renew_deadline:
            raise ValueError(
                f"leaseDuration ({format_duration(self.lease_duration)}) must be greater than "
                f"renewDeadline ({format_duration(self.renew_deadline)})"
            )
        if self.renew_deadline <= 1.2 * self.retry_period:
            raise ValueError(
                f"renewDeadline ({format_duration(self.renew_deadline)}) must be greater than "
                f"1.2 x retryPeriod ({format_duration(self.retry_period)})"
            )
        return self


class Metrics(_Section):
    bind_address: str = ":8443"
    secure_serving: bool = True
    """HTTPS, and each scrape's bearer token authenticated (TokenReview) and authorized for GET
    /metrics (SubjectAccessReview), as controller-runtime's secure metrics; false serves plain
    HTTP to anyone who can connect (loopback harnesses)."""
    cert_dir: str = ""
    """Folder with tls.crt and tls.key (cert-manager, a Secret); empty: a self-signed one."""


class Health(_Section):
    health_probe_bind_address: str = ":8081"
    readiness_endpoint_name: str = "/readyz"
    liveness_endpoint_name: str = "/healthz"


class ControllerTuning(_Section):
    """Our knobs; upstream hard-codes 1 worker and a fan-out of 50."""

    workers: int = Field(default=4, ge=1, le=256)
    max_parallelism: int = Field(default=50, ge=1, le=1000)
    expectations_timeout: Seconds = 300.0
    cache_sync_timeout: Seconds = 120.0
    watch_namespace: str = ""  # "" watches all namespaces
    backoff_base: Seconds = 0.005
    backoff_max: Seconds = 1000.0
    # A burst of child Job events (thousands of pods changing) becomes one reconcile per period,
    # like the kube Job controller's pod-update batching; "0s" reconciles on every event. A Job
    # that starts failing is reconciled at once: a restart waits for no batch.
    child_event_batch_period: SecondsOrZero = 0.05


class PlacementDomain(_Section):
    """A topology domain known before its Nodes exist (a node pool Pulumi made, maybe at zero)."""

    name: str = Field(min_length=1)
    topology_key: str = DEFAULT_TOPOLOGY_KEY
    node_count: int = Field(ge=0)
    labels: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)  # per node, e.g. google.com/tpu


class Placement(_Section):
    mode: PlacementMode = PlacementMode.AUTO
    domains: tuple[PlacementDomain, ...] = ()
    # Slice health (docs/resilience.md): a node pool whose slice failed for an infrastructure
    # cause is kept out of assignments while its failures' decayed score exceeds the threshold:
    # one NotReady node keeps it out for one half-life, two failures for two. "0s": never.
    keep_out_half_life: SecondsOrZero = 600.0
    keep_out_threshold: float = Field(default=0.5, gt=0, le=16)

    @model_validator(mode="after")
    def _unique_domains(self) -> Self:
        seen: set[tuple[str, str]] = set()
        for domain in self.domains:
            key = (domain.topology_key, domain.name)
            if key in seen:
                raise ValueError(
                    f"domain {domain.name!r} (topologyKey {domain.topology_key!r}) is declared "
                    "twice; list each node pool once"
                )
            seen.add(key)
        return self


class Logging(_Section):
    level: LogLevel = LogLevel.INFO
    format: LogFormat = LogFormat.JSON


class ControllerConfig(_Section):
    """Everything `jobset-controller` can be told, by config file or flags."""

    api_version: str = CONFIG_API_VERSION
    kind: str = CONFIG_KIND
    client_connection: ClientConnection = ClientConnection()
    leader_election: LeaderElection = LeaderElection()
    metrics: Metrics = Metrics()
    health: Health = Health()
    controller: ControllerTuning = ControllerTuning()
    placement: Placement = Placement()
    logging: Logging = Logging()
    feature_gates: dict[str, bool] = Field(default_factory=dict)
    # Accepted for compatibility with upstream config files, not acted on (see module docstring).
    webhook: dict[str, Any] | None = None
    internal_cert_management: dict[str, Any] | None = None
    tls: dict[str, Any] | None = None

    @field_validator("api_version")
    @classmethod
    def _api_version(cls, value: str) -> str:
        if value != CONFIG_API_VERSION:
            raise ValueError(f"must be {CONFIG_API_VERSION!r}, got {value!r}")
        return value

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value != CONFIG_KIND:
            raise ValueError(f"must be {CONFIG_KIND!r}, got {value!r}")
        return value

    @field_validator("feature_gates")
    @classmethod
    def _known_gates(cls, value: dict[str, bool]) -> dict[str, bool]:
        FeatureGates.of(value)  # the registry refuses unknown and locked gates, naming them
        return value

    def gates(self) -> FeatureGates:
        """The effective feature gates: the registry's defaults with this config's values."""
        return FeatureGates.of(self.feature_gates)

    def ignored_upstream_sections(self) -> list[str]:
        """Upstream sections present in the file that this controller does not act on."""
        present = {
            "webhook": self.webhook,
            "internalCertManagement": self.internal_cert_management,
            "tls": self.tls,
        }
        return [name for name, value in present.items() if value is not None]

    # --- rendering -------------------------------------------------------------------------------

    def to_file_dict(self) -> dict[str, Any]:
        """The config file as a plain dict: camelCase keys, Go durations, defaults included."""
        data = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        for section, keys in _DURATION_FIELDS.items():
            for key in keys:
                data[section][key] = format_duration(data[section][key])
        return data

    def to_yaml(self) -> str:
        """The config file text (what a ConfigMap carries and `--config` reads)."""
        return yaml.safe_dump(self.to_file_dict(), sort_keys=False)

    def to_args(self, config_path: str | None = None) -> list[str]:
        """Container args. With `config_path`, everything lives in that file: only `--config`.

        Without it, every setting is rendered as a flag; placement domains have no flag form, so
        they need a config file (an error says so).
        """
        if config_path is not None:
            return [f"--config={config_path}"]
        if self.placement.domains:
            raise ControllerConfigError(
                "placement.domains cannot be passed as flags; render the config with to_yaml() "
                "into a ConfigMap and call to_args(config_path=...)"
            )
        return [f"--{flag.name}={flag.render(self)}" for flag in FLAGS]

    # --- parsing ---------------------------------------------------------------------------------

    @classmethod
    def from_yaml(cls, text: str, source: str = "config file") -> ControllerConfig:
        """Parse a config file's text; errors name `source` and the offending key."""
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ControllerConfigError(f"{source}: not valid YAML: {err}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ControllerConfigError(f"{source}: expected a mapping at the top level")
        return cls.from_dict(data, source)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "config") -> ControllerConfig:
        try:
            return cls.model_validate(dict(data))
        except ValidationError as err:
            raise ControllerConfigError(_describe(err, source)) from None


_DURATION_FIELDS: dict[str, tuple[str, ...]] = {
    "leaderElection": ("leaseDuration", "renewDeadline", "retryPeriod"),
    "controller": (
        "expectationsTimeout",
        "cacheSyncTimeout",
        "backoffBase",
        "backoffMax",
        "childEventBatchPeriod",
    ),
    "placement": ("keepOutHalfLife",),
}


def _describe(err: ValidationError, source: str) -> str:
    lines = []
    for problem in err.errors():
        key = ".".join(str(part) for part in problem["loc"]) or "(top level)"
        message = problem["msg"].removeprefix("Value error, ")
        if problem["type"] == "extra_forbidden":
            message = "unknown key; check the spelling (keys are camelCase, as upstream)"
        lines.append(f"{source}: {key}: {message}")
    return "\n".join(lines)


# --- flags ----------------------------------------------------------------------------------------


class Flag:
    """One command-line flag bound to a config path (section, key) in camelCase."""

    def __init__(self, name: str, path: tuple[str, str], help_text: str) -> None:
        self.name = name
        self.path = path
        self.help = help_text

    def value(self, config: ControllerConfig) -> Any:
        section, key = self.path
        return config.to_file_dict()[section][key]

    def render(self, config: ControllerConfig) -> str:
        value = self.value(config)
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)


LEADER_ELECT_PATH = ("leaderElection", "leaderElect")
FLAGS: tuple[Flag, ...] = (
    Flag("kube-api-qps", ("clientConnection", "qps"), "client QPS to the API server (500)"),
    Flag("kube-api-burst", ("clientConnection", "burst"), "client burst (500)"),
    Flag("leader-elect", ("leaderElection", "leaderElect"), "enable Lease leader election"),
    Flag("leader-elect-lease-duration", ("leaderElection", "leaseDuration"), "lease (15s)"),
    Flag("leader-elect-renew-deadline", ("leaderElection", "renewDeadline"), "renew (10s)"),
    Flag("leader-elect-retry-period", ("leaderElection", "retryPeriod"), "retry (2s)"),
    Flag("leader-election-id", ("leaderElection", "resourceName"), "Lease name"),
    Flag("leader-election-namespace", ("leaderElection", "resourceNamespace"), "Lease namespace"),
    Flag("metrics-bind-address", ("metrics", "bindAddress"), "metrics address (:8443)"),
    Flag("metrics-secure", ("metrics", "secureServing"), "HTTPS + TokenReview/SAR (true)"),
    Flag("metrics-cert-dir", ("metrics", "certDir"), "tls.crt/tls.key folder ('' = self-signed)"),
    Flag(
        "health-probe-bind-address",
        ("health", "healthProbeBindAddress"),
        "/healthz and /readyz address (:8081)",
    ),
    Flag("workers", ("controller", "workers"), "concurrent reconciles (4)"),
    Flag("max-parallelism", ("controller", "maxParallelism"), "parallel creates/deletes (50)"),
    Flag("watch-namespace", ("controller", "watchNamespace"), "namespace to watch ('' = all)"),
    Flag("placement-mode", ("placement", "mode"), "auto | exclusive | affinity | off"),
    Flag("placement-keep-out-half-life", ("placement", "keepOutHalfLife"),
         "half-life of a failed pool's keep-out (10m; 0s = never)"),
    Flag("placement-keep-out-threshold", ("placement", "keepOutThreshold"),
         "decayed failures above which a pool is kept out (0.5)"),
    Flag("log-level", ("logging", "level"), "debug | info | warning | error"),
    Flag("log-format", ("logging", "format"), "json | text"),
)
