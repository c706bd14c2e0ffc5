"""Benchmark of the pure core: one reconcile pass over a JobSet with N child Jobs.

    .venv/bin/python benchmarks/bench_reconcile.py [--sizes 1000 10000] [--repeat 5]

Scenarios per size N (one replicated job of N replicas, or several summing to N):
* create:   the first pass, which constructs all N Job manifests;
* noop:     a steady state (all N Jobs ready, status up to date), which must produce an empty plan;
* restart:  one Job failed, so the pass counts a restart (failure policy);
* delete:   the pass after a restart, which plans N foreground deletions.
Also `view`: the cost of `child_job_from_manifest` per Job (the runtime pays it per watch event).
Times are the best of `--repeat` runs: CPU time per Job and per pass, and wall time per pass.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.types import ChildJob, CreateJob, Plan, child_job_from_manifest
from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import make_jobset

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _jobset(n: int, rjobs: int) -> dict[str, Any]:
    builder = make_jobset("bench", "ns").uid("bench-uid")
    for i in range(rjobs):
        builder.replicated_job(f"w{i}", replicas=n // rjobs, parallelism=4)
    builder.network(enable_dns_hostnames=True).success_policy("All")
    builder.failure_policy(max_restarts=3)
    js = builder.obj()
    js["metadata"]["resourceVersion"] = "1"
    return js


def _best(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Return the best wall-clock and the best CPU time (seconds) of `repeat` calls.

    CPU time (process_time) is what to compare on a shared machine: wall time there also counts
    the time other processes held the CPU.
    """
    wall = cpu = float("inf")
    for _ in range(repeat):
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu


Scenarios = dict[str, tuple[dict[str, Any], list[ChildJob]]]


def _states(n: int, rjobs: int) -> tuple[Scenarios, list[dict[str, Any]]]:
    """Return the benchmark scenarios for N Jobs, and the N ready Job manifests."""
    js = _jobset(n, rjobs)
    first = reconcile(observe(js), NOW)
    manifests = []
    for i, action in enumerate(first.of_type(CreateJob)):
        job = action.manifest
        job["metadata"]["uid"] = f"u{i}"
        job["metadata"]["resourceVersion"] = str(i + 2)
        manifests.append(job_from(job).ready().obj())
    ready = [child_job_from_manifest(m) for m in manifests]
    steady = {**js, "status": _written_status(js, ready)}
    failed = [*ready[:-1], job_from(manifests[-1]).failed(at=NOW).view()]
    restarted = {**steady, "status": _written_status(steady, failed)}
    scenarios = {
        "create": (js, []),
        "noop": (steady, ready),
        "restart": (steady, failed),
        "delete": (restarted, failed),
    }
    return scenarios, manifests


def _written_status(js: dict[str, Any], jobs: list[ChildJob]) -> dict[str, Any]:
    update = reconcile(observe(js, jobs, True), NOW).status_update
    assert update is not None
    return update.status


def _row(n: int, scenario: str, times: tuple[float, float], actions: int) -> dict[str, Any]:
    wall, cpu = times
    return {
        "n": n,
        "scenario": scenario,
        "cpu_us_per_job": cpu / n * 1e6,
        "cpu_ms_total": cpu * 1e3,
        "wall_ms_total": wall * 1e3,
        "actions": actions,
    }


def run(sizes: list[int], repeat: int, rjobs: int) -> list[dict[str, Any]]:
    """Return one row per (size, scenario) with microseconds per Job."""
    rows = []
    for n in sizes:
        scenarios, manifests = _states(n, rjobs)
        for name, (js, jobs) in scenarios.items():
            plans: list[Plan] = []

            def once(js: dict[str, Any] = js, jobs: list[ChildJob] = jobs) -> None:
                plans.append(reconcile(observe(js, jobs, True), NOW))  # noqa: B023 - timed now

            rows.append(_row(n, name, _best(once, repeat), len(plans[-1].actions)))

        def views(manifests: list[dict[str, Any]] = manifests) -> None:
            for m in manifests:
                child_job_from_manifest(m)

        rows.append(_row(n, "view", _best(views, repeat), 0))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 20000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rjobs", type=int, default=4, help="replicated jobs sharing the N Jobs")
    args = parser.parse_args()
    rows = run(args.sizes, args.repeat, args.rjobs)
    print(f"python {platform.python_version()} on {platform.machine()} ({os.cpu_count()} cpus)")
    header = ("jobs", "scenario", "cpu us/job", "cpu ms", "wall ms", "actions")
    print("{:>6} {:>8} {:>10} {:>8} {:>8} {:>8}".format(*header))
    for row in rows:
        print(
            f"{row['n']:>6} {row['scenario']:>8} {row['cpu_us_per_job']:>10.2f} "
            f"{row['cpu_ms_total']:>8.1f} {row['wall_ms_total']:>8.1f} {row['actions']:>8}"
        )


if __name__ == "__main__":
    main()
