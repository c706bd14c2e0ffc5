"""Prometheus metrics with controller-runtime's names and labels, plus upstream's `jobset_*`.

Every controller instance gets its own `CollectorRegistry`, so two controllers in one process (the
leader-election tests) do not share counters. Buckets are set explicitly to controller-runtime's,
since prometheus_client's defaults differ and dashboards compare them. Names live in
api/constants.py (METRIC_*).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from jobset_infra.api import constants as c
from jobset_infra.api import resilience as res

CONTROLLER_NAME = c.CONTROLLER_NAME  # the `controller` label value upstream uses

# controller-runtime pkg/internal/controller/metrics: 0.005 .. 60 s.
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
)  # fmt: skip
# controller-runtime pkg/internal/metrics/workqueue.go: ExponentialBuckets(1e-8, 10, 10).
WORKQUEUE_BUCKETS = tuple(1e-8 * 10**i for i in range(10))
# jobset_recovery_seconds: a restart on a free pool takes seconds, one that waits for a repair
# or for quota minutes to an hour.
RECOVERY_BUCKETS = (1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600)
# client-go rest_client_request_duration_seconds.
REST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
_CONTROLLER = ["controller"]
_QUEUE = ["name", "controller"]


PHASES = ("queued", "admitted", "running")


class PhaseSeconds(Collector):
    """`jobset_phase_seconds_total{phase}`: the seconds closed phases took, plus, at each
    scrape, the time so far of every JobSet's open phase (`open_seconds`, set by the recovery
    tracker), so a JobSet running for hours without a reconcile still counts."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.closed = dict.fromkeys(PHASES, 0.0)
        self.open_seconds: Callable[[], Mapping[str, float]] = dict
        registry.register(self)

    def add(self, phase: str, seconds: float) -> None:
        """Count `seconds` of a phase that ended."""
        if phase in self.closed:
            self.closed[phase] += seconds

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = self.describe_family()
        now = self.open_seconds()
        for phase in PHASES:
            family.add_metric([phase], self.closed[phase] + now.get(phase, 0.0))
        yield family

    def describe(self) -> Iterator[CounterMetricFamily]:
        yield self.describe_family()

    @staticmethod
    def describe_family() -> CounterMetricFamily:
        return CounterMetricFamily(
            res.METRIC_PHASE_SECONDS_TOTAL,
            "Seconds JobSets spent queued (suspended), admitted (not every Job running) and "
            "running", labels=[res.METRIC_LABEL_PHASE])


@dataclass
class Metrics:
    """All metric families of one controller, registered on its own registry."""

    registry: CollectorRegistry = field(
        default_factory=lambda: CollectorRegistry(auto_describe=True)
    )

    def __post_init__(self) -> None:
        # controller-runtime exposes no `_created` series; prometheus_client's switch is global.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self._reconcile_families()
        self._workqueue_families()
        self._client_families()
        self._jobset_families()
        self._slice_health_families()
        self._rest_children: dict[tuple[str, str, str], Any] = {}
        self._children: dict[tuple[int, tuple[tuple[str, str], ...]], Any] = {}

    def _reconcile_families(self) -> None:
        r = self.registry
        self.reconcile_total = Counter(
            c.METRIC_RECONCILE_TOTAL,
            "Total number of reconciliations per controller",
            [*_CONTROLLER, "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            c.METRIC_RECONCILE_ERRORS_TOTAL,
            "Total number of reconciliation errors per controller",
            _CONTROLLER,
            registry=r,
        )
        self.reconcile_panics = Counter(
            c.METRIC_RECONCILE_PANICS_TOTAL,
            "Total number of reconciliation panics per controller",
            _CONTROLLER,
            registry=r,
        )
        self.reconcile_time = Histogram(
            c.METRIC_RECONCILE_TIME_SECONDS,
            "Length of time per reconciliation per controller",
            _CONTROLLER,
            buckets=RECONCILE_BUCKETS,
            registry=r,
        )
        self.max_concurrent = Gauge(
            c.METRIC_MAX_CONCURRENT_RECONCILES,
            "Maximum number of concurrent reconciles per controller",
            _CONTROLLER,
            registry=r,
        )
        self.active_workers = Gauge(
            c.METRIC_ACTIVE_WORKERS,
            "Number of currently used workers per controller",
            _CONTROLLER,
            registry=r,
        )

    def _workqueue_families(self) -> None:
        r = self.registry
        self.wq_depth = Gauge(
            c.METRIC_WORKQUEUE_DEPTH, "Current depth of workqueue", _QUEUE, registry=r
        )
        self.wq_adds = Counter(
            c.METRIC_WORKQUEUE_ADDS_TOTAL,
            "Total number of adds handled by workqueue",
            _QUEUE,
            registry=r,
        )
        self.wq_queue_duration = Histogram(
            c.METRIC_WORKQUEUE_QUEUE_DURATION_SECONDS,
            "How long in seconds an item stays in workqueue before being requested",
            _QUEUE,
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        )
        self.wq_work_duration = Histogram(
            c.METRIC_WORKQUEUE_WORK_DURATION_SECONDS,
            "How long in seconds processing an item from workqueue takes",
            _QUEUE,
            buckets=WORKQUEUE_BUCKETS,
            registry=r,
        )
        self.wq_unfinished = Gauge(
            c.METRIC_WORKQUEUE_UNFINISHED_WORK_SECONDS,
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration.",
            _QUEUE,
            registry=r,
        )
        self.wq_longest = Gauge(
            c.METRIC_WORKQUEUE_LONGEST_RUNNING_SECONDS,
            "How many seconds has the longest running processor for workqueue been running.",
            _QUEUE,
            registry=r,
        )
        self.wq_retries = Counter(
            c.METRIC_WORKQUEUE_RETRIES_TOTAL,
            "Total number of retries handled by workqueue",
            _QUEUE,
            registry=r,
        )

    def _client_families(self) -> None:
        r = self.registry
        self.rest_requests = Counter(
            c.METRIC_REST_REQUESTS_TOTAL,
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=r,
        )
        self.rest_duration = Histogram(
            c.METRIC_REST_REQUEST_DURATION_SECONDS,
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_BUCKETS,
            registry=r,
        )
        self.rest_rate_limiter = Histogram(
            c.METRIC_REST_RATE_LIMITER_DURATION_SECONDS,
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_BUCKETS,
            registry=r,
        )
        self.rest_retries = Counter(
            c.METRIC_REST_REQUEST_RETRIES_TOTAL,
            "Number of request retries, partitioned by status code, verb, and host.",
            ["code", "verb", "host"],
            registry=r,
        )

    def _jobset_families(self) -> None:
        r = self.registry
        jobset_labels = [c.METRIC_LABEL_JOBSET_NAME, c.METRIC_LABEL_NAMESPACE]
        self.leader_status = Gauge(
            c.METRIC_LEADER_ELECTION_MASTER_STATUS,
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=r,
        )
        self.jobset_failed = Counter(
            c.METRIC_FAILED_TOTAL, "Number of failed JobSets", jobset_labels, registry=r
        )
        self.jobset_completed = Counter(
            c.METRIC_COMPLETED_TOTAL, "Number of completed JobSets", jobset_labels, registry=r
        )
        self.expectations_expired = Counter(
            c.METRIC_EXPECTATIONS_EXPIRED_TOTAL,
            "Reconciles that proceeded because create/delete expectations timed out",
            registry=r,
        )
        self.job_write_window = Gauge(
            c.METRIC_JOB_WRITE_WINDOW,
            "Job creates and deletes the congestion window lets be in flight",
            registry=r,
        )
        self.job_write_window_cuts = Counter(
            c.METRIC_JOB_WRITE_WINDOW_CUTS_TOTAL,
            "Times the Job write window was halved (throttled, unavailable, timed out or slow)",
            registry=r,
        )

    def _slice_health_families(self) -> None:
        r = self.registry
        self.domain_failures = Counter(
            res.METRIC_DOMAIN_FAILURES_TOTAL,
            "Child Job failures recorded against the topology domain (node pool) they held, "
            "by cause",
            [res.METRIC_LABEL_CAUSE],
            registry=r,
        )
        for cause in res.Cause:  # the label set is bounded: every series exists from the start
            self.domain_failures.labels(cause=cause.value)
        self.domains_kept_out = Gauge(
            res.METRIC_DOMAINS_KEPT_OUT,
            "Topology domains (node pools) kept out of assignments after recent failures",
            registry=r,
        )
        self._recovery_families()

    def _recovery_families(self) -> None:
        r, cause = self.registry, [res.METRIC_LABEL_CAUSE]
        self.recovery_seconds = Histogram(
            res.METRIC_RECOVERY_SECONDS,
            "Seconds from a child Job's failure to every Job of its JobSet running again, by "
            "the cause of the failure",
            cause, buckets=RECOVERY_BUCKETS, registry=r,
        )
        self.restarts_by_cause = Counter(
            res.METRIC_RESTARTS_BY_CAUSE_TOTAL,
            "Failures that started a JobSet's recovery, by cause", cause, registry=r,
        )
        self.phase_seconds = PhaseSeconds(r)
        for value in res.Cause:  # bounded label sets: every series exists from the start
            self.recovery_seconds.labels(cause=value.value)
            self.restarts_by_cause.labels(cause=value.value)

    def initialise(self, controller: str = CONTROLLER_NAME) -> None:
        """Create every labelled child at zero, as controller-runtime does at start, so
        dashboards and rate() see the series before the first event."""
        for result in ("success", "error", "requeue", "requeue_after"):
            self.reconcile_total.labels(controller=controller, result=result)
        for family in (self.reconcile_errors, self.reconcile_panics, self.active_workers):
            family.labels(controller=controller)
        self.reconcile_time.labels(controller=controller)
        wq = {"name": controller, "controller": controller}
        for metric in (
            self.wq_depth,
            self.wq_adds,
            self.wq_queue_duration,
            self.wq_work_duration,
            self.wq_unfinished,
            self.wq_longest,
            self.wq_retries,
        ):
            metric.labels(**wq)

    def count_request(self, code: str, method: str, host: str) -> None:
        """rest_client_requests_total += 1 (the labelled child is cached: this is per request)."""
        key = (code, method, host)
        child = self._rest_children.get(key)
        if child is None:
            child = self._rest_children[key] = self.rest_requests.labels(
                code=code, method=method, host=host
            )
        child.inc()

    def child(self, family: Any, **labels: str) -> Any:
        """`family.labels(**labels)`, cached: the per-request and per-item families (request
        duration, rate-limiter wait, work-queue adds and durations) would otherwise validate
        and look up their labels on every call."""
        key = (id(family), tuple(labels.items()))
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = family.labels(**labels)
        return found

    def exposition(self) -> bytes:
        """The text exposition format of this registry (what /metrics serves)."""
        return bytes(generate_latest(self.registry))

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        """One sample's value (0 when absent); for tests and the `sim` summary."""
        value = self.registry.get_sample_value(name, labels or {})
        return float(value) if value is not None else 0.0
