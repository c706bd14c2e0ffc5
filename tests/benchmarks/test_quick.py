"""Smoke test of `python -m benchmarks --quick`'s smallest case, and of the report it writes.

The scale run is real: the sim with 5 ms latency in this process, `jobset-controller` in a child
process. The assertions are the properties the benchmark exists to show (writes per Job, zero
writes when quiet, events coalescing), counted, never timed: how long a run takes is the
benchmark's figure to report (benchmarks/RESULTS.md), not a test's to assert.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import report, run
from benchmarks.cluster import running
from benchmarks.scale import ScaleRun, run_once

pytestmark = pytest.mark.slow  # a real benchmark run in a child process, ~9 s

N = 16


@pytest.fixture(scope="module")
def quick_run() -> tuple[ScaleRun, Path | None]:
    """The run, and where its controller wrote its collector totals (gone after the run)."""
    import asyncio

    async def one() -> tuple[ScaleRun, Path | None]:
        async with running(latency=0.005) as bench:
            measured = await run_once(bench, N, "quick-16", quiet_window=0.5, changes=N)
            return measured, bench.controller.gc_file

    return asyncio.run(one())


@pytest.fixture(scope="module")
def smallest(quick_run: tuple[ScaleRun, Path | None]) -> ScaleRun:
    return quick_run[0]


def test_the_controllers_collector_totals_are_removed_with_it(
    quick_run: tuple[ScaleRun, Path | None],
) -> None:
    gc_file = quick_run[1]
    assert gc_file is not None, "the controller runs under gc_probe unless profiled"
    assert not gc_file.parent.exists(), f"{gc_file.parent} outlived the benchmark run"


def test_start_creates_each_job_once(smallest: ScaleRun) -> None:
    # N creates plus the headless Service and the status write, nothing repeated
    assert N <= smallest.start_writes <= N + 4
    assert smallest.start_s > 0  # measured; how long it takes is the benchmark's to report


def test_recovery_deletes_and_recreates_each_job_once(smallest: ScaleRun) -> None:
    assert 2 * N <= smallest.recovery_writes <= 2 * N + 6
    assert smallest.recovery_s > 0
    assert smallest.recovery_ratio == pytest.approx(smallest.recovery_s * 500 / (2 * N))


def test_converged_controller_writes_nothing(smallest: ScaleRun) -> None:
    assert smallest.quiet_writes == 0
    assert smallest.quiet_writes_per_minute == 0.0


def test_job_status_changes_coalesce_into_few_reconciles(smallest: ScaleRun) -> None:
    assert smallest.status_changes >= N
    assert 1 <= smallest.change_reconciles <= N / 2


def test_report_lists_the_run_and_keeps_other_sections(smallest: ScaleRun) -> None:
    args = run.parse(["--quick", "--sizes", "16"])
    text = run.markdown(args, ["--quick"], run.Results(runs=[smallest], seconds=1.0))
    assert "| 16 | 0.032 |" in text
    assert "Quiet writes after convergence: at most 0 in any run — met." in text
    existing = "# Benchmark results\n\n## Reconcile (pure core)\n\nkept\n"
    merged = report.merge(existing, text)
    assert merged.endswith("## Reconcile (pure core)\n\nkept\n")
    again = report.merge(merged, "new block")
    assert "new block" in again and "| 16 | 0.032 |" not in again
    assert again.endswith("## Reconcile (pure core)\n\nkept\n")
    both = report.merge(again, "no pods", variant=" --pods off")
    assert both.index("new block") < both.index("no pods") < both.index("## Reconcile")
    assert report.merge(both, "no pods 2", variant=" --pods off").count("no pods") == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        pytest.param(["--sizes", "16,x"], "--sizes", id="a size that is not a number is named"),
        pytest.param(["--sizes", "0"], "at least 1", id="a size below one is refused"),
        pytest.param(["--runs", "0"], "--runs", id="zero runs is refused"),
    ],
)
def test_bad_arguments_are_named(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run.parse(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
