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
from jobset_infra.sim.store import clone
from jobset_infra.sim.watch import Watch

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
                         "reconciles_per_change")
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
    """Until the JobSet's status counts every Job ready and the controller stopped writing."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = bench.sim.store.get(JOBSETS, JOBSET_NAME, namespace).get("status") or {}
        ready = sum(r.get("ready", 0) for r in status.get("replicatedJobsStatus", []))
        if ready >= jobs:
            await bench.quiet(timeout=max(deadline - time.monotonic(), 1.0))
            return
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the JobSet's status did not reach {jobs} ready Jobs in {timeout:.0f} s")


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


async def run_once(
    bench: Bench, jobs: int, namespace: str, *, quiet_window: float, changes: int
) -> ScaleRun:
    """Start, quiet, coalescing and recovery for one JobSet of `jobs` Jobs in `namespace`."""
    timeout = 60 + 20 * jobs / bench.qps
    bench.create_namespace(namespace)
    tally = JobTally(bench.sim.store.watch(JOBS, namespace, str(bench.sim.store.resource_version)),
                     jobs)
    try:
        cpu0, sim0 = bench.controller.cpu_seconds(), self_cpu_seconds()
        writes0 = bench.sim.stats.writes
        started = time.monotonic()
        bench.sim.store.create(JOBSETS, jobset_manifest(JOBSET_NAME, namespace, jobs), namespace)
        await wait_for(tally.reached("0"), f"all {jobs} Jobs created", timeout)
        start_s = time.monotonic() - started
        start_writes = bench.sim.stats.writes - writes0
        await wait_ready(bench, namespace, jobs, timeout)

        writes1, rec1 = bench.sim.stats.writes, await bench.reconciles()
        await asyncio.sleep(quiet_window)
        quiet_writes = bench.sim.stats.writes - writes1
        quiet_reconciles = await bench.reconciles() - rec1

        modified0, rec2 = tally.modified, await bench.reconciles()
        make_pods_unready(bench, namespace, changes)
        await asyncio.sleep(0.5)  # the Job controller's status writes, then the batch period
        await bench.quiet()
        status_changes = tally.modified - modified0
        change_reconciles = await bench.reconciles() - rec2

        writes2 = bench.sim.stats.writes
        failed_at = time.monotonic()
        await bench.jobs.fail_job(namespace, f"{JOBSET_NAME}-{RJOB}-0")
        await wait_for(tally.reached("1"), f"all {jobs} Jobs recreated", timeout)
        recovery_s = time.monotonic() - failed_at
        recovery_writes = bench.sim.stats.writes - writes2
        await bench.quiet()
        controller_cpu = bench.controller.cpu_seconds() - cpu0
        sim_cpu = self_cpu_seconds() - sim0
    finally:
        tally.close()
    await remove(bench, namespace)
    return ScaleRun(
        jobs=jobs, qps=bench.qps, start_s=start_s, recovery_s=recovery_s,
        quiet_window_s=quiet_window, quiet_writes=quiet_writes,
        quiet_reconciles=quiet_reconciles, status_changes=status_changes,
        change_reconciles=change_reconciles, start_writes=start_writes,
        recovery_writes=recovery_writes, controller_cpu_s=controller_cpu, sim_cpu_s=sim_cpu,
    )


async def remove(bench: Bench, namespace: str) -> None:
    """Delete the JobSet (its Jobs and Pods are collected) and let the controller settle."""
    bench.sim.store.delete(JOBSETS, JOBSET_NAME, namespace, propagation="Background")
    await bench.quiet()
