"""The resilience vocabulary: failure causes, the condition that reports a kept-out pool, the
slice-health ledger's ConfigMap and the metric names.

jobset-infra only (upstream JobSet has none of these). One home for every string the
slice-health ledger, its condition and its metrics share, so a cause is spelled once (as the
metric label value and in the ledger: `Cause.value`). api/constants.py keeps upstream's strings;
this module keeps ours.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "CONDITION_DOMAINS_KEPT_OUT",
    "DOMAINS_KEPT_OUT_REASON",
    "INFRASTRUCTURE_CAUSES",
    "KEPT_OUT_USED_REASON",
    "LEDGER_CONFIGMAP",
    "LEDGER_KEY",
    "METRIC_DOMAINS_KEPT_OUT",
    "METRIC_DOMAIN_FAILURES_TOTAL",
    "METRIC_LABEL_CAUSE",
    "METRIC_LABEL_PHASE",
    "METRIC_PHASE_SECONDS_TOTAL",
    "METRIC_RECOVERY_SECONDS",
    "METRIC_RESTARTS_BY_CAUSE_TOTAL",
    "NO_DOMAIN_KEPT_OUT_REASON",
    "SPARES_USED_REASON",
    "SPARE_POOL_LABEL",
    "Cause",
]


class Cause(StrEnum):
    """Why a child Job failed, as far as the controller can tell (a bounded label set)."""

    NODE_NOT_READY = "node_not_ready"
    """A node the Job ran on (or its pool's) is NotReady or cordoned by the node controller."""
    NODE_DELETED = "node_deleted"
    """A node the Job ran on is gone, or its pool has no nodes left."""
    TPU_DEVICE_ERROR = "tpu_device_error"
    """A node reports a device problem: fewer healthy devices (TPU chips) than it has, or a
    problem condition (node-problem-detector style, True means a problem)."""
    POD_DISRUPTED = "pod_disrupted"
    """A pod was evicted or deleted by the system (DisruptionTarget: taint eviction, pod GC,
    the kubelet, a drain through the Eviction API)."""
    PREEMPTED = "preempted"
    """A pod was preempted by a higher-priority one (DisruptionTarget PreemptionByScheduler)."""
    SIGNAL = "signal"
    """A container was killed by a signal (exit code above 128, not OOMKilled)."""
    OOM_KILLED = "oom_killed"
    """A container ran out of its memory limit."""
    USER_EXIT = "user_exit"
    """A container exited with a code from 1 to 128: the program itself failed."""
    DEADLINE_EXCEEDED = "deadline_exceeded"
    """The Job ran past its activeDeadlineSeconds."""
    UNKNOWN = "unknown"
    """No evidence either way (the nodes are healthy and the Job's condition names no cause)."""


INFRASTRUCTURE_CAUSES: Final = frozenset(
    {Cause.NODE_NOT_READY, Cause.NODE_DELETED, Cause.TPU_DEVICE_ERROR, Cause.POD_DISRUPTED}
)
"""Causes that count against the pool the Job ran on with full weight (pool_health.py)."""

# --- Conditions ---------------------------------------------------------------------------------

# JobSet condition type: True when pools that failed recently for an infrastructure cause were
# kept out of this JobSet's last assignment (the message names each, its causes and until when),
# or used only because no healthy pool could ever hold the Jobs (KEPT_OUT_USED_REASON).
CONDITION_DOMAINS_KEPT_OUT: Final = "TopologyDomainsKeptOut"
DOMAINS_KEPT_OUT_REASON: Final = "RecentFailures"
KEPT_OUT_USED_REASON: Final = "NoHealthyDomainFits"
NO_DOMAIN_KEPT_OUT_REASON: Final = "NoneKeptOut"
# TopologyDomainsKeptOut reason when hot-spare pools stood in for the pools lost (kept out or
# with nodes not ready); the message names both.
SPARES_USED_REASON: Final = "SparePoolsUsed"

# --- Hot-spare pools ----------------------------------------------------------------------------

# Node label ("true") of a hot-spare slice pool (TpuSlicePools(spares=K), tpu/constants.py
# SPARE_POOL_LABEL writes the same string): placement takes such a pool only when a non-spare
# pool of the same topology key is lost, and after every non-spare one.
SPARE_POOL_LABEL: Final = "jobset-infra/spare-pool"

# --- The slice-health ledger --------------------------------------------------------------------

# ConfigMap in the controller's namespace (the leader-election namespace) holding the recent
# failures recorded against topology domains; only the leader writes it.
LEDGER_CONFIGMAP: Final = "jobset-slice-health"
LEDGER_KEY: Final = "failures.json"

# --- Metrics ------------------------------------------------------------------------------------

METRIC_LABEL_CAUSE: Final = "cause"
# Counter {cause}: failures recorded against a topology domain (node pool) in the ledger.
METRIC_DOMAIN_FAILURES_TOTAL: Final = "jobset_topology_domain_failures_total"
# Gauge: topology domains kept out of assignments now.
METRIC_DOMAINS_KEPT_OUT: Final = "jobset_topology_domains_kept_out"
# Histogram {cause}: seconds from a child Job's failure (its FailureTarget/Failed condition) to
# every Job of the JobSet running again (all pods ready), by the cause of the first failure.
METRIC_RECOVERY_SECONDS: Final = "jobset_recovery_seconds"
# Counter {cause}: failures that started a recovery (one per episode, by its first cause).
METRIC_RESTARTS_BY_CAUSE_TOTAL: Final = "jobset_restarts_by_cause_total"
# Counter {phase}: seconds JobSets spent queued, admitted (not every Job running) and running.
METRIC_PHASE_SECONDS_TOTAL: Final = "jobset_phase_seconds_total"
METRIC_LABEL_PHASE: Final = "phase"
