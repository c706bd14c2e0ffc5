"""The one way a test waits: poll a condition until it holds, bounded, failing with what it
waited for. Never a fixed sleep hoping something happened.

`check` may be a plain function or a coroutine function; the first truthy value it returns is
returned. A failure names `what` (or, without it, the check's own source), the last value seen
and, when given, what `explain()` says about the state things were left in, so a red test says
which condition never came and why.

A tier whose cluster is slower (the e2e tier's real cluster: real Job controller syncs, kwok
stages, graceful Pod deletion) scales every timeout inside `timeouts_scaled(factor)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import NoReturn, TypeVar, cast

import pytest

__all__ = ["timeouts_scaled", "until", "until_sync"]

T = TypeVar("T")
POLL_S = 0.02
# The interval grows by half each poll up to this: quick for a condition about to hold, light on
# the API server (checks often list objects) for one that takes a minute.
MAX_POLL_S = 0.2
MAX_SYNC_POLL_S = 1.0
_scale = [1.0]


async def until(
    check: Callable[[], T | Awaitable[T]],
    what: str = "",
    timeout: float = 10.0,
    *,
    explain: Callable[[], str] | None = None,
    every: float = POLL_S,
) -> T:
    """Return `check()`'s first truthy value; fail after `timeout` seconds without one."""
    deadline = _deadline(timeout)
    for delay in _intervals(every, MAX_POLL_S):
        value = check()
        last = cast(T, await value) if inspect.isawaitable(value) else value
        if last:
            return last
        if time.monotonic() > deadline:
            _give_up(timeout, what, check, last, explain)
        await asyncio.sleep(delay)
    raise AssertionError("unreachable: the intervals never end")


def until_sync(check: Callable[[], T], what: str = "", timeout: float = 10.0, *,
               every: float = 0.1) -> T:
    """`until` for a test without an event loop (it blocks the thread between polls).

    The interval grows as `until`'s does, to at most MAX_SYNC_POLL_S: these checks mostly run
    `kubectl` (a Go binary started, its discovery read) and at a fixed 0.1 s the real-node
    tier's waits kept kubectl at a fifth to a third of a core through CI's suite."""
    deadline = _deadline(timeout)
    for delay in _intervals(every, MAX_SYNC_POLL_S):
        if last := check():
            return last
        if time.monotonic() > deadline:
            _give_up(timeout, what, check, last)
        time.sleep(delay)
    raise AssertionError("unreachable: the intervals never end")


def _deadline(timeout: float) -> float:
    return time.monotonic() + timeout * _scale[0]


def _intervals(every: float, cap: float) -> Iterator[float]:
    """The pauses between polls: `every`, then half as long again each time, up to `cap`."""
    delay = every
    while True:
        yield delay
        delay = min(delay * 1.5, max(every, cap))


def _give_up(timeout: float, what: str, check: Callable[..., object], last: object,
             explain: Callable[[], str] | None = None) -> NoReturn:
    state = f"\n{explain()}" if explain is not None else ""
    pytest.fail(f"timed out after {timeout * _scale[0]:g}s waiting for "
                f"{what or _described(check)}; last value: {last!r}{state}")


@contextlib.contextmanager
def timeouts_scaled(factor: float) -> Iterator[None]:
    """Every `until` inside waits `factor` times longer."""
    before = _scale[0]
    _scale[0] = factor
    try:
        yield
    finally:
        _scale[0] = before


def _described(check: Callable[..., object]) -> str:
    try:
        return inspect.getsource(check).strip()
    except (OSError, TypeError):
        return repr(check)
