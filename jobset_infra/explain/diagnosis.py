"""Why a JobSet is (not) running: one answer across the JobSet, Kueue, placement, pods and nodes.

Pure; no I/O, no clock (`now` comes in). `explain(gathered)` reads plain objects as the API
server returns them (`Gathered`, which `explain.gather` fills, read-only) and returns an
`Explanation`: the JobSet's state, the first thing blocking it at each layer, and what would
unblock it. The layers are read in the order a JobSet moves through them:

1. finished: `Completed` / `Failed` (with the failed Jobs' causes, from their pods' exit codes
   and the nodes they ran on: `placement.failure_cause.diagnose`);
2. queued: suspended and its Kueue Workload has no quota reserved (the ClusterQueue's quota, what
   the Workload asks, what is in use and by whom), or an admission check is not Ready;
3. placement: `ExclusivePlacementPending` (the controller's own words on which pools exist and
   which are busy) with every pool of the JobSet's topology key whose nodes its pods select
   (their nodeSelector): free, occupied (by which JobSet), kept out after failures (until
   when), not ready or cordoned, spare;
4. pods: Pending and unschedulable (the scheduler's message), or containers that cannot start
   (image pull errors, crash loops);
5. otherwise running, or starting.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api import resilience as res
from jobset_infra.explain.kueue_view import quota_fixes, workload_summary
from jobset_infra.explain.objects import Obj, condition, conditions, is_true
from jobset_infra.placement.domains import domains_from_nodes
from jobset_infra.placement.failure_cause import (
    FailureEvidence,
    diagnose,
    pod_failure_from_manifest,
)
from jobset_infra.placement.jobs import job_view_from_manifest
from jobset_infra.placement.nodes import (
    SlimNode,
    matches_node_selector,
    slim_node_from_manifest,
)
from jobset_infra.placement.occupancy import Occupancy
from jobset_infra.placement.pool_health import HealthPolicy, kept_out, ledger_from_text
from jobset_infra.placement.recovery import is_spare
from jobset_infra.placement.strategy import child_job_annotations, exclusive_topology

__all__ = ["Blocker", "Explanation", "Gathered", "PoolState", "explain"]


# Container waiting reasons that keep a pod from ever running without a change by someone.
_STUCK_WAITING = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
                            "CreateContainerConfigError", "CreateContainerError",
                            "CrashLoopBackOff"})


@dataclass(frozen=True)
class Gathered:
    """Everything `explain` reads, as the API server returned it (None: not readable)."""

    jobset: Obj
    now: datetime
    jobs: Sequence[Obj] = ()
    """The JobSet's child Jobs."""
    pods: Sequence[Obj] = ()
    """The JobSet's pods."""
    nodes: Sequence[Obj] | None = None
    all_jobs: Sequence[Obj] = ()
    """Every Job in the cluster (who holds which pool)."""
    ledger: str | None = None
    """The slice-health ledger's `failures.json`."""
    policy: HealthPolicy = field(default_factory=HealthPolicy)
    kueue: bool = False
    """Whether the Kueue Workload API is served."""
    workload: Obj | None = None
    workloads: Sequence[Obj] = ()
    """Every Workload of the Workload's ClusterQueue (what holds the quota)."""
    local_queue: Obj | None = None
    cluster_queue: Obj | None = None


@dataclass(frozen=True)
class Blocker:
    """One thing in the way, at one layer, in words."""

    layer: str  # jobset | kueue | placement | pods | nodes
    subject: str
    reason: str
    message: str


@dataclass(frozen=True)
class PoolState:
    """A pool (topology domain) of the JobSet's topology key, as placement sees it."""

    name: str
    state: str  # free | occupied | kept-out | not-ready
    spare: bool = False
    detail: str = ""
    holder: str = ""
    """The JobSet (else the Job) holding an occupied pool."""


@dataclass(frozen=True)
class Explanation:
    """The answer: the state, one sentence, the evidence per layer and what would unblock it."""

    jobset: str
    state: str
    summary: str
    conditions: tuple[Obj, ...] = ()
    workload: Obj | None = None
    pools: tuple[PoolState, ...] = ()
    blockers: tuple[Blocker, ...] = ()
    unblock: tuple[str, ...] = ()
    failures: tuple[Obj, ...] = ()
    """Failed child Jobs with the cause their pods' exit codes and nodes show."""

    def to_json(self) -> dict[str, Any]:
        """Return the explanation as plain JSON data (`-o json`)."""
        return asdict(self)


def explain(g: Gathered) -> Explanation:
    """Return why the JobSet in `g` is where it is, and what would move it on (pure)."""
    meta = g.jobset.get("metadata") or {}
    name = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
    found_conditions = tuple(conditions(g.jobset))
    pools = _pools(g)
    workload = workload_summary(g.workload, g.local_queue, g.cluster_queue, g.workloads)
    failures = _failures(g)
    base = Explanation(name, "", "", found_conditions, workload, pools, failures=failures)
    for step in (_finished, _queued, _placement, _pods):
        found = step(g, base)
        if found is not None:
            return found
    running = _all_running(g)
    state = "Running" if running else "Starting"
    summary = ("every Job is running" if running
               else "its Jobs are being created or their pods are starting")
    return _with(base, state, summary)


# --------------------------------------------------------------------------- layers


def _finished(g: Gathered, base: Explanation) -> Explanation | None:
    if is_true(g.jobset, c.CONDITION_COMPLETED):
        return _with(base, "Completed", "the JobSet completed")
    failed = condition(g.jobset, c.CONDITION_FAILED)
    if failed is None or failed.get("status") != "True":
        return None
    causes = "; ".join(f"{f['job']}: {f['cause']} ({f['detail']})" for f in base.failures)
    message = str(failed.get("message", ""))
    blocker = Blocker("jobset", base.jobset, str(failed.get("reason", "")), message)
    fix = (f"the failed Jobs' causes: {causes}" if causes else "its failed Jobs' pods' logs")
    return _with(base, "Failed", f"the JobSet failed: {message}", (blocker,),
                 (f"fix what failed ({fix}) and create the JobSet again",))


def _queued(g: Gathered, base: Explanation) -> Explanation | None:
    suspended = (g.jobset.get("spec") or {}).get("suspend") is True
    if not suspended:
        return None
    if g.workload is None:
        why = ("no Kueue Workload exists for it (is its queue-name label right, and Kueue's "
               "JobSet integration on?)" if g.kueue else "Kueue is not installed")
        return _with(base, "Suspended", f"the JobSet is suspended; {why}",
                     (Blocker("jobset", base.jobset, "Suspended", "spec.suspend is true"),),
                     ("set spec.suspend to false, or queue it with the label "
                      f"{c.KUEUE_QUEUE_NAME_LABEL}",))
    wl = base.workload or {}
    blockers: list[Blocker] = []
    unblock: list[str] = []
    subject = f"Workload {wl.get('name')}"
    reserved = condition(g.workload, "QuotaReserved")
    if reserved is None or reserved.get("status") != "True":
        message = str((reserved or {}).get("message") or "waiting for the Kueue scheduler")
        blockers.append(Blocker("kueue", subject, str((reserved or {}).get("reason", "Pending")),
                                message))
        unblock.extend(quota_fixes(wl))
    for check in wl.get("admissionChecks") or ():
        if check.get("state") != "Ready":
            blockers.append(Blocker("kueue", f"{subject} admission check {check.get('name')}",
                                    str(check.get("state")), str(check.get("message", ""))))
            unblock.append(f"admission check {check.get('name')} must turn Ready "
                           f"({check.get('message') or 'no message'})")
    if not blockers:
        return None  # admitted; the JobSet is about to be resumed
    summary = f"queued in Kueue: {blockers[0].message}"
    return _with(base, "Queued", summary, tuple(blockers), tuple(unblock))


def _placement(g: Gathered, base: Explanation) -> Explanation | None:
    pending = condition(g.jobset, c.CONDITION_PLACEMENT_PENDING)
    if pending is None or pending.get("status") != "True":
        return None
    message = str(pending.get("message", ""))
    blockers = [Blocker("placement", base.jobset, str(pending.get("reason", "")), message)]
    occupied = sorted({p.holder for p in base.pools
                       if p.state == "occupied" and p.holder != base.jobset})
    kept = [p for p in base.pools if p.state == "kept-out"]
    not_ready = [p for p in base.pools if p.state == "not-ready"]
    for pool in kept + not_ready:
        blockers.append(Blocker("nodes", f"pool {pool.name}", pool.state, pool.detail))
    unblock = []
    if occupied:
        unblock.append(f"wait for the Jobs holding pools to finish ({', '.join(occupied)}), "
                       "or give this JobSet a higher priority")
    if kept:
        unblock.append("pools kept out after recent failures come back when their cool-down "
                       f"ends ({'; '.join(p.detail for p in kept)}); a hot spare "
                       "(slices.spares) stands in for them")
    if not_ready:
        unblock.append("repair (or uncordon) the nodes of "
                       f"{', '.join(p.name for p in not_ready)}")
    if not unblock:
        unblock.append("add pools that fit its pods (more slices of its shape)")
    return _with(base, "WaitingForPools", f"waiting for free pools: {message}",
                 tuple(blockers), tuple(unblock))


def _pods(g: Gathered, base: Explanation) -> Explanation | None:
    blockers, unblock = [], []
    for pod in g.pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        if meta.get("deletionTimestamp") or status.get("phase") != "Pending":
            continue
        subject = f"pod {meta.get('name')}"
        scheduled = condition(pod, "PodScheduled")
        if scheduled is not None and scheduled.get("status") == "False":
            message = str(scheduled.get("message", ""))
            blockers.append(Blocker("pods", subject, str(scheduled.get("reason", "")), message))
            unblock.append(f"make room or fix its requirements: {message}")
            continue
        for container in status.get("containerStatuses") or ():
            waiting = (container.get("state") or {}).get("waiting") or {}
            if waiting.get("reason") in _STUCK_WAITING:
                blockers.append(Blocker("pods", f"{subject} container {container.get('name')}",
                                        str(waiting["reason"]), str(waiting.get("message", ""))))
                unblock.append(f"fix the container {container.get('name')} of {subject}: "
                               f"{waiting['reason']}")
    if not blockers:
        return None
    first = blockers[0]
    summary = f"{len(blockers)} pod problem(s); {first.subject}: {first.reason}: {first.message}"
    return _with(base, "PodsBlocked", summary, tuple(blockers), tuple(dict.fromkeys(unblock)))


# --------------------------------------------------------------------------- evidence


def _topology_key(g: Gathered) -> str | None:
    meta = g.jobset.get("metadata") or {}
    found = exclusive_topology(meta.get("annotations") or {})
    for rjob in (g.jobset.get("spec") or {}).get("replicatedJobs") or ():
        template_meta = (rjob.get("template") or {}).get("metadata") or {}
        inherited = child_job_annotations(meta.get("annotations") or {},
                                          template_meta.get("annotations") or {})
        found = found or exclusive_topology(inherited)
    return found


def _pools(g: Gathered) -> tuple[PoolState, ...]:
    key = _topology_key(g)
    if key is None or g.nodes is None:
        return ()
    nodes = [slim_node_from_manifest(n) for n in g.nodes]
    selectors = _selectors(g, key)
    domains = [d for d in domains_from_nodes(nodes, key)
               if any(matches_node_selector(sel, n.labels) for sel in selectors for n in d.nodes)]
    views = [v for j in g.all_jobs if (v := job_view_from_manifest(j)) is not None]
    occupancy = Occupancy.from_views(views)
    aside = kept_out(ledger_from_text(g.ledger), g.now, g.policy) if g.policy.enabled else {}
    out = []
    for domain in domains:
        holders = occupancy.holders_of(key, domain.name)
        state, detail, holder = "free", "", ""
        if holders:
            state, detail = "occupied", f"held by Job {holders[0].key}"
            holder = holders[0].owner or holders[0].key
        elif (key, domain.name) in aside:
            state, detail = "kept-out", aside[(key, domain.name)].describe()
        elif not domain.healthy:
            bad = [n.name for n in domain.nodes if not n.usable]
            state, detail = "not-ready", f"nodes not ready or cordoned: {', '.join(_first(bad))}"
        out.append(PoolState(domain.name, state, is_spare(domain), detail, holder))
    return tuple(out)


def _selectors(g: Gathered, key: str) -> list[Mapping[str, str]]:
    """Each replicated job's pod nodeSelector without the topology key: which pools are its
    kind (the CPU pool is no candidate for a TPU JobSet)."""
    out: list[Mapping[str, str]] = []
    for rjob in (g.jobset.get("spec") or {}).get("replicatedJobs") or ():
        pod = (((rjob.get("template") or {}).get("spec") or {}).get("template") or {}).get(
            "spec") or {}
        out.append({k: v for k, v in (pod.get("nodeSelector") or {}).items() if k != key})
    return out or [{}]


def _failures(g: Gathered) -> tuple[Obj, ...]:
    nodes: dict[str, SlimNode | None] = {
        str((n.get("metadata") or {}).get("name")): slim_node_from_manifest(n)
        for n in g.nodes or ()}
    out = []
    for job in g.jobs:
        failed = condition(job, c.JOB_CONDITION_FAILED) or condition(
            job, c.JOB_CONDITION_FAILURE_TARGET)
        if failed is None or failed.get("status") != "True":
            continue
        name = str((job.get("metadata") or {}).get("name"))
        pods = tuple(pod_failure_from_manifest(p) for p in g.pods
                     if ((p.get("metadata") or {}).get("labels") or {}).get("job-name") == name)
        ran_on = {p.node: nodes.get(p.node) for p in pods if p.node}
        found = diagnose(str(failed.get("reason", "")), str(failed.get("message", "")),
                         FailureEvidence(pods, ran_on))
        exits = sorted({code for p in pods for code in p.exit_codes})
        out.append({"job": name, "cause": found.cause.value, "detail": found.detail,
                    "infrastructure": found.cause in res.INFRASTRUCTURE_CAUSES,
                    "exitCodes": exits})
    return tuple(out)


def _all_running(g: Gathered) -> bool:
    active = [p for p in g.pods if not (p.get("metadata") or {}).get("deletionTimestamp")]
    return bool(active) and all((p.get("status") or {}).get("phase") in ("Running", "Succeeded")
                                for p in active)


# --------------------------------------------------------------------------- helpers


def _first(names: Sequence[str], shown: int = 4) -> list[str]:
    return [*names[:shown], f"and {len(names) - shown} more"] if len(names) > shown else [*names]


def _with(base: Explanation, state: str, summary: str, blockers: tuple[Blocker, ...] = (),
          unblock: tuple[str, ...] = ()) -> Explanation:
    return Explanation(base.jobset, state, summary, base.conditions, base.workload, base.pools,
                       blockers, unblock, base.failures)
