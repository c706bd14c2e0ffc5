"""`python -m benchmarks --real [--quick] [--out benchmarks/RESULTS.md]`: ours beside upstream.

Full run (about an hour on a loaded 2-core machine): for each of `--rounds` rounds (3), every
scenario is run once per controller, the two back to back, ours first in even rounds and
upstream first in odd ones, each on a fresh cluster:

- scale: N in {16, 256, 2048} one-Pod Jobs, at the client limit 500/500 and lifted (100000);
- placement: S in {16, 64, 256} v5e 4x4 slices of 4 Pods with exclusive placement, and the
  recovery of the 64-slice one;
- footprint: 10,000 Jobs (10 suspended JobSets of 1,000), every round; and once (first round,
  `--footprint-pods-rounds`) with their 10,000 Pods running.

`--quick` (about 2 minutes): scale N=16 at 500/500 (start and recovery) and placement S=8
(start), one round, a 1 s quiet window, no footprint. Every run is printed as a JSON line;
with `--out` the generated block `--real` of that file is replaced and `real.png` written next
to it; raw lines go to `runs/<time>-real.jsonl`. `--report-from LOG` measures nothing and
reports the run lines an earlier invocation printed, so an interrupted hour is not lost.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import report as sim_report
from benchmarks.real import plot, report
from benchmarks.real.peers import PEERS, Limits, Peer
from benchmarks.real.scenarios import Run, footprint, placement, scale
from benchmarks.real.testbed import DEFAULT, LIFTED, start_testbed
from benchmarks.real.workloads import cpu_nodes, tpu_nodes

VARIANT = " --real"


@dataclass(frozen=True)
class Case:
    """One scenario configuration; run once per controller per round."""

    scenario: str
    size: int
    limits: Limits
    recover: bool = True

    @property
    def nodes(self) -> str:
        if self.scenario == "placement":
            return tpu_nodes(self.size)
        return cpu_nodes(0 if self.scenario == "footprint" else self.size)  # suspended: no Pods

    @property
    def label(self) -> str:
        return f"{self.scenario}-{self.size}-{'lifted' if self.limits == LIFTED else 'default'}"


@dataclass
class Results:
    runs: list[Run] = field(default_factory=list)
    load: list[tuple[float, float, float]] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    source: Path | None = None  # --report-from: the JSON lines reported, measured earlier


def _ints(text: str | None, name: str, parser: argparse.ArgumentParser,
          default: tuple[int, ...]) -> tuple[int, ...]:
    """Comma-separated sizes; "none" for no case of this scenario; absent: `default`."""
    if not text:
        return default
    if text == "none":
        return ()
    try:
        values = tuple(int(x) for x in text.split(","))
    except ValueError:
        parser.error(f"--{name} {text!r}: use comma-separated integers, e.g. 16,256")
    if any(v < 1 for v in values):
        parser.error(f"--{name}: every size must be at least 1")
    return values


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks --real",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke mode, under ~2 minutes")
    parser.add_argument("--out", type=Path, default=None, help="Markdown file to update")
    parser.add_argument("--rounds", type=int, default=None, help="runs per case (default 3)")
    parser.add_argument("--scale", default=None, help="N Jobs, e.g. 16,256,2048 (none: skip)")
    parser.add_argument("--limits", default=None, help="default,lifted (client limits)")
    parser.add_argument("--placement", default=None,
                        help="S slices, e.g. 16,64,256 (none: skip)")
    parser.add_argument("--placement-recovery", default=None,
                        help="S whose recovery is measured (default 64, quick none)")
    parser.add_argument("--footprint", type=int, default=None,
                        help="Jobs for the footprint (default 10000, quick 0 skips)")
    parser.add_argument("--footprint-pods-rounds", type=int, default=None,
                        help="rounds that also run the footprint with every Pod running "
                        "(default 1, quick 0)")
    parser.add_argument("--controllers", default="ours,upstream")
    parser.add_argument("--quiet-window", type=float, default=None,
                        help="seconds counted after convergence (default 10, quick 1)")
    parser.add_argument("--keep-going", action="store_true",
                        help="record a failed run and go on instead of stopping")
    parser.add_argument("--report-from", type=Path, default=None,
                        help="measure nothing: report the JSON lines an earlier run printed "
                        "(one that was interrupted too)")
    args = parser.parse_args(list(argv))
    quick = args.quick
    args.rounds = args.rounds or (1 if quick else 3)
    args.scale = _ints(args.scale, "scale", parser, (16,) if quick else (16, 256, 2048))
    args.placement = _ints(args.placement, "placement", parser,
                           (8,) if quick else (16, 64, 256))
    args.placement_recovery = set(_ints(args.placement_recovery, "placement-recovery", parser,
                                        () if quick else (64,)))
    args.footprint = (0 if quick else 10_000) if args.footprint is None else args.footprint
    if args.footprint_pods_rounds is None:
        args.footprint_pods_rounds = 0 if quick else 1
    args.quiet_window = args.quiet_window or (1.0 if quick else 10.0)
    names = {"default": DEFAULT, "lifted": LIFTED}
    chosen = (args.limits or ("default" if quick else "default,lifted")).split(",")
    if any(n not in names for n in chosen):
        parser.error(f"--limits {args.limits!r}: choose from default,lifted")
    args.limit_set = [names[n] for n in chosen]
    args.controllers = args.controllers.split(",")
    if any(c not in PEERS for c in args.controllers):
        parser.error(f"--controllers: choose from {', '.join(PEERS)}")
    return args


def cases(args: argparse.Namespace) -> list[Case]:
    out = [Case("scale", n, limits) for limits in args.limit_set for n in args.scale]
    out += [Case("placement", s, DEFAULT, s in args.placement_recovery)
            for s in args.placement]
    if args.footprint:
        out.append(Case("footprint", args.footprint, DEFAULT, False))
    return out


def pod_footprints(args: argparse.Namespace) -> list[Case]:
    """The footprint with every Job's Pod running: slow (10,000 Pods through the control
    plane), so run in the first `--footprint-pods-rounds` rounds only."""
    return [Case("footprint-pods", args.footprint, DEFAULT, False)] if args.footprint else []


def emit(data: dict[str, object], raw: list[str]) -> None:
    line = json.dumps(data, default=str)
    raw.append(line)
    print(line, flush=True)


async def one(peer: Peer, case: Case, round_: int, args: argparse.Namespace,
              scratch: Path) -> Run:
    run = Run(case.scenario, peer.name, case.size, case.limits.label, round_)
    folder = scratch / f"{case.label}-{peer.name}-{round_}"
    async with start_testbed(peer, case.nodes, case.limits, folder) as bed:
        if case.scenario == "scale":
            return await scale(bed, run, quiet_window=args.quiet_window)
        if case.scenario == "placement":
            return await placement(bed, run, quiet_window=args.quiet_window,
                                   recover=case.recover)
        return await footprint(bed, run)  # "footprint" and "footprint-pods"


async def measure(args: argparse.Namespace, raw: list[str],
                  peers: dict[str, Peer] | None = None) -> Results:
    """Every case for every peer (`args.controllers` unless `peers` are given), alternating."""
    results = Results()
    # SIGTERM (a timeout, a CI cancel) cancels the run: every cluster and controller stops
    this = asyncio.current_task()
    if this is not None:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, this.cancel)
    peers = peers or {name: PEERS[name]() for name in args.controllers}
    results.versions = report.versions(peers.values())
    scratch = Path(tempfile.mkdtemp(prefix="jobset-real-bench-"))
    results.load.append(os.getloadavg())
    started = time.monotonic()
    try:
        await _every_case(args, peers, scratch, results, raw)
    except asyncio.CancelledError:  # interrupted: the folders hold no result, only clusters
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    except BaseException:
        print(f"logs of the failed run are kept in {scratch}", file=sys.stderr)
        raise
    results.load.append(os.getloadavg())
    results.seconds = time.monotonic() - started
    if results.failures:
        print(f"logs of the failed runs are kept in {scratch}", file=sys.stderr)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return results


async def _every_case(args: argparse.Namespace, peers: dict[str, Peer], scratch: Path,
                      results: Results, raw: list[str]) -> None:
    for round_ in range(args.rounds):
        extra = pod_footprints(args) if round_ < args.footprint_pods_rounds else []
        for case in cases(args) + extra:
            order = list(peers.values())
            if round_ % 2:
                order.reverse()
            for peer in order:
                try:
                    run = await one(peer, case, round_, args, scratch)
                except (TimeoutError, RuntimeError, OSError) as err:
                    if not args.keep_going:
                        raise
                    message = f"{case.label} {peer.name} round {round_}: {err}"
                    results.failures.append(message)
                    emit({"bench": "real-failure", "message": message}, raw)
                    continue
                results.runs.append(run)
                emit({"bench": "real", **run.as_dict()}, raw)


def recorded(path: Path, args: argparse.Namespace, raw: list[str]) -> Results:
    """The results in the JSON lines an earlier run printed (its log, or runs/*.jsonl): an
    interrupted run's finished runs are reported, and the report says how many each case has."""
    results = Results(source=path)
    results.versions = report.versions(PEERS[name]() for name in args.controllers)
    for line in path.read_text().splitlines():
        if not line.startswith("{"):
            continue
        data = json.loads(line)
        if data.get("bench") == "real":
            run = Run.from_dict(data)
            results.runs.append(run)
            results.seconds += run.wall_s
        elif data.get("bench") == "real-failure":
            results.failures.append(str(data.get("message")))
        else:
            continue
        raw.append(line)
    if not results.runs:
        raise SystemExit(f"--report-from: {path} holds no run lines")
    return results


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    raw: list[str] = []
    try:
        results = (recorded(args.report_from, args, raw) if args.report_from
                   else asyncio.run(measure(args, raw)))
    except (asyncio.CancelledError, KeyboardInterrupt):
        print("interrupted: every cluster and controller of the run was stopped, its scratch "
              "folder removed", file=sys.stderr)
        return 130
    if args.out is not None:
        command = shlex.join([".venv/bin/python", "-m", "benchmarks", "--real", *argv])
        text = report.markdown(results, command=command, quick=args.quick,
                               machine=sim_report.machine(), plot="real.png")
        existing = args.out.read_text() if args.out.exists() else ""
        args.out.write_text(sim_report.merge(existing, text, variant=VARIANT))
        stamp = f"{dt.datetime.now(dt.UTC):%Y-%m-%dT%H%M}"
        raw_file = args.out.parent / "runs" / f"{stamp}-real{'-quick' if args.quick else ''}.jsonl"
        raw_file.parent.mkdir(exist_ok=True)
        raw_file.write_text("\n".join(raw) + "\n")
        print(f"wrote {args.out} and {raw_file}", file=sys.stderr)
        print(_plotted(results.runs, args.out.parent / "real.png"), file=sys.stderr)
    return 1 if results.failures else 0


def _plotted(runs: Sequence[Run], png: Path) -> str:
    """Draw the plot; without matplotlib (the `bench` extra) say so: the measured runs are
    already in the report and the raw file, which a long run must not lose to a missing plot."""
    try:
        plot.plot(runs, png)
    except ModuleNotFoundError as err:
        return (f"plot skipped: {err.name} is not installed (pip install -e '.[bench]'); "
                "the report and the raw lines are written")
    return f"wrote {png}"
