"""`python -m benchmarks.stream [N] [SECONDS]`: passes of one JobSet while a stream of child Job
status changes arrives, as thousands of Pods starting over a minute on a real cluster send them.

One JobSet of N Jobs on the sim (5 ms per request, no fake Job controller): once they exist and
the controller is quiet, every Job's status is written once (active and ready), spread evenly
over SECONDS; printed as one JSON line: the reconcile passes and controller CPU seconds from the
first status write until the controller is quiet again. Issue 33 measured main's passes against
its child-event batching with this (RESULTS.md, "Issue 33").
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from benchmarks.cluster import JOBS, running
from benchmarks.scale import JobTally, start_phase
from jobset_infra.sim.apiserver.store import clone


async def measure(jobs: int, seconds: float) -> dict[str, float]:
    """Start the JobSet, then stream its Jobs' status changes; what the controller did."""
    async with running(0.005, pods=False) as bench:
        namespace, store = "stream", bench.sim.store
        bench.create_namespace(namespace)
        tally = JobTally(store.watch(JOBS, namespace, str(store.resource_version)), jobs)
        try:
            await start_phase(bench, tally, namespace, 60 + 20 * jobs / bench.qps)
            await bench.quiet()
            passes, cpu = await bench.reconciles(), bench.controller.cpu_seconds()
            stored = store.list(JOBS, namespace).items
            started = time.monotonic()
            for i, job in enumerate(stored):
                delay = started + i * seconds / len(stored) - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                status = {"startTime": store.now(), "active": 1, "ready": 1}
                store.update_status(JOBS, clone(job) | {"status": status})
            await bench.quiet()
            return {"jobs": jobs, "seconds": seconds,
                    "passes": await bench.reconciles() - passes,
                    "controller_cpu_s": bench.controller.cpu_seconds() - cpu,
                    "stream_s": time.monotonic() - started, "load": os.getloadavg()[0]}
        finally:
            tally.close()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    jobs = int(args[0]) if args else 2048
    seconds = float(args[1]) if len(args) > 1 else 20.0
    print(json.dumps({"bench": "stream", **asyncio.run(measure(jobs, seconds))}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
