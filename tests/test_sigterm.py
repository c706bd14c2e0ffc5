"""SIGTERM to a test run tears its fixtures down (tests/sigterm.py), serially and on xdist, also
after an earlier test's event loop took SIGTERM and reset it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two inner pytest runs, about 3 s
ROOT = Path(__file__).resolve().parents[1]
HELD = '''
import asyncio, os, pathlib, signal, time
import pytest

MARKS = pathlib.Path(os.environ["MARKS"])

def test_a_loop_takes_sigterm_and_gives_it_back():
    async def serve():  # as the controller's serve() does; removing resets it to the default
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, lambda: None)
        loop.remove_signal_handler(signal.SIGTERM)
    asyncio.run(serve())

@pytest.fixture(scope="module")
def held():
    (MARKS / "up").touch()
    yield
    (MARKS / "down").touch()

def test_runs_until_stopped(held):
    while True:
        time.sleep(0.05)
'''


def _wait_for(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the inner run never set its fixture up: {proc.communicate()[0]!r}")
        time.sleep(0.05)


@pytest.mark.parametrize(
    "workers",
    [pytest.param([], id="a serial run tears down on SIGTERM"),
     pytest.param(["-n", "1"], id="an xdist run tears down on SIGTERM to its process group")],
)
def test_sigterm_tears_the_fixtures_down(tmp_path: Path, workers: list[str]) -> None:
    (tmp_path / "test_held.py").write_text(HELD)
    env = {**os.environ, "MARKS": str(tmp_path), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.sigterm", "-p", "no:cacheprovider",
         *workers, str(tmp_path / "test_held.py")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    _wait_for(tmp_path / "up", proc, timeout=60)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        output = proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the inner run did not stop within 60 s of SIGTERM")
    assert (tmp_path / "down").exists(), f"no teardown after SIGTERM: {output!r}"
