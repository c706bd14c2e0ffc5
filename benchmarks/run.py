"""`python -m benchmarks [--quick] [--out benchmarks/RESULTS.md]`: the whole benchmark, one command.

Full run (not in CI; 10 minutes on an idle 2-core machine, 30 on a loaded one): N in
{16, 256, 2048, 8192}, 3 runs
each, footprint with 10,000 Jobs (3 fresh controllers), plan time (3 runs per variant).
`--quick` (CI smoke, under a minute): N in {16, 256}, 1 run, footprint with 1,000 Jobs once, no
plan time. Prints a JSON line per measurement; with `--out` it rewrites the generated block of
that Markdown file and saves the plot next to it (`scale.png`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shlex
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from benchmarks import footprint, plan_time, report
from benchmarks.cluster import running
from benchmarks.scale import ScaleRun, run_once

FULL_SIZES = (16, 256, 2048, 8192)
QUICK_SIZES = (16, 256)
LATENCY = 0.005


@dataclass
class Results:
    runs: list[ScaleRun] = field(default_factory=list)
    footprints: list[footprint.Footprint] = field(default_factory=list)
    plans: list[plan_time.PlanTime] = field(default_factory=list)
    load: list[tuple[float, float, float]] = field(default_factory=list)
    seconds: float = 0.0


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--real", action="store_true",
                        help="ours beside upstream JobSet on the real local control plane "
                        "(benchmarks/real; its own options: --real --help)")
    parser.add_argument("--quick", action="store_true", help="CI smoke mode, under a minute")
    parser.add_argument("--out", type=Path, default=None, help="Markdown file to update")
    parser.add_argument("--sizes", default=None, help="comma-separated N, e.g. 16,2048")
    parser.add_argument("--runs", type=int, default=None, help="runs per N (default 3, quick 1)")
    parser.add_argument("--quiet-window", type=float, default=None,
                        help="seconds of quiet counted after convergence (default 10, quick 2)")
    parser.add_argument("--footprint-jobs", type=int, default=None,
                        help="Jobs for the footprint (default 10000, quick 1000; 0 skips)")
    parser.add_argument("--plan-runs", type=int, default=None,
                        help="plan-time runs per variant (default 3, quick 0 skips)")
    parser.add_argument("--pods", choices=("on", "off"), default="on",
                        help="off: no fake Job controller; the benchmark writes Job status "
                        "itself (the sim then only serves the API); its own RESULTS.md block")
    args = parser.parse_args(argv)
    try:
        sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    except ValueError:
        parser.error(f"--sizes {args.sizes!r}: use comma-separated integers, e.g. 16,2048")
    if sizes is not None and any(n < 1 for n in sizes):
        parser.error("--sizes: every N must be at least 1")
    args.sizes = sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    args.runs = args.runs if args.runs is not None else (1 if args.quick else 3)
    if args.runs < 1:
        parser.error("--runs: must be at least 1")
    args.quiet_window = args.quiet_window or (2.0 if args.quick else 10.0)
    single = args.quick or args.pods == "off"  # --pods off measures the scale runs only
    if args.footprint_jobs is None:
        args.footprint_jobs = 0 if args.pods == "off" else 1000 if args.quick else 10_000
    if args.plan_runs is None:
        args.plan_runs = 0 if single else 3
    return args


RAW: list[str] = []  # every measurement as printed, kept for the raw-data file


def emit(kind: str, data: dict[str, object]) -> None:
    line = json.dumps({"bench": kind, **data}, default=str)
    RAW.append(line)
    print(line, flush=True)


async def measure_scale(args: argparse.Namespace, results: Results) -> None:
    async with running(LATENCY, pods=args.pods == "on") as bench:
        for n in args.sizes:
            for i in range(args.runs):
                run = await run_once(bench, n, f"bench-{n}-{i}",
                                     quiet_window=args.quiet_window, changes=min(n, 256))
                results.runs.append(run)
                emit("scale", run.as_dict())


async def measure_footprint(args: argparse.Namespace, results: Results) -> None:
    if args.footprint_jobs <= 0:
        return
    jobsets = max(1, args.footprint_jobs // 1000)
    for _ in range(1 if args.quick else args.runs):
        result = await footprint.measure(args.footprint_jobs, jobsets)
        results.footprints.append(result)
        emit("footprint", result.as_dict())


def measure(args: argparse.Namespace) -> Results:
    results = Results()
    started = time.monotonic()
    results.load.append(os.getloadavg())
    asyncio.run(measure_scale(args, results))
    asyncio.run(measure_footprint(args, results))
    if args.plan_runs > 0:
        results.plans = plan_time.measure(args.plan_runs)
        for plan in results.plans:
            emit("plan", asdict(plan))
    results.load.append(os.getloadavg())
    results.seconds = time.monotonic() - started
    return results


def markdown(args: argparse.Namespace, argv: list[str], results: Results) -> str:
    command = shlex.join([".venv/bin/python", "-m", "benchmarks", *argv])
    loads = " → ".join("/".join(f"{x:.1f}" for x in load) for load in results.load)
    title = ("Start, recovery, quiet, footprint, plan time" if args.pods == "on" else
             "Without Pods: the API server alone (`--pods off`)")
    lines = [
        f"## {title} (`python -m benchmarks`)",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC in {results.seconds:.0f} s "
        f"with `{command}`{' (quick mode: fewer sizes and runs)' if args.quick else ''}.",
        f"Machine: {report.machine()}. Load average (1/5/15 min) at start → end: {loads}. "
        "Wall times on a 2-core machine carry noise from whatever else runs (the load "
        "average says how much); every ratio below comes from this one invocation.",
        "",
        "Setup: `jobset_infra.sim` API server in the benchmark process with a fixed 5 ms "
        "latency on every request (`FaultInjector.fixed_latency(0.005)`), "
        + ("its fake Job controller (one Pod per Job, Running and Ready at once) and garbage "
           "collector" if args.pods == "on" else "its garbage collector and no Job controller "
           "(no Pods: the benchmark writes the Job status changes and the failed Job's status "
           "itself, in-process)")
        + ", with this process's cyclic GC made rarer "
        "(`cluster.tune_collector`; the controller keeps Python's defaults); the "
        "real `jobset-controller` in a child process with its defaults (QPS 500, burst 500, 4 "
        "workers, 50 parallel writes). One JobSet per run: one replicated job of N Jobs "
        "(parallelism 1), `maxRestarts: 3`, in a fresh namespace. "
        f"{args.runs} run(s) per N; times are medians with (min-max). The bucket starts full, "
        f"so the first {report.BURST} writes cost no wait: the \"burst floor\" "
        "(writes - 500)/QPS is the tighter bound at these sizes.",
        "",
        f"![start and recovery time vs N, with the N/QPS floor]"
        f"({'scale.png' if args.pods == 'on' else 'scale-no-pods.png'})",
        "",
    ]
    lines += report.scale_section(results.runs)
    lines += report.footprint_section(results.footprints)
    lines += report.plan_section(results.plans)
    lines += report.targets(results.runs, results.footprints)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--real" in argv:
        from benchmarks.real.run import main as real

        return real([a for a in argv if a != "--real"])
    args = parse(argv)
    results = measure(args)
    if args.out is not None:
        text = markdown(args, argv, results)
        existing = args.out.read_text() if args.out.exists() else ""
        variant = "" if args.pods == "on" else " --pods off"
        args.out.write_text(report.merge(existing, text, variant=variant))
        png = args.out.parent / ("scale.png" if args.pods == "on" else "scale-no-pods.png")
        if results.runs:
            report.plot(results.runs, png)
        raw = args.out.parent / "runs" / f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H%M}{variant}.jsonl"
        raw = raw.with_name(raw.name.replace(" --pods off", "-no-pods"))
        raw.parent.mkdir(exist_ok=True)
        raw.write_text("\n".join(RAW) + "\n")
        print(f"wrote {args.out}, {png} and {raw}", file=sys.stderr)
    return 0
