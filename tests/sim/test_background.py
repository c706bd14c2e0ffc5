"""The shared lifecycle of the sim's in-process components."""

from __future__ import annotations

import asyncio

from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.apiserver.watch import Watch
from jobset_infra.sim.cluster.background import Background, Component
from tests.sim.kube_objects import CONFIGMAPS, configmap


class Reader(Component):
    """Reads one store watch until stopped, counting what it saw."""

    def __init__(self, store: Store) -> None:
        self.store, self.seen = store, 0
        self.background = Background()

    async def start(self) -> None:
        watch = self.background.track(self.store.watch(CONFIGMAPS, "default"))
        self.background.spawn(self._read(watch), "reader")

    async def _read(self, watch: Watch) -> None:
        async for _ in watch:
            self.seen += 1


async def test_stop_closes_the_watches_and_ends_the_tasks_and_the_component_can_restart() -> None:
    store = Store()
    async with Reader(store) as reader:
        store.create(CONFIGMAPS, configmap("a"), "default")
        await asyncio.sleep(0)
        tasks, watches = list(reader.background.tasks), list(reader.background.watches)
        assert reader.seen == 1 and len(tasks) == 1 and len(watches) == 1
    assert all(task.done() for task in tasks)
    assert (reader.background.tasks, reader.background.watches) == ([], [])
    assert reader.background.stopping
    await reader.start()
    assert not reader.background.stopping and len(reader.background.tasks) == 1
    await reader.stop()
