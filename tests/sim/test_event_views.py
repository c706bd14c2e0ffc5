"""core/v1 and events.k8s.io/v1 Events are one stored collection, served in two shapes."""

from __future__ import annotations

import asyncio
from typing import Any

from jobset_infra.sim.apiserver.event_views import CORE_EVENTS, EVENTS_V1, to_core, to_events_v1
from jobset_infra.sim.apiserver.store import Store

REF = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "js",
       "namespace": "default", "uid": "u-1"}


def events_v1_event(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
        "eventTime": "2026-11-29T12:00:00.000000Z", "reportingController": "jobset-controller",
        "reportingInstance": "jobset-controller-0", "action": "Reconcile",
        "reason": "AllJobsCompleted", "type": "Normal", "note": "jobset completed",
        "regarding": REF, "related": {"kind": "Job", "name": "js-w-0"},
        "series": {"count": 2, "lastObservedTime": "2026-11-29T12:00:01.000000Z"},
        "deprecatedSource": {"component": "jobset"}, "deprecatedCount": 3,
        "deprecatedFirstTimestamp": "2026-11-29T11:00:00Z",
        "deprecatedLastTimestamp": "2026-11-29T11:30:00Z",
    }


def test_every_events_v1_field_maps_to_its_core_field_and_back() -> None:
    core = to_core(events_v1_event("e"))
    assert core == {
        "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "eventTime": "2026-11-29T12:00:00.000000Z", "reportingComponent": "jobset-controller",
        "reportingInstance": "jobset-controller-0", "action": "Reconcile",
        "reason": "AllJobsCompleted", "type": "Normal", "message": "jobset completed",
        "involvedObject": REF, "related": {"kind": "Job", "name": "js-w-0"},
        "series": {"count": 2, "lastObservedTime": "2026-11-29T12:00:01.000000Z"},
        "source": {"component": "jobset"}, "count": 3,
        "firstTimestamp": "2026-11-29T11:00:00Z", "lastTimestamp": "2026-11-29T11:30:00Z",
    }
    assert to_events_v1(core) == events_v1_event("e")


def test_an_event_written_through_one_api_is_read_through_both() -> None:
    store = Store()
    created = store.create(EVENTS_V1, events_v1_event("new-api"), "default")
    core = store.get(CORE_EVENTS, "new-api", "default")
    assert core["message"] == "jobset completed"
    assert core["involvedObject"] == REF
    assert core["metadata"]["uid"] == created["metadata"]["uid"]
    assert core["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    store.create(CORE_EVENTS, to_core(events_v1_event("old-api")), "default")
    assert [e["metadata"]["name"] for e in store.list(EVENTS_V1, "default").items] == [
        "new-api", "old-api"]
    assert [e["metadata"]["name"] for e in store.list(CORE_EVENTS, "default").items] == [
        "new-api", "old-api"]
    assert store.get(EVENTS_V1, "old-api", "default")["note"] == "jobset completed"


def test_updates_and_deletes_through_either_api_change_the_one_object() -> None:
    store = Store()
    store.create(EVENTS_V1, events_v1_event("e"), "default")
    store.patch(EVENTS_V1, "e", "default", "application/merge-patch+json",
                {"series": {"count": 5}})
    assert store.get(CORE_EVENTS, "e", "default")["series"]["count"] == 5
    store.patch(CORE_EVENTS, "e", "default", "application/merge-patch+json", {"message": "m2"})
    assert store.get(EVENTS_V1, "e", "default")["note"] == "m2"
    store.delete(EVENTS_V1, "e", "default")
    assert store.try_get(CORE_EVENTS, "e", "default") is None
    assert store.try_get(EVENTS_V1, "e", "default") is None


async def test_watches_of_both_apis_see_a_write_through_either() -> None:
    store = Store()
    core_watch, new_watch = store.watch(CORE_EVENTS, "default"), store.watch(EVENTS_V1, "default")
    store.create(EVENTS_V1, events_v1_event("a"), "default")
    store.create(CORE_EVENTS, to_core(events_v1_event("b")), "default")
    seen_core = [await asyncio.wait_for(anext(core_watch), 1.0) for _ in range(2)]
    seen_new = [await asyncio.wait_for(anext(new_watch), 1.0) for _ in range(2)]
    assert [(t, o["metadata"]["name"], o["message"]) for t, o in seen_core] == [
        ("ADDED", "a", "jobset completed"), ("ADDED", "b", "jobset completed")]
    assert [(t, o["metadata"]["name"], o["note"]) for t, o in seen_new] == [
        ("ADDED", "a", "jobset completed"), ("ADDED", "b", "jobset completed")]
