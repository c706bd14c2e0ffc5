"""The one way a test waits (tests/waiting.py): the first truthy value, a named failure, and
polls that back off."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tests import waiting
from tests.waiting import until, until_sync


def _after(polls: int) -> Callable[[], str]:
    """A check that holds from its `polls`-th call on, counting its calls."""
    calls = itertools.count(1)

    def check() -> str:
        n = next(calls)
        return f"held at poll {n}" if n >= polls else ""

    return check


async def test_until_returns_the_first_truthy_value_of_a_sync_or_async_check() -> None:
    check = _after(3)

    async def async_check() -> str:
        return check()

    held: str = await until(async_check, "three polls", timeout=5, every=0.001)
    assert held == "held at poll 3"


async def test_until_names_what_it_waited_for_the_last_value_and_the_explanation() -> None:
    with pytest.raises(pytest.fail.Exception,
                       match=r"waiting for the impossible; last value: 0\nthe state"):
        await until(lambda: 0, "the impossible", timeout=0.05, every=0.01,
                    explain=lambda: "the state")


def test_until_sync_returns_the_first_truthy_value_and_fails_naming_the_wait() -> None:
    assert until_sync(_after(2), "two polls", timeout=5, every=0.001) == "held at poll 2"
    with pytest.raises(pytest.fail.Exception, match=r"waiting for nothing; last value: ''"):
        until_sync(lambda: "", "nothing", timeout=0.05, every=0.01)


def test_the_pauses_grow_by_half_up_to_the_cap() -> None:
    pauses = list(itertools.islice(waiting._intervals(0.1, 0.3), 5))
    assert pauses == pytest.approx([0.1, 0.15, 0.225, 0.3, 0.3])
    assert list(itertools.islice(waiting._intervals(0.5, 0.2), 2)) == [0.5, 0.5]  # never below
