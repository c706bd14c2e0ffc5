"""The lifecycle shared by the sim's in-process components (the fake Job controller, the
scheduler): the tasks they run and the store watches those tasks read, stopped together."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, Self

from jobset_infra.sim.apiserver.watch import Watch


class Background:
    """Tasks and watches of one component. `stop()` closes the watches first (so a task blocked
    on one wakes up), then cancels and awaits every task; the component can start again."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[None]] = []
        self.watches: list[Watch] = []
        self.stopping = False

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        self.stopping = False
        self.tasks.append(asyncio.create_task(work, name=name))

    def track(self, watch: Watch) -> Watch:
        self.watches.append(watch)
        return watch

    def forget(self, watch: Watch) -> None:
        if watch in self.watches:
            self.watches.remove(watch)

    async def stop(self) -> None:
        self.stopping = True
        for watch in self.watches:
            watch.close()
        for task in self.tasks:
            task.cancel()
        for task in self.tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.tasks, self.watches = [], []


class Component:
    """A component started and stopped by `Sim` (or used as `async with`), running its work in
    `self.background`. Subclasses define `start()`."""

    background: Background

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        await self.background.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
