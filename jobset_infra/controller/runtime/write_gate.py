"""The shell around `congestion.CongestionWindow`: Job writes wait here for a place in the
window, first come first served across every JobSet, and each attempt's answer is reported to
the window (through the client's `on_answer`), which decides how many may be in flight.

A place freed goes straight to the longest waiter, so a large JobSet's lanes never overtake a
small JobSet's first write.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TypeVar

from jobset_infra.controller.runtime.congestion import Answer, CongestionWindow
from jobset_infra.controller.runtime.kube import AnswerHook

__all__ = ["WriteGate"]

T = TypeVar("T")


class WriteGate:
    """At most `window.size` writes in flight through `send`."""

    def __init__(
        self, window: CongestionWindow, on_verdict: Callable[[Answer], None] | None = None
    ) -> None:
        self.window = window
        self.in_flight = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._on_verdict = on_verdict

    async def send(self, write: Callable[[AnswerHook], Awaitable[T]]) -> T:
        """Run `write` (given the hook its answers go to) once the window has a place for it."""
        await self._acquire()
        ticket = self.window.sent()

        def answered(code: int, seconds: float) -> None:
            verdict = self.window.answered(ticket, code, seconds)
            if self._on_verdict is not None:
                self._on_verdict(verdict)
            self._grant()  # a grown window lets waiters go at once

        try:
            return await write(answered)
        finally:
            self.in_flight -= 1
            self._grant()

    async def _acquire(self) -> None:
        if not self._waiters and self.in_flight < self.window.size:
            self.in_flight += 1
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # granted: `_grant` counted it in flight
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # granted, then cancelled before it could go: give it back
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            self._grant()
            raise

    def _grant(self) -> None:
        while self._waiters and self.in_flight < self.window.size:
            waiter = self._waiters.popleft()
            if waiter.done():  # cancelled while waiting
                continue
            self.in_flight += 1
            waiter.set_result(None)
