"""A pytest plugin (tests/conftest.py loads it): SIGTERM ends a run as Ctrl-C does.

A real cluster's processes run in their own session (so a Ctrl-C in the terminal does not kill
them before the test's teardown stops them in order), which also means no signal sent to the
test run reaches them. Raising KeyboardInterrupt on SIGTERM (a CI timeout, `kill`, xdist's own
workers) lets pytest tear the fixtures down, and with them the clusters.

The handler is put back before every test: an event loop that took SIGTERM for itself (the
controller's `serve`, the real benchmark's `measure`, run in-process by some tests) resets it
to the default, killing, when the handler is removed or the loop closes.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

import pytest


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"stopped by signal {signum}")


def _install() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)


def pytest_configure(config: pytest.Config) -> None:
    _install()


def pytest_runtest_setup(item: pytest.Item) -> None:
    _install()
