"""Rate limiters: a token bucket (client QPS/burst, the work queue's global limit) and client-go's
per-item exponential failure backoff. Time is injected; nothing here sleeps by itself except
`TokenBucket.wait`, which takes the sleep function too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class TokenBucket:
    """`rate` tokens per second, at most `burst` stored; reservations may go negative (queueing)."""

    def __init__(
        self, rate: float, burst: int, clock: Clock = time.monotonic, sleep: Sleep = asyncio.sleep
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"rate must be > 0 and burst >= 1, got rate={rate} burst={burst}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._stamp = clock()

    def reserve(self) -> float:
        """Take one token now and return how long the caller must wait before using it."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.rate

    def try_take(self) -> bool:
        """Take a token if one is there now; never queue (False: refuse the caller)."""
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True

    async def wait(self) -> float:
        """Wait for a token; returns the seconds waited (for the rate-limiter histogram)."""
        delay = self.reserve()
        if delay > 0:
            await self._sleep(delay)
        return delay


class ItemBackoff:
    """Per-item exponential failure backoff: base * 2**(failures-1), capped."""

    def __init__(self, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        """Record one more failure of `item` and return its delay."""
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        # 2**failures overflows a float after ~1000 failures; the cap is reached long before.
        return min(self.cap, self.base * 2.0 ** min(failures, 64))

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def failures(self, item: Hashable) -> int:
        return self._failures.get(item, 0)
