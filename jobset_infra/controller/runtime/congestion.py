"""How many Job writes may be in flight: an AIMD congestion window, as TCP's (RFC 5681).

One window is shared by every Job create and delete the controller sends, whatever the JobSet:
congestion is the API server's, not one JobSet's. It opens as fast as the server answers and
closes when it struggles, so a fast server sees only the client's QPS limit while a slow or
throttled one is not flooded:

1. **Slow start**: from `initial` (10, as TCP's initial window of RFC 6928), each prompt answer
   lets one more write go, so the window doubles every round trip, up to `ceiling` (the
   controller's maxParallelism, upstream's 50).
2. **Additive increase**: once the window has been cut, it grows by one write per round (a
   window's worth of prompt answers).
3. **Multiplicative decrease**: an answer that says the server is congested (429 from API
   Priority and Fairness or a max-in-flight limit, 503/504, a timeout or a lost connection, or
   any answer slower than `slow_after` seconds) halves the window, never below `floor`; the
   answers of writes sent before the cut neither cut nor grow it again (one cut per round).

Pure: no I/O and no clock. The shell takes a ticket per write it sends (`sent`) and reports
each answer to it (`answered`: the status code, and how long the server took by the shell's
clock, the client-side rate limiter's wait excluded); `size` is the decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

__all__ = ["Answer", "CongestionWindow", "judge"]

CONGESTION_CODES = frozenset({0, 429, 503, 504})
"""0: no answer (timeout, connection lost); 429: throttled; 503/504: unavailable, timed out."""


class Answer(Enum):
    """What one answer says about the server's load."""

    PROMPT = "prompt"
    CONGESTED = "congested"


def judge(code: int, seconds: float, slow_after: float) -> Answer:
    """Return whether an answer with HTTP status `code` (0: none came) after `seconds` is a sign
    of congestion. Refusals of the request itself (403, 404, 409, 422) are prompt answers."""
    if code in CONGESTION_CODES or seconds > slow_after:
        return Answer.CONGESTED
    return Answer.PROMPT


@dataclass
class CongestionWindow:
    """The writes allowed in flight (`size`), between `floor` and `ceiling`."""

    ceiling: int
    floor: int = 1
    initial: int = 10
    slow_after: float = 1.0
    """Seconds after which an answer counts as congestion (the server queues our writes)."""
    decrease: float = 0.5
    window: float = field(init=False)
    threshold: float = field(init=False)
    """Slow start below it, additive increase above (TCP's ssthresh)."""
    cuts: int = field(init=False, default=0)
    """Times the window was cut (for metrics and tests)."""
    _tickets: int = field(init=False, default=0)
    _cut_at: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        if not 1 <= self.floor <= self.ceiling:
            raise ValueError(f"need 1 <= floor <= ceiling, got floor={self.floor} "
                             f"ceiling={self.ceiling}")
        if not 0 < self.decrease < 1:
            raise ValueError(f"decrease must be between 0 and 1, got {self.decrease}")
        self.window = float(min(self.ceiling, max(self.floor, self.initial)))
        self.threshold = float(self.ceiling)

    @property
    def size(self) -> int:
        """Writes that may be in flight now."""
        return max(self.floor, min(self.ceiling, int(self.window)))

    def sent(self) -> int:
        """A write goes out: return its ticket, to give back with each of its answers."""
        self._tickets += 1
        return self._tickets

    def answered(self, ticket: int, code: int, seconds: float) -> Answer:
        """Account an answer to the write of `ticket` (HTTP status `code`, 0 when none came,
        after `seconds` at the server); return its verdict."""
        verdict = judge(code, seconds, self.slow_after)
        if ticket <= self._cut_at:  # sent before the last cut, which accounted for it
            return verdict
        if verdict is Answer.CONGESTED:
            self.window = max(float(self.floor), self.window * self.decrease)
            self.threshold = self.window
            self._cut_at = self._tickets
            self.cuts += 1
        elif self.window < self.threshold:
            self.window = min(float(self.ceiling), self.window + 1.0)
        else:
            self.window = min(float(self.ceiling), self.window + 1.0 / self.window)
        return verdict
