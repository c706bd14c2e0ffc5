"""The write gate: never more writes in flight than the congestion window allows, places handed
to the longest waiter, a cancelled waiter's place given back."""

from __future__ import annotations

import asyncio

from jobset_infra.controller.runtime.congestion import CongestionWindow
from jobset_infra.controller.runtime.kube import AnswerHook
from jobset_infra.controller.runtime.write_gate import WriteGate


async def test_writes_in_flight_never_exceed_the_window_and_go_in_arrival_order() -> None:
    gate = WriteGate(CongestionWindow(ceiling=3, initial=3))
    release = asyncio.Event()
    started: list[str] = []
    most = 0

    async def write(name: str, hook: AnswerHook) -> None:
        nonlocal most
        started.append(name)
        most = max(most, gate.in_flight)
        await release.wait()
        hook(201, 0.001)

    tasks = [asyncio.create_task(gate.send(lambda hook, n=n: write(n, hook)))  # type: ignore[misc]
             for n in "abcdefg"]
    while len(started) < 3:
        await asyncio.sleep(0)
    assert started == ["a", "b", "c"] and gate.in_flight == 3
    release.set()
    await asyncio.gather(*tasks)
    assert started == list("abcdefg")
    assert most <= 5, "the window grew by the answers, never past what they allowed"
    assert gate.in_flight == 0


async def test_a_cancelled_waiter_gives_its_place_back() -> None:
    gate = WriteGate(CongestionWindow(ceiling=1, initial=1))
    hold = asyncio.Event()

    async def held(hook: AnswerHook) -> None:
        await hold.wait()

    async def quick(hook: AnswerHook) -> str:
        return "sent"

    first = asyncio.create_task(gate.send(held))
    await asyncio.sleep(0)
    waiting = asyncio.create_task(gate.send(quick))
    await asyncio.sleep(0)
    waiting.cancel()
    hold.set()
    await first
    assert await asyncio.wait_for(gate.send(quick), 5) == "sent"
    assert gate.in_flight == 0
