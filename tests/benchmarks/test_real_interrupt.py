"""`python -m benchmarks --real` interrupted or failing: what it leaves in the temp folder.

No cluster: `run.one` (a case on a fresh testbed) is replaced by a stand-in that starts and then
waits, or fails.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest

from benchmarks.real import report
from benchmarks.real import run as real

ARGS = ["--scale", "16", "--limits", "default", "--rounds", "1", "--placement", "none",
        "--footprint", "0", "--footprint-pods-rounds", "0", "--controllers", "ours"]


class StandIn:
    name = "ours"

    def version(self) -> str:
        return "stand-in"


@pytest.fixture
def scratch_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the run makes its scratch folder. (`measure` takes SIGTERM on its loop, which
    resets it when the loop closes; tests/sigterm.py puts the suite's handler back.)"""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(report, "versions", lambda peers: {})
    return tmp_path


def scratch_folders(parent: Path) -> list[Path]:
    return sorted(parent.glob("jobset-real-bench-*"))


def test_an_interrupted_run_removes_its_scratch_folder(
    scratch_parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def waits(*_args: Any) -> Any:
        (scratch_folders(scratch_parent)[0] / "a-cluster-folder").mkdir()
        await asyncio.Event().wait()

    monkeypatch.setattr(real, "one", waits)

    async def interrupted() -> None:
        task = asyncio.create_task(real.measure(real.parse(ARGS), [], {"ours": StandIn()}))
        while not any(p.iterdir() for p in scratch_folders(scratch_parent)):
            await asyncio.sleep(0.01)
        task.cancel()  # what SIGTERM and Ctrl-C do to the run
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(interrupted(), timeout=30))
    assert scratch_folders(scratch_parent) == []


def test_a_failed_run_keeps_its_logs_and_says_where(
    scratch_parent: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def fails(*_args: Any) -> Any:
        raise RuntimeError("kube-apiserver did not start")

    monkeypatch.setattr(real, "one", fails)
    with pytest.raises(RuntimeError, match="did not start"):
        asyncio.run(real.measure(real.parse(ARGS), [], {"ours": StandIn()}))
    [kept] = scratch_folders(scratch_parent)
    assert f"logs of the failed run are kept in {kept}" in capsys.readouterr().err
