"""Start, recovery and quiet for one JobSet of N child Jobs, against the API floor.

One run, on a running `Bench`:

1. **Start**: create the JobSet (in the sim's store, as `kubectl create` would have it stored);
   time until all N Jobs exist. Floor: N creates at the controller's QPS, N / QPS.
2. **Quiet**: once every Job's Pod is Ready and the JobSet status says so, count the controller's
   writes at the sim over a window (target 0), and the reconciles it ran meanwhile.
3. **Coalescing**: K Pods turn unready at once, the fake Job controller writes K Job status
   changes; reconciles per Job status change = reconcile delta / Job MODIFIED events seen.
4. **Recovery**: fail one Job (its Pod fails, the Job gets Failed=True as the Job controller
   writes it); time until all N Jobs exist again with `restart-attempt: "1"`. The old Jobs are
   deleted with foreground propagation (their Pods go first), then recreated. Floor: 2N writes
   at QPS, 2N / QPS.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.cluster import JOBS, JOBSETS, PODS, Bench, jobset_manifest, self_cpu_seconds
from jobset_infra.api import constants as c
from jobset_infra.sim.apiserver.store import clone
from jobset_infra.sim.apiserver.watch import Watch

JOBSET_NAME = "ms"
RJOB = "slice"


@dataclass(frozen=True)
class ScaleRun:
    """One run's figures; seconds are wall time."""

    jobs: int
    qps: float
    start_s: float
    recovery_s: float
    quiet_window_s: float
    quiet_writes: int
    quiet_reconciles: float
    status_changes: int
    change_reconciles: float
    start_writes: int
    recovery_writes: int
    controller_cpu_s: float
    sim_cpu_s: float
    start_reconciles: float = 0.0
    recovery_reconciles: float = 0.0
    retries: float = 0.0
    controller_gc_s: float = 0.0
    sim_gc_s: float = 0.0
    recovery_requests: tuple[tuple[str, int], ...] = ()
    run_reconciles: float = 0.0
    """Reconcile passes of the JobSet over the whole run (start to recovered and quiet)."""
    peak_rss_mib: float = 0.0
    """The controller's peak RSS so far (VmHWM), MiB."""

    @property
    def cpu_ms_per_write(self) -> float:
        writes = self.start_writes + self.recovery_writes
        return 1000.0 * self.controller_cpu_s / writes if writes else 0.0

    @property
    def start_floor_s(self) -> float:
        return self.jobs / self.qps

    @property
    def recovery_floor_s(self) -> float:
        return 2 * self.jobs / self.qps

    @property
    def start_ratio(self) -> float:
        return self.start_s / self.start_floor_s

    @property
    def recovery_ratio(self) -> float:
        return self.recovery_s / self.recovery_floor_s

    @property
    def quiet_writes_per_minute(self) -> float:
        return self.quiet_writes * 60.0 / self.quiet_window_s

    @property
    def reconciles_per_change(self) -> float:
        return self.change_reconciles / self.status_changes if self.status_changes else 0.0

    def as_dict(self) -> dict[str, Any]:
        derived = {
            name: getattr(self, name)
            for name in ("start_ratio", "recovery_ratio", "quiet_writes_per_minute",
                         "reconciles_per_change", "cpu_ms_per_write")
        }
        return asdict(self) | derived


class JobTally:
    """Follows the namespace's Jobs through a store watch: creations per restart attempt and
    status changes, with an event per attempt that fires once `target` Jobs of it exist."""

    def __init__(self, watch: Watch, target: int) -> None:
        self._watch = watch
        self.target = target
        self.added: Counter[str] = Counter()
        self.modified = 0
        self._done: dict[str, asyncio.Event] = {}
        self._task = asyncio.create_task(self._follow())

    def reached(self, attempt: str) -> asyncio.Event:
        return self._done.setdefault(attempt, asyncio.Event())

    async def _follow(self) -> None:
        async for kind, job in self._watch:
            if kind == "ADDED":
                attempt = job["metadata"].get("labels", {}).get(c.RESTARTS_KEY, "")
                self.added[attempt] += 1
                if self.added[attempt] >= self.target:
                    self.reached(attempt).set()
            elif kind == "MODIFIED":
                self.modified += 1

    def close(self) -> None:
        self._watch.close()
        self._task.cancel()


async def wait_for(event: asyncio.Event, what: str, timeout: float) -> None:
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        raise TimeoutError(f"{what} did not happen within {timeout:.0f} s") from None


async def wait_ready(bench: Bench, namespace: str, jobs: int, timeout: float) -> None:
    """Until the JobSet's status counts every Job ready and the controller stopped writing
    (without Pods nothing becomes ready: only the latter)."""
    deadline = time.monotonic() + timeout
    if bench.jobs is None:
        await bench.quiet(timeout=timeout)
        return
    while time.monotonic() < deadline:
        status = bench.sim.store.get(JOBSETS, JOBSET_NAME, namespace).get("status") or {}
        ready = sum(r.get("ready", 0) for r in status.get("replicatedJobsStatus", []))
        if ready >= jobs:
            await bench.quiet(timeout=max(deadline - time.monotonic(), 1.0))
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the JobSet's status did not reach {jobs} ready Jobs in {timeout:.0f} s")


def make_jobs_active(bench: Bench, namespace: str, count: int) -> int:
    """Without Pods: write `status.active: 1` on `count` Jobs, as the Job controller would."""
    jobs = bench.sim.store.list(JOBS, namespace).items[:count]
    for stored in jobs:
        status = {"startTime": bench.sim.store.now(), "active": 1}
        bench.sim.store.update_status(JOBS, clone(stored) | {"status": status})
    return len(jobs)


def fail_job_status(bench: Bench, namespace: str, name: str) -> None:
    """Without Pods: the Job's status as the Job controller writes a failed Job."""
    now = bench.sim.store.now()
    conditions = [
        {"type": kind, "status": "True", "reason": "BackoffLimitExceeded",
         "message": "Job has reached the specified backoff limit",
         "lastProbeTime": now, "lastTransitionTime": now}
        for kind in ("FailureTarget", "Failed")
    ]
    job = clone(bench.sim.store.get(JOBS, name, namespace))
    started = (job.get("status") or {}).get("startTime") or now  # the API keeps it immutable
    status = {"startTime": started, "failed": 1, "conditions": conditions}
    bench.sim.store.update_status(JOBS, job | {"status": status})


def make_pods_unready(bench: Bench, namespace: str, count: int) -> int:
    """Turn the Ready condition of `count` running Pods False, as a failing probe would."""
    pods = bench.sim.store.list(PODS, namespace).items[:count]
    for stored in pods:
        pod = clone(stored)
        for condition in pod.get("status", {}).get("conditions", []):
            if condition.get("type") in ("Ready", "ContainersReady"):
                condition["status"] = "False"
        bench.sim.store.update(PODS, pod, subresource="status")
    return len(pods)


@dataclass(frozen=True)
class Mark:
    """Counters at one moment, to subtract: what happened during a phase."""

    at: float
    writes: int
    reconciles: float
    requests: Counter[str]

    @classmethod
    async def now(cls, bench: Bench) -> Mark:
        """Taken before a phase: the clock is read last, after the metrics request."""
        reconciles = await bench.reconciles()
        return cls(time.monotonic(), bench.sim.stats.writes, reconciles, bench.requests())


@dataclass(frozen=True)
class Phase:
    seconds: float
    writes: int
    reconciles: float
    requests: tuple[tuple[str, int], ...]


async def since(bench: Bench, mark: Mark) -> Phase:
    """At a phase's end: the clock is read first, before the metrics request."""
    seconds, writes, requests = time.monotonic() - mark.at, bench.sim.stats.writes, bench.requests()
    reconciles = await bench.reconciles()
    return Phase(seconds, writes - mark.writes, reconciles - mark.reconciles,
                 tuple(sorted((requests - mark.requests).items())))


async def start_phase(bench: Bench, tally: JobTally, namespace: str, timeout: float) -> Phase:
    mark = await Mark.now(bench)
    bench.sim.store.create(JOBSETS, jobset_manifest(JOBSET_NAME, namespace, tally.target),
                           namespace)
    await wait_for(tally.reached("0"), f"all {tally.target} Jobs created", timeout)
    return await since(bench, mark)


async def quiet_phase(bench: Bench, window: float) -> Phase:
    mark = await Mark.now(bench)
    await asyncio.sleep(window)
    return await since(bench, mark)


async def coalescing_phase(
    bench: Bench, tally: JobTally, namespace: str, changes: int
) -> tuple[int, Phase]:
    """(Job status changes made, what the controller did about them)."""
    modified, mark = tally.modified, await Mark.now(bench)
    if bench.jobs is None:
        make_jobs_active(bench, namespace, changes)
    else:
        make_pods_unready(bench, namespace, changes)
    await asyncio.sleep(0.5)  # the Job controller's status writes, then the batch period
    await bench.quiet()
    return tally.modified - modified, await since(bench, mark)


async def recovery_phase(bench: Bench, tally: JobTally, namespace: str, timeout: float) -> Phase:
    mark = await Mark.now(bench)
    if bench.jobs is None:
        fail_job_status(bench, namespace, f"{JOBSET_NAME}-{RJOB}-0")
    else:
        await bench.jobs.fail_job(namespace, f"{JOBSET_NAME}-{RJOB}-0")
    await wait_for(tally.reached("1"), f"all {tally.target} Jobs recreated", timeout)
    return await since(bench, mark)


async def run_once(
    bench: Bench, jobs: int, namespace: str, *, quiet_window: float, changes: int
) -> ScaleRun:
    """Start, quiet, coalescing and recovery for one JobSet of `jobs` Jobs in `namespace`."""
    timeout = 60 + 20 * jobs / bench.qps
    bench.create_namespace(namespace)
    store = bench.sim.store
    tally = JobTally(store.watch(JOBS, namespace, str(store.resource_version)), jobs)
    retries, reconciles = await bench.retries(), await bench.reconciles()
    cpu, sim_cpu = bench.controller.cpu_seconds(), self_cpu_seconds()
    gc_ctl, gc_sim = bench.controller.gc_seconds(), bench.sim_gc_seconds()
    try:
        start = await start_phase(bench, tally, namespace, timeout)
        await wait_ready(bench, namespace, jobs, timeout)
        quiet = await quiet_phase(bench, quiet_window)
        status_changes, coalescing = await coalescing_phase(bench, tally, namespace, changes)
        recovery = await recovery_phase(bench, tally, namespace, timeout)
        await bench.quiet()
    finally:
        tally.close()
    cpu, sim_cpu = bench.controller.cpu_seconds() - cpu, self_cpu_seconds() - sim_cpu
    retries = await bench.retries() - retries
    reconciles = await bench.reconciles() - reconciles
    gc_ctl, gc_sim = bench.controller.gc_seconds() - gc_ctl, bench.sim_gc_seconds() - gc_sim
    await remove(bench, namespace)
    return ScaleRun(
        jobs=jobs, qps=bench.qps, start_s=start.seconds, recovery_s=recovery.seconds,
        quiet_window_s=quiet_window, quiet_writes=quiet.writes,
        quiet_reconciles=quiet.reconciles, status_changes=status_changes,
        change_reconciles=coalescing.reconciles, start_writes=start.writes,
        recovery_writes=recovery.writes, controller_cpu_s=cpu, sim_cpu_s=sim_cpu,
        start_reconciles=start.reconciles, recovery_reconciles=recovery.reconciles,
        retries=retries, recovery_requests=recovery.requests,
        controller_gc_s=gc_ctl, sim_gc_s=gc_sim, run_reconciles=reconciles,
        peak_rss_mib=bench.controller.peak_rss_bytes() / 2**20,
    )


async def remove(bench: Bench, namespace: str) -> None:
    """Delete the JobSet (its Jobs and Pods are collected) and let the controller settle."""
    bench.sim.store.delete(JOBSETS, JOBSET_NAME, namespace, propagation="Background")
    await bench.quiet()
