"""Properties of the store under arbitrary sequences of writes."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.patch import MERGE_PATCH
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.apiserver.updates import clone
from tests.sim.kube_objects import CONFIGMAPS, JOBS, PODS, configmap, job, owner_ref, pod

NAMES = ["a", "b", "c", "d"]
operation = st.one_of(
    st.tuples(st.just("create"), st.sampled_from(NAMES), st.sampled_from([None, *NAMES]),
              st.booleans()),
    st.tuples(st.just("label"), st.sampled_from(NAMES), st.text("xy", max_size=2)),
    st.tuples(st.just("delete"), st.sampled_from(NAMES),
              st.sampled_from(["Foreground", "Background", "Orphan"])),
    st.tuples(st.just("release"), st.sampled_from(NAMES)),
)


def run(store: Store, op: tuple[Any, ...]) -> None:
    kind, name = op[0], op[1]
    try:
        if kind == "create":
            body = configmap(name)
            owner = store.try_get(CONFIGMAPS, op[2], "default") if op[2] else None
            if owner is not None:
                body["metadata"]["ownerReferences"] = [owner_ref(owner)]
            if op[3]:
                body["metadata"]["finalizers"] = ["example.com/hold"]
            store.create(CONFIGMAPS, body, "default")
        elif kind == "label":
            store.patch(CONFIGMAPS, name, "default", MERGE_PATCH,
                        {"metadata": {"labels": {"v": op[2] or None}}})
        elif kind == "delete":
            store.delete(CONFIGMAPS, name, "default", propagation=op[2])
        else:
            obj = clone(store.get(CONFIGMAPS, name, "default"))
            obj["metadata"]["finalizers"] = []
            store.update(CONFIGMAPS, obj)
    except StatusError as err:
        assert err.code in (404, 409, 422)


@given(st.lists(operation, max_size=25))
def test_replaying_the_event_history_rebuilds_the_state(ops: list[tuple[Any, ...]]) -> None:
    store = Store()
    start = store.resource_version
    for op in ops:
        run(store, op)
    replayed: dict[str, dict[str, Any]] = {}
    last_rv = start
    for event in store.log(CONFIGMAPS).since(start):
        assert event.rv > last_rv
        last_rv = event.rv
        assert event.obj["metadata"]["resourceVersion"] == str(event.rv)
        if event.type == "DELETED":
            replayed.pop(event.obj["metadata"]["name"])
        else:
            replayed[event.obj["metadata"]["name"]] = event.obj
    current = {o["metadata"]["name"]: o for o in store.list(CONFIGMAPS, "default").items}
    assert replayed == current


@given(st.lists(operation, max_size=25))
def test_the_owner_index_matches_the_owner_references(ops: list[tuple[Any, ...]]) -> None:
    store = Store()
    for op in ops:
        run(store, op)
    expected: dict[str, set[tuple[Any, str, str]]] = {}
    for obj in store.iter_objects(CONFIGMAPS):
        for ref in obj["metadata"].get("ownerReferences") or ():
            expected.setdefault(ref["uid"], set()).add(
                (CONFIGMAPS, "default", obj["metadata"]["name"]))
    assert store.dependents == expected
    for obj in store.iter_objects(CONFIGMAPS):
        deleting = obj["metadata"].get("deletionTimestamp")
        assert not deleting or obj["metadata"].get("finalizers")


def test_foreground_deletion_of_a_large_owner_is_fast_and_complete() -> None:
    store = Store()
    owner = store.create(CONFIGMAPS, configmap("jobset"), "default")
    for i in range(2000):
        body = job(f"j{i}")
        body["metadata"]["ownerReferences"] = [owner_ref(owner)]
        child = store.create(JOBS, body, "default")
        store.create(PODS, pod(f"p{i}", owner=child), "default")
    began = time.perf_counter()
    _, gone = store.delete(CONFIGMAPS, "jobset", "default", propagation="Foreground")
    assert time.perf_counter() - began < 5
    assert gone
    assert not store.list(JOBS).items and not store.list(PODS).items
    deletions = [e for e in store.log(CONFIGMAPS).events if e.type == "DELETED"]
    last_job = max(e.rv for e in store.log(JOBS).events if e.type == "DELETED")
    assert deletions[0].rv > last_job
