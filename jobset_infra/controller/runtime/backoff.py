"""How long a failing list, watch or Lease read waits before trying again: client-go's reflector
backoff (`wait.NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`).

Each failure doubles the base delay from 0.8 s up to a cap of 30 s, and the wait is the base
plus up to the same again at random (jitter 1.0), so at the cap a retry comes every [30, 60) s
and replicas that failed together do not retry together. A failure more than `reset_after`
(2 min) after the previous one starts again from 0.8 s: the server was healthy meanwhile.
Time and randomness are injected.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass

Clock = Callable[[], float]
Random = Callable[[], float]


@dataclass(frozen=True)
class BackoffPolicy:
    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0

    @property
    def longest(self) -> float:
        """The longest single wait: the cap plus its full jitter."""
        return self.cap * (1.0 + self.jitter)


REFLECTOR = BackoffPolicy()


class Backoff:
    """The delays of one retrying loop (one per informer, one per elector)."""

    def __init__(
        self,
        policy: BackoffPolicy = REFLECTOR,
        *,
        clock: Clock = time.monotonic,
        rand: Random = random.random,
    ) -> None:
        self.policy = policy
        self._clock = clock
        self._rand = rand
        self._next = policy.initial
        self._last_failure: float | None = None

    def next_delay(self) -> float:
        """Record one failure; return how long to wait before the next try."""
        now = self._clock()
        policy = self.policy
        if self._last_failure is not None and now - self._last_failure > policy.reset_after:
            self._next = policy.initial
        self._last_failure = now
        base = self._next
        self._next = min(policy.cap, base * policy.factor)
        return base + base * policy.jitter * self._rand()
