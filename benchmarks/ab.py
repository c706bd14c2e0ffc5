"""`python -m benchmarks.ab --before DIR`: our controller from another checkout against this one,
on the sim, alternating in one invocation.

    git archive <commit> jobset_infra | tar -x -C /tmp/before
    .venv/bin/python -m benchmarks.ab --before /tmp/before --sizes 2048 --rounds 4

Each run is `python -m benchmarks`' scale run (start, quiet, coalescing, recovery) in a fresh
sim with a fresh controller, whose `jobset_infra` comes from `--before` or from `--after`
(default: this checkout); the sim and the harness are this checkout's for both, so only the
controller differs. The two sides alternate which goes first, round by round. A warm-up run
(`--warmup` Jobs, not reported) precedes each measured one, so neither side pays its first
pass's one-off costs in the figures. Prints each run as a JSON line (with the load average),
then per metric both sides' medians and the median of the per-round ratios after/before.
Controller CPU seconds are far less sensitive to the machine's load than wall times: compare
those first on a shared machine.

`--py-spy DIR` samples each measured run's controller with py-spy (needs `py-spy` on PATH or in
the venv; not a dependency of the project) into DIR/<side>-<N>-<round>.txt, collapsed stacks with
their sample counts; `--top` prints the functions with the most samples per side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.cluster import REPO, Bench, running
from benchmarks.scale import ScaleRun, run_once

LATENCY = 0.005
SIDES = ("before", "after")

METRICS: dict[str, Callable[[ScaleRun], float]] = {
    "start / N/QPS": lambda r: r.start_ratio,
    "recovery / 2N/QPS": lambda r: r.recovery_ratio,
    "passes over the run": lambda r: r.run_reconciles,
    "passes to start": lambda r: r.start_reconciles,
    "passes to recover": lambda r: r.recovery_reconciles,
    "controller CPU s": lambda r: r.controller_cpu_s,
    "controller CPU ms per write": lambda r: r.cpu_ms_per_write,
    "controller GC s": lambda r: r.controller_gc_s,
    "sim CPU s": lambda r: r.sim_cpu_s,
    "peak RSS MiB": lambda r: r.peak_rss_mib,
}


@dataclass(frozen=True)
class Measured:
    side: str
    round: int
    run: ScaleRun
    load: float


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ab",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True,
                        help="a folder holding the jobset_infra to compare against")
    parser.add_argument("--after", type=Path, default=REPO,
                        help="a folder holding the other jobset_infra (default: this checkout)")
    parser.add_argument("--sizes", default="2048", help="comma-separated N (default 2048)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per side and N (default 3)")
    parser.add_argument("--warmup", type=int, default=16,
                        help="Jobs of the unreported run before each measured one (0 skips)")
    parser.add_argument("--quiet-window", type=float, default=2.0,
                        help="seconds of quiet counted after convergence (default 2)")
    parser.add_argument("--pods", choices=("on", "off"), default="on",
                        help="off: no fake Job controller (as `python -m benchmarks --pods off`)")
    parser.add_argument("--py-spy", type=Path, default=None, dest="py_spy",
                        help="sample each measured run's controller with py-spy into this folder")
    parser.add_argument("--top", type=int, default=0,
                        help="with --py-spy: print the N functions with most samples per side")
    args = parser.parse_args(argv)
    for side in SIDES:
        folder: Path = getattr(args, side)
        if not (folder / "jobset_infra" / "__init__.py").is_file():
            parser.error(f"--{side} {folder}: no jobset_infra package there; extract one with "
                         f"`git archive <commit> jobset_infra | tar -x -C {folder}`")
    try:
        args.sizes = tuple(int(s) for s in args.sizes.split(","))
    except ValueError:
        parser.error(f"--sizes {args.sizes!r}: use comma-separated integers, e.g. 256,2048")
    if args.rounds < 1 or any(n < 1 for n in args.sizes):
        parser.error("--rounds and every N of --sizes must be at least 1")
    if args.py_spy is not None and py_spy() is None:
        parser.error("--py-spy: no py-spy on PATH or beside this Python; install it into the "
                     "venv (`.venv/bin/pip install py-spy`) or leave --py-spy out")
    return args


def py_spy() -> str | None:
    """The py-spy program: on PATH, or in this Python's venv."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.is_file() else None)


async def measure_one(args: argparse.Namespace, side: str, jobs: int, rnd: int) -> Measured:
    """One warm-up and one measured run of `side`'s controller in a fresh sim."""
    async with running(LATENCY, pods=args.pods == "on", root=getattr(args, side)) as bench:
        if args.warmup > 0:
            await run_once(bench, args.warmup, f"warmup-{rnd}", quiet_window=0.5, changes=0)
        sampler = _sample(bench, args.py_spy, f"{side}-{jobs}-{rnd}")
        try:
            run = await run_once(bench, jobs, f"ab-{jobs}-{rnd}",
                                 quiet_window=args.quiet_window, changes=min(jobs, 256))
        finally:
            _stop(sampler)
    return Measured(side, rnd, run, os.getloadavg()[0])


def _sample(bench: Bench, folder: Path | None, name: str) -> subprocess.Popen[bytes] | None:
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    command = [py_spy() or "py-spy", "record", "--pid", str(bench.controller.popen.pid),
               "--rate", "200", "--format", "raw", "--nonblocking",
               "--output", str(folder / f"{name}.txt")]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(sampler: subprocess.Popen[bytes] | None) -> None:
    """Stop py-spy as Ctrl-C would (it writes its output on SIGINT)."""
    if sampler is None:
        return
    sampler.send_signal(2)
    try:
        sampler.wait(timeout=60)
    except subprocess.TimeoutExpired:
        sampler.kill()
        sampler.wait()


def summary(results: Sequence[Measured]) -> list[str]:
    lines = []
    for jobs in sorted({m.run.jobs for m in results}):
        group = [m for m in results if m.run.jobs == jobs]
        loads = [m.load for m in group]
        lines.append(f"N={jobs} ({len(group)} runs, load {min(loads):.1f}-{max(loads):.1f}):")
        for name, metric in METRICS.items():
            sides = {s: [metric(m.run) for m in group if m.side == s] for s in SIDES}
            by_round = {(m.round, m.side): metric(m.run) for m in group}
            ratios = [a / b for rnd in sorted({m.round for m in group})
                      if (a := by_round.get((rnd, "after"))) is not None
                      and (b := by_round.get((rnd, "before")))]
            ratio = f", after/before {statistics.median(ratios):.2f}" if ratios else ""
            lines.append(
                f"  {name}: before {statistics.median(sides['before']):.3f} "
                f"{[round(v, 3) for v in sides['before']]}, after "
                f"{statistics.median(sides['after']):.3f} "
                f"{[round(v, 3) for v in sides['after']]}{ratio}")
    return lines


def top_functions(folder: Path, side: str, count: int) -> list[str]:
    """The functions with the most samples (self, then inclusive) over `side`'s runs."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for path in sorted(folder.glob(f"{side}-*.txt")):
        for line in path.read_text().splitlines():
            stack, _, samples = line.rpartition(" ")
            if not stack or not samples.isdigit():
                continue
            frames = stack.split(";")
            total += int(samples)
            own[frames[-1]] += int(samples)
            for frame in set(frames):
                inclusive[frame] += int(samples)
    lines = [f"{side}: {total} samples; self:"]
    lines += [f"  {n / total:6.1%}  {frame}" for frame, n in own.most_common(count)]
    lines.append(f"{side}: inclusive:")
    lines += [f"  {n / total:6.1%}  {frame}" for frame, n in inclusive.most_common(count)]
    return lines


async def measure(args: argparse.Namespace) -> list[Measured]:
    results = []
    for jobs in args.sizes:
        for rnd in range(args.rounds):
            order = SIDES if rnd % 2 == 0 else SIDES[::-1]
            for side in order:
                measured = await measure_one(args, side, jobs, rnd)
                results.append(measured)
                print(json.dumps({"bench": "ab", "side": side, "round": rnd,
                                  "load": measured.load, **measured.run.as_dict()},
                                 default=str), flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    results = asyncio.run(measure(args))
    print("\n".join(summary(results)))
    if args.py_spy is not None and args.top > 0:
        for side in SIDES:
            print("\n".join(top_functions(args.py_spy, side, args.top)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
