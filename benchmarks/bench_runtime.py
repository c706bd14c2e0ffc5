"""Controller runtime benchmarks (2-core box, loopback).

    python benchmarks/bench_runtime.py hot-path --jobs 8192 --qps 500
    python benchmarks/bench_runtime.py end-to-end --jobs 2048 --qps 500

hot-path: N CreateJob actions through PlanExecutor + KubeClient (rate limiter, retries, metrics,
expectations) against a trivial echo server in another process: what the runtime itself costs.
end-to-end: one JobSet with N replicas, the real controller against `jobset-infra sim` in another
process, timed until every Job is in the controller's cache and the status is written.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import multiprocessing
import re
import subprocess
import sys
import time
from typing import Any

import psutil


def _echo_server(ports: Any) -> None:
    from aiohttp import web

    async def handle(request: web.Request) -> web.Response:
        return web.Response(status=201, body=await request.read(), content_type="application/json")

    async def main() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        ports.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


async def hot_path(jobs: int, qps: float) -> dict[str, Any]:
    from jobset_infra.controller.core.types import CreateJob, Plan
    from jobset_infra.controller.runtime.auth import for_url
    from jobset_infra.controller.runtime.events import EventRecorder
    from jobset_infra.controller.runtime.executor import PlanExecutor
    from jobset_infra.controller.runtime.expectations import Expectations
    from jobset_infra.controller.runtime.kube import KubeClient
    from jobset_infra.controller.runtime.metrics import Metrics
    from jobset_infra.testing.jobs import make_job

    ports: Any = multiprocessing.Queue()
    server = multiprocessing.Process(target=_echo_server, args=(ports,), daemon=True)
    server.start()
    try:
        metrics = Metrics()
        client = KubeClient(
            for_url(f"http://127.0.0.1:{ports.get()}"),
            metrics=metrics,
            qps=qps,
            burst=int(min(qps, 500)),
        )
        run = PlanExecutor(client, Expectations(), EventRecorder(client), metrics)
        base = make_job("big", "default", rjob="w", index=0).obj()
        actions = []
        for i in range(jobs):
            job = copy.deepcopy(base)
            job["metadata"]["name"] = f"big-w-{i}"
            actions.append(CreateJob(job))
        started = time.monotonic()
        outcome = await run.execute("default/big", {"metadata": {}}, Plan(tuple(actions)))
        elapsed = time.monotonic() - started
        await client.close()
    finally:
        server.terminate()
    return {
        "bench": "hot-path",
        "creates": outcome.writes,
        "qps": qps,
        "seconds": round(elapsed, 2),
        "creates_per_second": round(outcome.writes / elapsed),
    }


async def end_to_end(jobs: int, qps: float) -> dict[str, Any]:
    from jobset_infra.api.controller_config import ControllerConfig
    from jobset_infra.api.defaults import default
    from jobset_infra.controller.runtime.auth import for_url
    from jobset_infra.controller.runtime.kube import KubeClient
    from jobset_infra.controller.runtime.manager import run_controller
    from jobset_infra.controller.runtime.resources import JOBSETS
    from jobset_infra.testing.jobsets import make_jobset

    sim = subprocess.Popen(
        [sys.executable, "-m", "jobset_infra.cli", "sim", "--port", "0", "--job-controller", "off"],
        stdout=subprocess.PIPE,
        text=True,
    )
    url = ""
    assert sim.stdout is not None
    for line in sim.stdout:
        found = re.search(r"API at (http://\S+)", line)
        url = found.group(1) if found else url
        if "Press Ctrl-C" in line:
            break
    try:
        config = ControllerConfig.from_dict(
            {
                "metrics": {"bindAddress": "0"},
                "health": {"healthProbeBindAddress": "0"},
                "clientConnection": {"qps": qps, "burst": int(min(qps, 500))},
            }
        )
        model = default(make_jobset("big", "default").replicated_job("w", replicas=jobs).model())
        body = model.model_dump(mode="json", by_alias=True, exclude_none=True)
        async with (
            KubeClient(for_url(url), enforce_permissions=False) as api,
            run_controller(config, url=url) as ctl,
        ):
            await ctl.wait_leader()
            started = time.monotonic()
            await api.create(JOBSETS, body, "default")
            while len(ctl.controller.jobs.store) < jobs:
                await asyncio.sleep(0.1)
            cached = time.monotonic() - started
            while not ((await api.request("GET", JOBSETS.path("default", "big"))).get("status")):
                await asyncio.sleep(0.1)
            done = time.monotonic() - started
            reconciles = ctl.controller.reconciles
            resync_ms = await _resync_ms(ctl, "default/big")
            rss_mb = psutil.Process().memory_info().rss / 2**20
    finally:
        sim.terminate()
        sim.wait()
    return {
        "bench": "end-to-end",
        "jobs": jobs,
        "qps": qps,
        "all_jobs_seen_s": round(cached, 2),
        "status_written_s": round(done, 2),
        "reconciles": reconciles,
        "converged_reconcile_ms": round(resync_ms, 1),
        "controller_rss_mib": round(rss_mb),
    }


async def _resync_ms(ctl: Any, key: str, rounds: int = 10) -> float:
    """Mean time of a reconcile that finds nothing to do (cache reads + the pure core)."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        outcome = await ctl.controller.reconcile(key)
        samples.append(time.perf_counter() - started)
        assert outcome.writes == 0
    return 1000 * sum(samples) / len(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", choices=("hot-path", "end-to-end"))
    parser.add_argument("--jobs", type=int, default=8192)
    parser.add_argument("--qps", type=float, default=500.0)
    args = parser.parse_args()
    bench = hot_path if args.bench == "hot-path" else end_to_end
    print(json.dumps(asyncio.run(bench(args.jobs, args.qps))))


if __name__ == "__main__":
    main()
