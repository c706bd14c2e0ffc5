"""A pytest plugin (tests/conftest.py loads it): SIGTERM ends a run as Ctrl-C does.

A real cluster's processes run in their own session (so a Ctrl-C in the terminal does not kill
them before the test's teardown stops them in order), which also means no signal sent to the
test run reaches them. Raising KeyboardInterrupt on SIGTERM (a CI timeout, `kill`, xdist's own
workers) lets pytest tear the fixtures down, and with them the clusters.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import pytest


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
