"""A de-duplicating, rate-limited work queue with client-go's semantics, on one asyncio loop.

- Fair: keys come out in the order they were added.
- Stingy: a key added many times before it is processed is processed once; a key added while it
  is being processed is marked dirty and handed out again only after `done` (so no two workers
  ever hold the same key).
- Delayed adds keep the earliest due time per key; `add_rate_limited` delays by the max of the
  key's exponential backoff and a global token bucket (client-go's default limiter).
- Batched adds (child events) wait until the key's adds pause for a quiet period, and at most
  `STREAM_PERIODS` periods after the first of them (longer for a JobSet of many children,
  `stream_limit`): a burst costs one pass, a stream (thousands of Pods starting over a minute)
  one pass per four periods. A JobSet of over 1,000 children gets its batched passes at least
  `pass_interval` apart too (`batch_due`), however its events pause; a plain `add` (a failure,
  a spec change) is never held.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Hashable

from jobset_infra.controller.runtime.metrics import CONTROLLER_NAME, Metrics
from jobset_infra.controller.runtime.ratelimit import Clock, ItemBackoff, TokenBucket

STREAM_PERIODS = 4
STREAM_SECONDS_PER_CHILD = 0.0002
"""A stream holds the pass of a JobSet of over 1,000 children longer: 0.2 ms per child (2,048:
0.41 s, 10,000: 2 s). A pass no longer costs more with more children, but its status write
does for the API server, and each pass of upstream's (whose passes walk every child) takes
about that long: a 2,048-Job JobSet streams events for minutes on a real control plane while
its Pods start and its Jobs are recreated, which one pass per 200 ms turned into more passes
than upstream's. The last event of a stream is still followed by a pass within `quiet`."""


LARGE_JOBSET = 1000
"""Children above which a JobSet's batched passes are spaced (`pass_interval`)."""
PASS_INTERVAL_PER_CHILD = 0.0005
PASS_INTERVAL_MAX = 2.0
"""A JobSet of over 1,000 children has its batched passes at least 0.5 ms per child apart
(2,048: 1.02 s), at most 2 s. On a real control plane its events come sparsely for minutes (the
garbage collector removes about 20 Jobs a second in a recovery, Pods start over a minute), so
the quiet period, not the stream limit, ended most batches: 914 passes for one 2,048-Job JobSet
against upstream's 523 (2026-12-07). Small JobSets are never spaced: their passes are cheap and
a user waits on each."""


def stream_limit(quiet: float, children: int) -> float:
    """How long after its first batched add a stream of adds may hold a key's pass."""
    return max(STREAM_PERIODS * quiet, children * STREAM_SECONDS_PER_CHILD)


def pass_interval(children: int) -> float:
    """The least time between the start of a JobSet's last pass and a batched one."""
    if children <= LARGE_JOBSET:
        return 0.0
    return min(children * PASS_INTERVAL_PER_CHILD, PASS_INTERVAL_MAX)


def batch_due(
    now: float, quiet: float, first: float, children: int, last_pass: float | None
) -> float:
    """When a batched add at `now` makes the key due: a `quiet` period after it, at the latest
    `stream_limit` after the batch's `first` add, and never sooner than `pass_interval` after
    the key's `last_pass` started (None: no pass yet). Pure."""
    due = min(now + quiet, first + stream_limit(quiet, children))
    interval = pass_interval(children)
    if last_pass is not None and interval > 0:
        due = max(due, last_pass + interval)
    return due


class QueueShutDownError(Exception):
    """The queue was shut down; workers stop."""


class WorkQueue:
    def __init__(
        self,
        name: str = CONTROLLER_NAME,
        metrics: Metrics | None = None,
        backoff: ItemBackoff | None = None,
        bucket: TokenBucket | None = None,
        clock: Clock = time.monotonic,
    ) -> None:
        self.name = name
        self._metrics = metrics
        self._labels = {"name": name, "controller": name}
        self._backoff = backoff or ItemBackoff()
        # client-go's default global limit: 10 qps, burst 100, only for rate-limited re-adds.
        self._bucket = bucket or TokenBucket(10.0, 100, clock=clock)
        self._clock = clock
        self._queue: deque[Hashable] = deque()
        self._dirty: set[Hashable] = set()
        self._processing: dict[Hashable, float] = {}  # key -> start time
        self._added_at: dict[Hashable, float] = {}
        self._delayed: dict[Hashable, tuple[float, asyncio.TimerHandle]] = {}
        self._batch_started: dict[Hashable, float] = {}  # keys whose delayed add is a batch
        self._children: dict[Hashable, int] = {}  # keys of JobSets whose passes are spaced
        self._last_pass: dict[Hashable, float] = {}  # when those keys last were handed out
        self._ready = asyncio.Event()
        self._shutting_down = False

    # --- adding ----------------------------------------------------------------------------------

    def add(self, key: Hashable) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        self._added_at.setdefault(key, self._clock())
        if self._metrics:
            self._metrics.child(self._metrics.wq_adds, **self._labels).inc()
        if key not in self._processing:
            self._queue.append(key)
            self._ready.set()
            self._report_depth()

    def add_after(self, key: Hashable, delay: float) -> None:
        """Add `key` after `delay` seconds; an earlier pending due time for the key wins."""
        if self._shutting_down or key in self._dirty:
            return  # already due now (or re-run once its current processing ends)
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        pending = self._delayed.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        self._batch_started.pop(key, None)  # no longer a batch: due at this time
        handle = loop.call_at(due, self._fire, key)
        self._delayed[key] = (due, handle)

    def add_batched(self, key: Hashable, quiet: float, children: int | None = 0) -> None:
        """Add `key` at `batch_due`: once no batched add of it came for `quiet` seconds, at the
        latest `stream_limit(quiet, children)` after the first of them, and for a JobSet of over
        1,000 children no sooner than `pass_interval` after its last pass began (`children`:
        the JobSet's; None: as the last add that said); an earlier `add_after` time wins."""
        if self._shutting_down or key in self._dirty:
            return
        if children is None:
            children = self._children.get(key, 0)
        elif pass_interval(children) > 0:
            self._children[key] = children
        else:
            self._children.pop(key, None)
            self._last_pass.pop(key, None)
        if quiet <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        pending = self._delayed.get(key)
        first = self._batch_started.get(key, now) if pending is not None else now
        due = batch_due(now, quiet, first, children, self._last_pass.get(key))
        if pending is not None:
            if pending[0] == due or (key not in self._batch_started and pending[0] < due):
                return  # the same time, or an earlier one `add_after` asked for
            pending[1].cancel()
        self._batch_started[key] = first
        self._delayed[key] = (due, loop.call_at(due, self._fire, key))

    def add_rate_limited(self, key: Hashable) -> float:
        """Re-add after a failure; returns the delay chosen."""
        delay = max(self._backoff.when(key), self._bucket.reserve())
        if self._metrics:
            self._metrics.child(self._metrics.wq_retries, **self._labels).inc()
        self.add_after(key, delay)
        return delay

    def forget(self, key: Hashable) -> None:
        """The key succeeded: reset its backoff."""
        self._backoff.forget(key)

    def discard(self, key: Hashable) -> None:
        """The key's object is gone: drop what spaces its passes."""
        self._children.pop(key, None)
        self._last_pass.pop(key, None)

    def num_requeues(self, key: Hashable) -> int:
        return self._backoff.failures(key)

    def _fire(self, key: Hashable) -> None:
        self._delayed.pop(key, None)
        self._batch_started.pop(key, None)
        self.add(key)

    # --- consuming -------------------------------------------------------------------------------

    async def get(self) -> Hashable:
        """The next key; it is held (processing) until `done(key)`."""
        while not self._queue:
            if self._shutting_down:
                raise QueueShutDownError()
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft()
        if key in self._children:
            self._last_pass[key] = asyncio.get_running_loop().time()
        now = self._clock()
        self._processing[key] = now
        self._dirty.discard(key)
        added = self._added_at.pop(key, now)
        if self._metrics:
            duration = self._metrics.child(self._metrics.wq_queue_duration, **self._labels)
            duration.observe(now - added)
        self._report_depth()
        return key

    def done(self, key: Hashable) -> None:
        started = self._processing.pop(key, None)
        if started is not None and self._metrics:
            work = self._metrics.child(self._metrics.wq_work_duration, **self._labels)
            work.observe(self._clock() - started)
        if key in self._dirty:
            self._queue.append(key)
            self._ready.set()
            self._report_depth()

    def shutdown(self) -> None:
        """Stop handing out keys (waiting `get`s raise QueueShutDownError); drop delayed adds."""
        self._shutting_down = True
        for _, handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        self._batch_started.clear()
        self._children.clear()
        self._last_pass.clear()
        self._queue.clear()
        self._ready.set()

    # --- introspection ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._queue)

    @property
    def processing(self) -> frozenset[Hashable]:
        return frozenset(self._processing)

    def pending_delayed(self) -> int:
        return len(self._delayed)

    def due(self, key: Hashable) -> float | None:
        """When a delayed add of `key` fires (the loop's clock), or None."""
        pending = self._delayed.get(key)
        return pending[0] if pending is not None else None

    def update_unfinished_metrics(self) -> None:
        """Refresh unfinished/longest-running gauges (called periodically, like client-go)."""
        if not self._metrics:
            return
        now = self._clock()
        ages = [now - start for start in self._processing.values()]
        self._metrics.child(self._metrics.wq_unfinished, **self._labels).set(sum(ages))
        self._metrics.child(self._metrics.wq_longest, **self._labels).set(max(ages, default=0.0))

    def _report_depth(self) -> None:
        if self._metrics:
            self._metrics.child(self._metrics.wq_depth, **self._labels).set(len(self._queue))
