"""Controller footprint: RSS with many Jobs in its caches, CPU seconds per 1,000 Jobs created.

A fresh `jobset-controller` process (so nothing earlier is in its heap) against the sim with the
same 5 ms latency. Its RSS is read with psutil from outside, once its caches are synced and empty
(`baseline`) and again after `jobsets` JobSets of `jobs_per_jobset` one-pod Jobs were created,
every Pod is Ready and the controller has stopped writing. Its caches then hold every JobSet and
Job (the controller does not watch Pods). CPU is the child's user+system time over the same span:
the creates, the watch events of the Jobs and their status changes, and the status writes.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, dataclass
from typing import Any

from benchmarks.cluster import JOBSETS, Bench, jobset_manifest, running
from benchmarks.scale import JOBSET_NAME

MIB = 1024 * 1024


@dataclass(frozen=True)
class Footprint:
    jobs: int
    jobsets: int
    baseline_rss_mib: float
    rss_mib: float
    cpu_s: float
    wall_s: float

    @property
    def cpu_s_per_1000_jobs(self) -> float:
        return self.cpu_s * 1000 / self.jobs

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"cpu_s_per_1000_jobs": self.cpu_s_per_1000_jobs}


async def _all_ready(bench: Bench, namespaces: list[str], per_jobset: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = 0
        for namespace in namespaces:
            status = bench.sim.store.get(JOBSETS, JOBSET_NAME, namespace).get("status") or {}
            ready += sum(r.get("ready", 0) for r in status.get("replicatedJobsStatus", []))
        if ready >= per_jobset * len(namespaces):
            await bench.quiet(timeout=max(deadline - time.monotonic(), 1.0))
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{per_jobset * len(namespaces)} Jobs not all ready in {timeout:.0f} s")


async def measure(jobs: int = 10_000, jobsets: int = 10) -> Footprint:
    per_jobset = jobs // jobsets
    async with running() as bench:
        await asyncio.sleep(1.0)  # let the informers' first lists settle
        baseline = bench.controller.rss_bytes()
        cpu0 = bench.controller.cpu_seconds()
        started = time.monotonic()
        namespaces = [f"fp-{i}" for i in range(jobsets)]
        for namespace in namespaces:
            bench.create_namespace(namespace)
            bench.sim.store.create(
                JOBSETS, jobset_manifest(JOBSET_NAME, namespace, per_jobset), namespace
            )
        await _all_ready(bench, namespaces, per_jobset, timeout=120 + 10 * jobs / bench.qps)
        wall = time.monotonic() - started
        return Footprint(
            jobs=per_jobset * jobsets,
            jobsets=jobsets,
            baseline_rss_mib=baseline / MIB,
            rss_mib=bench.controller.rss_bytes() / MIB,
            cpu_s=bench.controller.cpu_seconds() - cpu0,
            wall_s=wall,
        )
