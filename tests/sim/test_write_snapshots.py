"""Status writes share the stored snapshot's spec; watches hand over queued bursts at once."""

from __future__ import annotations

import copy

from jobset_infra.sim.apiserver.store import Store
from tests.sim.kube_objects import CONFIGMAPS, PODS, configmap, pod


async def test_a_status_write_leaves_the_previous_snapshot_as_it_was() -> None:
    store = Store()
    before = store.create(PODS, pod("p"), "default")
    frozen = copy.deepcopy(before)
    after = store.update(PODS, {**before, "status": {"phase": "Running"}}, subresource="status")
    assert before == frozen
    assert after["status"] == {"phase": "Running"}
    assert after["spec"] == before["spec"]
    assert after["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]


async def test_take_ready_returns_the_queued_events_in_order_and_the_end() -> None:
    store = Store()
    stream = store.watch(CONFIGMAPS, "default", store.resource_version)
    for name in ("a", "b", "c"):
        store.create(CONFIGMAPS, configmap(name), "default")
    first = await anext(stream)
    ready, ended = stream.take_ready()
    assert [obj["metadata"]["name"] for _, obj in (first, *ready)] == ["a", "b", "c"]
    assert not ended
    assert stream.last_rv == store.resource_version
    stream.close()
    assert stream.take_ready() == ([], True)
