"""A/B of our controller on the real control plane: another checkout against this one.

    git archive <commit> jobset_infra | tar -x -C /tmp/before
    .venv/bin/python -m benchmarks.real.ab --before /tmp/before --scale 16 --rounds 5

Runs the cases `python -m benchmarks --real` would (same options) for `before` (the
jobset_infra under the given folder) and `after` (this working tree), alternating which goes
first, and prints per metric the medians and the median of the per-pair ratios after/before.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.real import run as real
from benchmarks.real.peers import Ours, Peer
from benchmarks.real.scenarios import Run

METRICS: dict[str, Callable[[Run], float | None]] = {
    "start: Jobs exist s": lambda r: r.start.jobs_s if r.start else None,
    "start: Pods Running s": lambda r: r.start.running_s if r.start else None,
    "recovery: Jobs exist s": lambda r: r.recovery.jobs_s if r.recovery else None,
    "recovery: Pods Running s": lambda r: r.recovery.running_s if r.recovery else None,
    "start: first to last Job create s": lambda r: r.start.creates_s if r.start else None,
    "recovery: reaction s": lambda r: r.recovery.reaction_s if r.recovery else None,
    "recovery: first to last Job delete s": lambda r: r.recovery.deletes_s if r.recovery
    else None,
    "recovery: first to last Job create s": lambda r: r.recovery.creates_s if r.recovery
    else None,
    "CPU s": lambda r: r.cpu_s,
    "writes": lambda r: float(r.writes),
}


def summary(runs: Sequence[Run]) -> list[str]:
    lines = []
    for case in sorted({(r.scenario, r.size, r.limits) for r in runs}):
        group = [r for r in runs if (r.scenario, r.size, r.limits) == case]
        lines.append(f"{case[0]} {case[1]} at {case[2]}:")
        for name, metric in METRICS.items():
            sides = {who: [v for r in group if r.controller == who
                           and (v := metric(r)) is not None] for who in ("before", "after")}
            by_round = {(r.round, r.controller): metric(r) for r in group}
            ratios = [a / b for rnd in {r.round for r in group}
                      if (a := by_round.get((rnd, "after"))) is not None
                      and (b := by_round.get((rnd, "before")))]
            if sides["before"] and sides["after"]:
                lines.append(
                    f"  {name}: before {statistics.median(sides['before']):.3f} "
                    f"{sorted(round(v, 3) for v in sides['before'])}, after "
                    f"{statistics.median(sides['after']):.3f} "
                    f"{sorted(round(v, 3) for v in sides['after'])}, after/before "
                    f"{statistics.median(ratios):.2f}" if ratios else "")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--before" not in argv:
        print("usage: python -m benchmarks.real.ab --before DIR [--real options]",
              file=sys.stderr)
        return 2
    at = argv.index("--before")
    before = Path(argv[at + 1])
    del argv[at:at + 2]
    args = real.parse(argv)
    peers: dict[str, Peer] = {"before": Ours(root=before, name="before"),
                              "after": Ours(name="after")}
    results = asyncio.run(real.measure(args, [], peers))
    print("\n".join(summary(results.runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
