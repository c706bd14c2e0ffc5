"""The scenarios, each one run of one controller on its own fresh `Testbed`.

- `scale`: one JobSet of N one-Pod Jobs on CPU Nodes. Start: created → all N Jobs exist → all
  N Pods Running → the JobSet's status counts N ready. Then the quiet window. Recovery: one Pod
  exits 1 (kwok, through the exit-code annotation), its Job fails (backoffLimit 0), the JobSet
  restarts: timed to all N Jobs of attempt 1 existing and all their Pods Running.
- `placement`: a multislice JobSet of S v5e 4x4 slices (4 Pods each) with exclusive placement
  per node pool, on exactly S pools; start as above plus the scheduling rate and the Pods with
  inter-pod affinity; recovery (when asked) as above.
- `footprint`: J Jobs in J/1000 JobSets; RSS of the idle controller with all of them cached.

Writes are the controller's own requests in the API server's audit log. "Settled" is the first
moment the controller has sent no write for `SETTLE_QUIET` seconds after convergence; the quiet
window that follows counts every write (target 0).
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Final

from benchmarks.real import audit
from benchmarks.real.observe import PODS, Observer
from benchmarks.real.testbed import Testbed, pick
from benchmarks.real.workloads import (
    EXIT_CODE,
    HOSTS_PER_SLICE,
    first_job_prefix,
    multislice_jobset,
    scale_jobset,
)
from jobset_infra.controller.runtime.kube import MERGE_PATCH
from jobset_infra.controller.runtime.resources import JOBSETS

SETTLE_QUIET: Final = 1.0
SETTLE_TIMEOUT: Final = 30.0
MIB: Final = 1024 * 1024
NAMESPACE: Final = "bench"


@dataclass
class Phase:
    """Start or recovery: seconds from its trigger to each milestone, and what it cost."""

    jobs_s: float
    running_s: float
    ready_s: float
    settled_s: float
    writes: int
    write_kinds: dict[str, int]
    reads: int
    pods: int = 0
    pods_per_s: float = 0.0  # Pods / (last bound - first created): the scheduling rate
    # The controller's own share, from the audit log: trigger -> its first write, and the
    # first-to-last request of its burst of Job creates (and of deletes, in a recovery)
    reaction_s: float = 0.0
    creates_s: float = 0.0
    deletes_s: float = 0.0
    # milestones not reached before the phase timeout: their seconds are lower bounds
    missed: list[str] = field(default_factory=list)
    incomplete: str = ""


def _span(requests: list[audit.Request], key: str) -> float:
    times = [r.at for r in requests if r.key == key]
    return max(times) - min(times) if times else 0.0


@dataclass
class Run:
    scenario: str
    controller: str
    size: int
    limits: str
    round: int
    start: Phase | None = None
    recovery: Phase | None = None
    quiet_window_s: float = 0.0
    quiet_writes: int = 0
    quiet_write_kinds: dict[str, int] = field(default_factory=dict)
    affinity_pods: int = 0
    pods: int = 0
    jobs_created: int = 0
    cpu_s: float = 0.0
    peak_rss_mib: float = 0.0
    rss_mib: float = 0.0
    baseline_rss_mib: float = 0.0
    reconciles: float = 0.0
    scheduler: dict[str, float] = field(default_factory=dict)
    webhooks: dict[str, float] = field(default_factory=dict)
    controller_metrics: dict[str, float] = field(default_factory=dict)
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)
    wall_s: float = 0.0
    harness_cpu_s: float = 0.0  # this process: its watches of every Job, Pod and JobSet

    @property
    def writes(self) -> int:
        return sum(p.writes for p in (self.start, self.recovery) if p) + self.quiet_writes

    @property
    def cpu_ms_per_write(self) -> float:
        return self.cpu_s * 1000 / self.writes if self.writes else 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"writes": self.writes, "cpu_ms_per_write": self.cpu_ms_per_write}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        """The run `as_dict` printed (its derived figures are recomputed, not read)."""
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in names}
        for phase in ("start", "recovery"):
            if kept.get(phase) is not None:
                kept[phase] = Phase(**kept[phase])
        kept["load"] = tuple(kept.get("load", (0.0, 0.0, 0.0)))
        return cls(**kept)


async def settle(bed: Testbed, after: float) -> float:
    """The first moment (wall clock, ≥ `after`) from which the controller sent no write for
    SETTLE_QUIET seconds; SETTLE_TIMEOUT bounds the wait (then: now)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        last = max(after, bed.audit.last_write(bed.peer.user) or after)
        if time.time() - last >= SETTLE_QUIET:
            return last
        await asyncio.sleep(0.1)
    return time.time()


async def fail_one_pod(bed: Testbed, obs: Observer, attempt: str = "0") -> None:
    """Make the first Pod of Job 0 exit 1 (kwok's exit-code stage), as a crashed worker."""
    prefix = first_job_prefix()
    for key in sorted(obs.attempt(attempt).running):
        namespace, name = key.split("/", 1)
        if name.startswith(prefix):
            patch = {"metadata": {"annotations": {EXIT_CODE: "1"}}}
            await bed.api.patch(PODS, name, patch, namespace=namespace,
                                content_type=MERGE_PATCH)
            return
    raise RuntimeError(f"no running Pod {prefix}* of attempt {attempt} to fail")


def expect(obs: Observer, attempt: str, jobs: int, pods: int) -> None:
    obs.expect(f"jobs:{attempt}", "jobs", attempt, jobs)
    obs.expect(f"running:{attempt}", "running", attempt, pods)
    obs.expect(f"ready:{attempt}", "ready", attempt, jobs)
    obs.expect(f"suspended:{attempt}", "suspended", attempt, jobs)


RUNNING: Final = (("jobs", "jobs_s"), ("running", "running_s"), ("ready", "ready_s"))
# A suspended JobSet's Jobs get no Pods: "ready" is then its status counting them suspended.
SUSPENDED: Final = (("jobs", "jobs_s"), ("suspended", "ready_s"))


async def phase(bed: Testbed, obs: Observer, attempt: str, began: float, timeout: float, *,
                milestones: tuple[tuple[str, str], ...] = RUNNING) -> Phase:
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(1.0, deadline - time.monotonic())

    at: dict[str, float] = {"running_s": began}
    missed: list[str] = []
    incomplete = ""
    for milestone, attr in milestones:
        try:
            at[attr] = await obs.wait(f"{milestone}:{attempt}", left())
        except TimeoutError as err:  # a slow peer is a result: keep what it reached
            at[attr] = time.time()
            missed.append(attr)
            incomplete = incomplete or str(err)
    jobs_at, running_at, ready_at = at["jobs_s"], at["running_s"], at["ready_s"]
    settled = ready_at if missed else await settle(bed, ready_at)
    requests = bed.audit.between(bed.peer.user, began, settled)
    seen = obs.attempt(attempt)
    binds = seen.bind_times()
    first = seen.first_created()
    rate = len(binds) / (binds[-1] - first) if binds and first and binds[-1] > first else 0.0
    return Phase(
        jobs_s=jobs_at - began, running_s=running_at - began, ready_s=ready_at - began,
        settled_s=settled - began, writes=sum(1 for r in requests if r.write),
        write_kinds=dict(audit.writes(requests)), reads=sum(1 for r in requests if not r.write),
        pods=len(seen.pods), pods_per_s=rate,
        reaction_s=min((r.at for r in requests if r.write), default=began) - began,
        creates_s=_span(requests, "create jobs"), deletes_s=_span(requests, "delete jobs"),
        missed=missed, incomplete=incomplete,
    )


async def quiet(bed: Testbed, window: float, run: Run) -> None:
    began = time.time()
    await asyncio.sleep(window)  # a window is a duration: what happens in it is the figure
    requests = [r for r in bed.audit.between(bed.peer.user, began, time.time()) if r.write]
    run.quiet_window_s += window
    run.quiet_writes += len(requests)
    for key, count in audit.writes(requests).items():
        run.quiet_write_kinds[key] = run.quiet_write_kinds.get(key, 0) + count


Samples = tuple[tuple[str, str, dict[str, str]], ...]
SCHEDULER_SAMPLES: Final[Samples] = (
    ("scheduled", "scheduler_schedule_attempts", {"result": "scheduled"}),
    ("unschedulable", "scheduler_schedule_attempts", {"result": "unschedulable"}),
    ("attempt_seconds", "scheduler_scheduling_attempt_duration_seconds_sum", {}),
    ("attempts", "scheduler_scheduling_attempt_duration_seconds_count", {}),
)
# The controller's own metrics (controller-runtime's names; ours uses the same): where its wall
# time went. Reconcile seconds by controller (upstream also runs a Pod reconciler), seconds
# waited in its client token bucket, and (upstream) seconds spent answering admission webhooks.
CONTROLLER_SAMPLES: Final[Samples] = (
    ("reconciles", "controller_runtime_reconcile", {}),
    ("reconcile_s", "controller_runtime_reconcile_time_seconds_sum", {}),
    ("pod_reconcile_s", "controller_runtime_reconcile_time_seconds_sum", {"controller": "pod"}),
    ("rate_limited_s", "rest_client_rate_limiter_duration_seconds_sum", {}),
    ("webhook_s", "controller_runtime_webhook_latency_seconds_sum", {}),
    ("webhook_requests", "controller_runtime_webhook_latency_seconds_count", {}),
)
WEBHOOK_SAMPLES: Final[Samples] = (
    ("calls", "apiserver_admission_webhook_admission_duration_seconds_count", {}),
    ("seconds", "apiserver_admission_webhook_admission_duration_seconds_sum", {}),
    ("rejections", "apiserver_admission_webhook_rejection_count", {}),
)


async def scheduler_counts(bed: Testbed) -> dict[str, float]:
    return pick(await bed.scheduler_metrics(), SCHEDULER_SAMPLES)


async def controller_counts(bed: Testbed) -> dict[str, float]:
    return pick(await bed.controller.metrics(bed.session), CONTROLLER_SAMPLES)


async def webhook_counts(bed: Testbed) -> dict[str, float]:
    return pick(await bed.apiserver_metrics(), WEBHOOK_SAMPLES)


def _delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0.0) for k in after}


def _self_cpu() -> float:
    times = os.times()
    return times.user + times.system


def phase_timeout(jobs: int, pods: int) -> float:
    """Generous: upstream's exclusive placement at S=256 took minutes on a loaded machine."""
    return 120 + 0.5 * jobs + 0.5 * pods


async def job_run(bed: Testbed, run: Run, manifest: dict[str, Any], jobs: int, pods: int, *,
                  quiet_window: float, recover: bool) -> Run:
    """Start (and recovery) of one JobSet: what `scale` and `placement` share."""
    started, harness = time.monotonic(), _self_cpu()
    run.load = os.getloadavg()
    await bed.create_namespace(NAMESPACE)
    obs = Observer(bed.api, [NAMESPACE])
    await obs.start()
    expect(obs, "0", jobs, pods)
    expect(obs, "1", jobs, pods)
    timeout = phase_timeout(jobs, pods)
    cpu, sched, hooks = bed.controller.cpu_seconds(), await scheduler_counts(bed), \
        await webhook_counts(bed)
    own = await controller_counts(bed)
    try:
        began = time.time()
        await bed.api.create(JOBSETS, manifest)
        run.start = await phase(bed, obs, "0", began, timeout)
        run.affinity_pods = obs.attempt("0").affinity_pods()
        run.scheduler = _delta(await scheduler_counts(bed), sched)
        if not run.start.missed:
            await quiet(bed, quiet_window, run)
        if recover and not run.start.missed:
            began = time.time()
            await fail_one_pod(bed, obs)
            run.recovery = await phase(bed, obs, "1", began, timeout)
            run.affinity_pods += obs.attempt("1").affinity_pods()
            if not run.recovery.missed:
                await quiet(bed, quiet_window, run)
    finally:
        await obs.stop()
    run.pods = sum(len(a.pods) for a in obs.attempts.values())
    run.jobs_created = sum(len(a.jobs) for a in obs.attempts.values())
    return await _costs(bed, run, own=own, hooks=hooks, cpu=cpu, started=started,
                        harness=harness)


async def scale(bed: Testbed, run: Run, *, quiet_window: float) -> Run:
    return await job_run(bed, run, scale_jobset(NAMESPACE, run.size), run.size, run.size,
                         quiet_window=quiet_window, recover=True)


async def placement(bed: Testbed, run: Run, *, quiet_window: float, recover: bool) -> Run:
    pods = run.size * HOSTS_PER_SLICE
    return await job_run(bed, run, multislice_jobset(NAMESPACE, run.size), run.size, pods,
                         quiet_window=quiet_window, recover=recover)


async def footprint(bed: Testbed, run: Run, *, per_jobset: int = 1000) -> Run:
    """RSS of the idle controller with `run.size` Jobs in its caches, in JobSets of
    `per_jobset`. Scenario "footprint": the JobSets are suspended, so the Jobs exist (both
    controllers create a suspended JobSet's Jobs, suspended) and no Pod does; "footprint-pods":
    every Job runs its Pod (what upstream's Pod informer then caches too)."""
    started, harness = time.monotonic(), _self_cpu()
    run.load = os.getloadavg()
    pods = run.scenario == "footprint-pods"
    count = max(1, run.size // per_jobset)
    namespaces = [f"fp-{i}" for i in range(count)]
    for namespace in namespaces:
        await bed.create_namespace(namespace)
    obs = Observer(bed.api, namespaces)
    await obs.start()
    per = run.size // count
    expect(obs, "0", per * count, per * count)
    run.baseline_rss_mib = bed.controller.rss_bytes() / MIB
    cpu, own, hooks = bed.controller.cpu_seconds(), await controller_counts(bed), \
        await webhook_counts(bed)
    try:
        began = time.time()
        await asyncio.gather(*(bed.api.create(JOBSETS, scale_jobset(ns, per, suspend=not pods))
                               for ns in namespaces))
        run.start = await phase(bed, obs, "0", began,
                                phase_timeout(run.size, run.size if pods else 0),
                                milestones=RUNNING if pods else SUSPENDED)
    finally:
        await obs.stop()
    run.jobs_created = len(obs.attempt("0").jobs)
    run.pods = len(obs.attempt("0").pods)
    return await _costs(bed, run, own=own, hooks=hooks, cpu=cpu, started=started,
                        harness=harness)


async def _costs(bed: Testbed, run: Run, *, own: dict[str, float], hooks: dict[str, float],
                 cpu: float, started: float, harness: float) -> Run:
    """`run` with what it cost: the controller's counters, CPU and memory since the baseline
    readings (`own`, `hooks`, `cpu`, the wall and harness clocks at `started`/`harness`)."""
    run.controller_metrics = _delta(await controller_counts(bed), own)
    run.webhooks = _delta(await webhook_counts(bed), hooks)
    run.reconciles = run.controller_metrics["reconciles"]
    run.cpu_s = bed.controller.cpu_seconds() - cpu
    run.rss_mib = bed.controller.rss_bytes() / MIB
    run.peak_rss_mib = bed.controller.peak_rss_bytes() / MIB
    run.wall_s = time.monotonic() - started
    run.harness_cpu_s = _self_cpu() - harness
    return run
