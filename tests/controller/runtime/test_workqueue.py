"""WorkQueue: client-go semantics (fair, stingy, dirty-while-processing, delayed adds, backoff)."""

from __future__ import annotations

import asyncio
import itertools
import selectors
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.ratelimit import ItemBackoff, TokenBucket
from jobset_infra.controller.runtime.workqueue import (
    LARGE_JOBSET,
    PASS_INTERVAL_MAX,
    STREAM_PERIODS,
    QueueShutDownError,
    WorkQueue,
    batch_due,
    pass_interval,
    stream_limit,
)


async def test_keys_come_out_in_add_order_and_duplicates_collapse() -> None:
    queue = WorkQueue()
    for key in ["a", "b", "a", "c", "b"]:
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]


async def test_key_added_while_processing_is_handed_out_again_only_after_done() -> None:
    queue = WorkQueue()
    queue.add("a")
    key = await queue.get()
    queue.add("a")
    assert len(queue) == 0, "a key being processed must not be handed to a second worker"
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "a"


async def test_many_workers_never_hold_the_same_key() -> None:
    queue = WorkQueue()
    holding: set[str] = set()
    overlaps = 0
    processed = 0

    async def worker() -> None:
        nonlocal overlaps, processed
        while True:
            try:
                key = await queue.get()
            except QueueShutDownError:
                return
            overlaps += key in holding
            holding.add(str(key))
            await asyncio.sleep(0)
            holding.discard(str(key))
            processed += 1
            queue.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(8)]
    for round_ in range(50):
        for key in ("a", "b", "c"):
            queue.add(key)
        if round_ % 5 == 0:
            await asyncio.sleep(0)
    while len(queue) or queue.processing:
        await asyncio.sleep(0.001)
    queue.shutdown()
    await asyncio.gather(*workers)
    assert overlaps == 0
    assert 3 <= processed < 150, "adds of a queued key must collapse"


async def test_add_after_keeps_the_earliest_due_time() -> None:
    queue = WorkQueue()
    queue.add_after("a", 10.0)
    queue.add_after("a", 0.01)
    queue.add_after("a", 5.0)
    assert queue.pending_delayed() == 1
    assert await asyncio.wait_for(queue.get(), timeout=1.0) == "a"


async def test_a_burst_of_batched_adds_is_one_pass_after_it_pauses() -> None:
    queue = WorkQueue()
    loop = asyncio.get_running_loop()
    dues = []
    for _ in range(100):
        queue.add_batched("a", 0.05)
        dues.append(queue.due("a"))
    assert None not in dues
    assert dues == sorted(dues), "each add pushes the pass later (to the pause)"
    assert queue.pending_delayed() == 1
    assert await asyncio.wait_for(queue.get(), timeout=5.0) == "a"
    assert loop.time() >= dues[-1]
    assert queue.pending_delayed() == 0 and len(queue) == 0


async def test_a_stream_of_batched_adds_is_not_put_off_past_four_periods() -> None:
    queue = WorkQueue()
    queue.add_batched("a", 0.02)
    first = queue.due("a")
    assert first is not None
    cap = first - 0.02 + STREAM_PERIODS * 0.02

    async def stream() -> None:
        while True:
            queue.add_batched("a", 0.02)
            due = queue.due("a")
            assert due is None or due <= cap + 1e-9
            await asyncio.sleep(0.001)

    streaming = asyncio.create_task(stream())
    try:
        assert await asyncio.wait_for(queue.get(), timeout=5.0) == "a"
    finally:
        streaming.cancel()


def test_the_stream_limit_grows_with_the_children_past_1000() -> None:
    assert stream_limit(0.05, 10) == stream_limit(0.05, 1000) == STREAM_PERIODS * 0.05
    assert stream_limit(0.05, 2048) == pytest.approx(0.4096)
    assert stream_limit(0.05, 10_000) == pytest.approx(2.0)
    assert stream_limit(0.5, 2048) == STREAM_PERIODS * 0.5, "a longer period still rules"


async def test_a_stream_for_a_jobset_of_many_children_is_held_longer_but_bounded() -> None:
    """2,000 children: the pass waits up to 0.4 s, past four periods of 0.05 s (0.2 s)."""
    queue = WorkQueue()
    queue.add_batched("a", 0.05, children=2000)
    first = queue.due("a")
    assert first is not None
    cap = first - 0.05 + stream_limit(0.05, 2000)
    latest = first

    async def stream() -> None:
        nonlocal latest
        while True:
            queue.add_batched("a", 0.05, children=2000)
            due = queue.due("a")
            assert due is None or due <= cap + 1e-9
            latest = max(latest, due or latest)
            await asyncio.sleep(0.001)

    streaming = asyncio.create_task(stream())
    try:
        assert await asyncio.wait_for(queue.get(), timeout=5.0) == "a"
    finally:
        streaming.cancel()
    assert latest > first - 0.05 + STREAM_PERIODS * 0.05, "held past four periods"


async def test_an_earlier_add_after_is_not_put_off_by_a_batch() -> None:
    queue = WorkQueue()
    queue.add_after("a", 0.01)
    queue.add_batched("a", 30.0)
    assert await asyncio.wait_for(queue.get(), timeout=5.0) == "a"


@pytest.mark.parametrize(
    ("failures", "want_delay"),
    [
        pytest.param(1, 0.005, id="first failure waits the base delay"),
        pytest.param(4, 0.04, id="each failure doubles the delay"),
        pytest.param(40, 1000.0, id="the delay is capped"),
    ],
)
def test_item_backoff_is_exponential_and_capped(failures: int, want_delay: float) -> None:
    backoff = ItemBackoff(base=0.005, cap=1000.0)
    delays = [backoff.when("k") for _ in range(failures)]
    assert delays[-1] == pytest.approx(want_delay)
    backoff.forget("k")
    assert backoff.when("k") == pytest.approx(0.005)


async def test_rate_limited_readd_counts_retries_and_forget_resets() -> None:
    metrics = Metrics()
    queue = WorkQueue(metrics=metrics, bucket=TokenBucket(1000.0, 1000))
    assert queue.add_rate_limited("k") == pytest.approx(0.005)
    assert queue.add_rate_limited("k") == pytest.approx(0.01)
    assert queue.num_requeues("k") == 2
    queue.forget("k")
    assert queue.num_requeues("k") == 0
    labels = {"name": "jobset", "controller": "jobset"}
    assert metrics.sample("workqueue_retries_total", labels) == 2
    await asyncio.wait_for(queue.get(), timeout=1.0)
    assert metrics.sample("workqueue_adds_total", labels) == 1


def test_token_bucket_allows_burst_then_paces_at_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(rate=500.0, burst=500, clock=lambda: now[0])
    waits = [bucket.reserve() for _ in range(1000)]
    assert all(w == 0 for w in waits[:500])
    assert waits[-1] == pytest.approx(1.0, rel=0.01), "500 tokens beyond the burst take 1 s"
    now[0] = 10.0
    assert bucket.reserve() == 0.0


async def test_shutdown_wakes_waiting_workers() -> None:
    queue = WorkQueue()
    waiter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shutdown()
    with pytest.raises(QueueShutDownError):
        await asyncio.wait_for(waiter, timeout=1.0)


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.sampled_from("abcd")),
        st.tuples(st.just("get"), st.just("")),
        st.tuples(st.just("done"), st.just("")),
    ),
    max_size=60,
)


@given(OPS)
def test_property_no_key_is_held_twice_and_no_add_is_lost(ops: list[tuple[str, str]]) -> None:
    async def run() -> None:
        queue = WorkQueue()
        held: list[str] = []
        owed: set[str] = set()  # keys added since they were last handed out
        for op, key in ops:
            if op == "add":
                queue.add(key)
                owed.add(key)
            elif op == "get" and len(queue):
                got = str(await queue.get())
                assert got not in held, "a key was handed out while being processed"
                held.append(got)
                owed.discard(got)
            elif op == "done" and held:
                queue.done(held.pop(0))
        for key in held:
            queue.done(key)
        drained = set()
        while len(queue):
            key = str(await queue.get())
            drained.add(key)
            queue.done(key)
        assert owed <= drained, f"adds lost: {owed - drained}"
        assert not queue.processing

    asyncio.run(run())


# --- spacing the batched passes of a large JobSet (on a loop whose clock jumps) -----------------


class _JumpingSelector(selectors.DefaultSelector):
    """Waits no time: a wait for the next timer moves the loop's clock there instead."""

    def __init__(self, advance: Callable[[float], None]) -> None:
        super().__init__()
        self._advance = advance

    def select(self, timeout: float | None = None) -> list[Any]:
        assert timeout is not None, "the loop would wait for ever: nothing is scheduled"
        self._advance(max(0.0, timeout))
        return super().select(0)


class _VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._now = 0.0
        super().__init__(_JumpingSelector(self._jump))

    def _jump(self, seconds: float) -> None:
        self._now += seconds

    def time(self) -> float:
        return self._now


def _in_virtual_time(main: Coroutine[Any, Any, None]) -> None:
    loop = _VirtualTimeLoop()
    try:
        loop.run_until_complete(main)
    finally:
        loop.close()


def _passes(gaps: list[float], children: int, quiet: float, work: float) -> tuple[
        list[float], list[float]]:
    """A JobSet's batched child events `gaps` apart, one worker whose passes take `work`
    seconds: (when each event came, when each pass began), in the loop's seconds."""
    events: list[float] = []
    starts: list[float] = []

    async def run() -> None:
        loop = asyncio.get_running_loop()
        queue = WorkQueue()

        async def worker() -> None:
            while True:
                try:
                    key = await queue.get()
                except QueueShutDownError:
                    return
                starts.append(loop.time())
                await asyncio.sleep(work)
                queue.done(key)

        working = asyncio.create_task(worker())
        for gap in gaps:
            await asyncio.sleep(gap)
            queue.add_batched("a", quiet, children)
            events.append(loop.time())
        await asyncio.sleep(quiet + pass_interval(children) + 2 * work + 1.0)
        queue.shutdown()
        await working

    _in_virtual_time(run())
    return events, starts


@given(
    gaps=st.lists(st.floats(0.0, 0.3), min_size=1, max_size=80),
    children=st.sampled_from([1, 500, 1000, 1001, 2048, 10_000]),
    work=st.floats(0.0, 0.5),
)
def test_property_a_large_jobsets_batched_passes_are_spaced_and_the_last_event_is_seen(
    gaps: list[float], children: int, work: float
) -> None:
    quiet = 0.05
    events, starts = _passes(gaps, children, quiet, work)
    interval = pass_interval(children)
    assert starts, "a batch always ends in a pass"
    for earlier, later in itertools.pairwise(starts):
        assert later - earlier >= max(interval, work) - 1e-9, (starts, events)
    last = events[-1]
    after = [t for t in starts if t >= last - 1e-9]
    assert after, "the last event is followed by a pass"
    assert after[0] <= last + max(quiet, interval) + work + 1e-9
    if interval:  # spaced: no more passes than the events' span allows
        assert len(starts) <= 1 + (last - events[0] + max(quiet, interval) + work) / interval


@given(
    now=st.floats(0, 100), quiet=st.floats(0.001, 1.0), since_first=st.floats(0, 5),
    children=st.integers(0, 20_000), since_pass=st.floats(0, 10),
)
def test_property_batch_due_spaces_only_large_jobsets(
    now: float, quiet: float, since_first: float, children: int, since_pass: float
) -> None:
    first, last_pass = now - since_first, now - since_pass
    unspaced = batch_due(now, quiet, first, children, None)
    due = batch_due(now, quiet, first, children, last_pass)
    assert unspaced == min(now + quiet, first + stream_limit(quiet, children))
    if children <= LARGE_JOBSET:
        assert due == unspaced, "a small JobSet's pass is never held for spacing"
    else:
        assert due == max(unspaced, last_pass + pass_interval(children))


def test_the_pass_interval_grows_with_the_children_and_is_capped() -> None:
    assert pass_interval(10) == pass_interval(LARGE_JOBSET) == 0.0
    assert pass_interval(2048) == pytest.approx(1.024)
    assert pass_interval(100_000) == PASS_INTERVAL_MAX


def test_a_small_jobsets_event_right_after_a_pass_waits_only_the_quiet_period() -> None:
    _events, starts = _passes([0.0, 0.06], children=1000, quiet=0.05, work=0.0)
    assert starts == pytest.approx([0.05, 0.11])


def test_a_large_jobsets_event_right_after_a_pass_waits_for_the_interval() -> None:
    _events, starts = _passes([0.0, 0.06], children=2048, quiet=0.05, work=0.0)
    assert starts == pytest.approx([0.05, 0.05 + pass_interval(2048)])


def test_a_plain_add_of_a_large_jobset_is_never_held() -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        queue = WorkQueue()
        queue.add_batched("a", 0.05, 2048)
        assert await queue.get() == "a"
        queue.done("a")
        queue.add("a")  # a failure: at once, whatever the spacing
        assert await queue.get() == "a" and loop.time() == pytest.approx(0.05)
        queue.done("a")
        queue.add_batched("a", 0.05, None)  # a Pod's event: spaced as the Jobs' said
        assert queue.due("a") == pytest.approx(0.05 + pass_interval(2048))
        queue.discard("a")  # the JobSet is gone: no spacing remembered for its key
        queue.add_batched("a", 0.05, None)
        assert queue.due("a") == pytest.approx(0.10)

    _in_virtual_time(run())
