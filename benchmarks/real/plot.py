"""The `--real` plot: seconds to every Pod Running, ours beside upstream, from one invocation.

Left: one JobSet of N one-Pod Jobs (start and recovery, at both client limits); right: the
multislice JobSet with exclusive placement, by slice count. Medians with min-max bars.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.real.report import OURS, UPSTREAM, groups, recovery_of, start_of, values
from benchmarks.real.scenarios import Run
from benchmarks.report import Spread, spread


def plot(runs: Sequence[Run], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), dpi=110)
    colors = {OURS: "tab:blue", UPSTREAM: "tab:orange"}
    for (limits, style) in (("500/500", "-"), ("100000/100000", ":")):
        for who in (OURS, UPSTREAM):
            for label, pick, marker in (("start", start_of("running_s"), "o"),
                                        ("recovery", recovery_of("running_s"), "s")):
                points = [(n, spread(vs)) for (n, lim), g in groups(runs, "scale").items()
                          if lim == limits and (vs := values(g, who, pick))]
                if points:
                    _errorbar(left, points, colors[who], style, marker=marker,
                              label=f"{who} {label} ({limits})")
    for who in (OURS, UPSTREAM):
        points = [(s, spread(vs)) for (s, _), g in groups(runs, "placement").items()
                  if (vs := values(g, who, start_of("running_s")))]
        if points:
            _errorbar(right, points, colors[who], "-", marker="o", label=who)
    left.set_title("One JobSet of N one-Pod Jobs: → all Pods Running")
    left.set_xlabel("N Jobs")
    right.set_title("Multislice, exclusive placement: → all 4S Pods Running")
    right.set_xlabel("S slices (v5e 4x4, 4 Pods each)")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_ylabel("seconds (median, min-max)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _errorbar(ax: Any, points: list[tuple[int, Spread]], color: str, style: str, *,
              marker: str, label: str) -> None:
    xs = [x for x, _ in points]
    ys = [s.median for _, s in points]
    err = [[s.median - s.low for _, s in points], [s.high - s.median for _, s in points]]
    ax.errorbar(xs, ys, yerr=err, color=color, linestyle=style, marker=marker, capsize=3,
                label=label)
