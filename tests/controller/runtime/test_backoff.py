"""The informers' retry delays: client-go's reflector backoff (0.8 s doubling to 30 s, jitter
1.0, reset after 2 quiet minutes)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.controller.runtime.backoff import REFLECTOR, Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def delays(count: int, jitter: float, gap: float = 0.0) -> list[float]:
    clock = Clock()
    backoff = Backoff(clock=clock, rand=lambda: jitter)
    found = []
    for _ in range(count):
        found.append(round(backoff.next_delay(), 3))
        clock.now += gap
    return found


@pytest.mark.parametrize(
    ("count", "jitter", "expected"),
    [
        pytest.param(8, 0.0, [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0],
                     id="without jitter the delay doubles from 0.8 s and stops at 30 s"),
        pytest.param(7, 1.0, [1.6, 3.2, 6.4, 12.8, 25.6, 51.2, 60.0],
                     id="full jitter doubles each delay, so at the cap a retry is 30 to 60 s away"),
        pytest.param(3, 0.5, [1.2, 2.4, 4.8], id="jitter adds that fraction of the base"),
    ],
)
def test_delays_grow_to_the_cap(count: int, jitter: float, expected: list[float]) -> None:
    assert delays(count, jitter) == expected


def test_two_quiet_minutes_start_the_delays_again() -> None:
    clock = Clock()
    backoff = Backoff(clock=clock, rand=lambda: 0.0)
    for _ in range(6):
        backoff.next_delay()
    clock.now += 119.0
    assert backoff.next_delay() == 30.0, "a failure within 2 min keeps the long delay"
    clock.now += 121.0
    assert backoff.next_delay() == 0.8, "after 2 quiet minutes the server was healthy"


@given(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=40))
def test_every_delay_is_at_least_its_base_and_at_most_twice_the_cap(jitters: list[float]) -> None:
    values = iter(jitters)
    backoff = Backoff(clock=lambda: 0.0, rand=lambda: next(values))
    for _ in jitters:
        delay = backoff.next_delay()
        assert REFLECTOR.initial <= delay <= REFLECTOR.longest == 60.0
