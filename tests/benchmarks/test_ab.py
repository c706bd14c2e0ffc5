"""`python -m benchmarks.ab`'s arguments and summary (its runs are `scale.run_once`, which
test_quick.py runs for real)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import ab
from benchmarks.cluster import REPO
from benchmarks.scale import ScaleRun


def test_a_before_without_jobset_infra_is_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        ab.parse(["--before", str(tmp_path)])
    error = capsys.readouterr().err
    assert f"--before {tmp_path}: no jobset_infra package there" in error
    assert "git archive <commit> jobset_infra" in error


def test_the_defaults_compare_with_this_checkout_at_2048() -> None:
    args = ab.parse(["--before", str(REPO)])
    assert (args.after, args.sizes, args.rounds, args.warmup) == (REPO, (2048,), 3, 16)


def run(cpu: float, passes: float) -> ScaleRun:
    return ScaleRun(jobs=2048, qps=500.0, start_s=8.2, recovery_s=16.4, quiet_window_s=2.0,
                    quiet_writes=0, quiet_reconciles=0.0, status_changes=256,
                    change_reconciles=2.0, start_writes=2048, recovery_writes=4096,
                    controller_cpu_s=cpu, sim_cpu_s=10.0, run_reconciles=passes)


def test_the_summary_gives_each_sides_median_and_the_per_round_ratio() -> None:
    results = [
        ab.Measured("before", 0, run(6.0, 20.0), 3.0), ab.Measured("after", 0, run(5.4, 12.0), 3.5),
        ab.Measured("after", 1, run(6.6, 12.0), 4.0), ab.Measured("before", 1, run(6.0, 20.0), 4.5),
    ]
    lines = ab.summary(results)
    assert lines[0] == "N=2048 (4 runs, load 3.0-4.5):"
    assert "  controller CPU s: before 6.000 [6.0, 6.0], after 6.000 [5.4, 6.6], " \
           "after/before 1.00" in lines
    assert "  passes over the run: before 20.000 [20.0, 20.0], after 12.000 [12.0, 12.0], " \
           "after/before 0.60" in lines
