"""Kubernetes semantics of the in-process store (no HTTP)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.sim.apiserver import patch
from jobset_infra.sim.apiserver.errors import (
    AlreadyExistsError,
    ConflictError,
    InvalidError,
    NotFoundError,
    StatusError,
)
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store, clone
from jobset_infra.sim.apiserver.watch import Watch
from tests.sim.kube_objects import (
    CONFIGMAPS,
    CRDS,
    DEPLOYMENTS,
    JOBS,
    NAMESPACES,
    PODS,
    WIDGETS,
    configmap,
    deployment,
    job,
    pod,
    widget,
    widget_crd,
)


class FixedClock:
    def __init__(self) -> None:
        self.at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at


@pytest.fixture
def store() -> Store:
    return Store(clock=FixedClock())


async def take(stream: Watch, n: int) -> list[tuple[str, str]]:
    """The next n events as (type, name), failing if they do not arrive within a second."""
    out = []
    for _ in range(n):
        kind, obj = await asyncio.wait_for(anext(stream), 1.0)
        out.append((kind, obj["metadata"].get("name", "")))
    return out


async def nothing_more(stream: Watch) -> bool:
    try:
        await asyncio.wait_for(anext(stream), 0.05)
    except TimeoutError:
        return True
    return False


def test_create_assigns_identity_version_and_timestamp(store: Store) -> None:
    created = store.create(JOBS, job("a"), "default")
    meta = created["metadata"]
    assert meta["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert meta["generation"] == 1
    assert int(meta["resourceVersion"]) == store.resource_version
    assert len(meta["uid"]) == 36
    assert store.get(JOBS, "a", "default") is created


def test_job_gets_the_defaults_and_selector_a_real_server_adds(store: Store) -> None:
    created = store.create(JOBS, job("a"), "default")
    uid = created["metadata"]["uid"]
    assert created["spec"]["selector"] == {
        "matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert created["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "a"
    assert (created["spec"]["completions"], created["spec"]["parallelism"]) == (1, 1)
    assert created["spec"]["backoffLimit"] == 6
    assert created["status"] == {}


@pytest.mark.parametrize(
    ("namespace", "want_code", "want_reason"),
    [
        pytest.param("default", 409, "AlreadyExists", id="a second create of one name conflicts"),
        pytest.param("missing", 404, "NotFound", id="a create into a missing namespace is 404"),
    ],
)
def test_create_errors(store: Store, namespace: str, want_code: int, want_reason: str) -> None:
    store.create(JOBS, job("a"), "default")
    with pytest.raises(StatusError) as err:
        store.create(JOBS, job("a"), namespace)
    assert (err.value.code, err.value.reason) == (want_code, want_reason)
    assert err.value.status["kind"] == "Status"


def test_generate_name_makes_a_unique_name(store: Store) -> None:
    body = job("")
    body["metadata"] = {"generateName": "run-"}
    first = store.create(JOBS, body, "default")
    second = store.create(JOBS, body, "default")
    assert first["metadata"]["name"].startswith("run-")
    assert first["metadata"]["name"] != second["metadata"]["name"]


def test_update_with_a_stale_resource_version_is_409_conflict(store: Store) -> None:
    first = store.create(JOBS, job("a"), "default")
    newer = clone(first)
    newer["metadata"]["labels"] = {"x": "1"}
    store.update(JOBS, newer)
    stale = clone(first)
    stale["metadata"]["labels"] = {"x": "2"}
    with pytest.raises(StatusError) as err:
        store.update(JOBS, stale)
    assert err.value.code == 409
    assert err.value.reason == "Conflict"
    assert "the object has been modified" in err.value.message


@pytest.mark.parametrize(
    ("change", "subresource", "want_generation"),
    [
        pytest.param(lambda o: o["metadata"].update(labels={"a": "b"}), None, 1,
                     id="a label change keeps the generation"),
        pytest.param(lambda o: o["spec"].update(suspend=True), None, 2,
                     id="a spec change bumps the generation"),
        pytest.param(lambda o: o.update(status={"active": 1}), "status", 1,
                     id="a status write keeps the generation"),
    ],
)
def test_generation_counts_spec_changes_only(
    store: Store, change: Any, subresource: str | None, want_generation: int
) -> None:
    obj = clone(store.create(JOBS, job("a"), "default"))
    change(obj)
    updated = store.update(JOBS, obj, subresource=subresource)
    assert updated["metadata"]["generation"] == want_generation


def test_status_subresource_isolation(store: Store) -> None:
    obj = clone(store.create(JOBS, job("a"), "default"))
    obj["status"] = {"active": 3}
    obj["spec"]["suspend"] = True
    main = store.update(JOBS, obj)
    assert main["status"] == {} and main["spec"]["suspend"] is True
    obj = clone(main)
    obj["status"] = {"active": 3}
    obj["spec"]["suspend"] = False
    status = store.update_status(JOBS, obj)
    assert status["status"] == {"active": 3} and status["spec"]["suspend"] is True


def test_a_no_op_update_is_not_a_write(store: Store) -> None:
    obj = store.create(JOBS, job("a"), "default")
    before = store.resource_version
    again = store.update(JOBS, clone(obj))
    assert again["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]
    assert store.resource_version == before


@pytest.mark.parametrize(
    ("patch_type", "body", "want_env"),
    [
        pytest.param(patch.MERGE_PATCH,
                     {"spec": {"template": {"spec": {"containers": [
                         {"name": "d", "image": "x:1"}]}}}},
                     None, id="a merge patch replaces lists"),
        pytest.param(patch.STRATEGIC_PATCH,
                     {"spec": {"template": {"spec": {"containers": [
                         {"name": "c", "env": [{"name": "K", "value": "V"}]}]}}}},
                     [{"name": "K", "value": "V"}], id="strategic merge merges containers by name"),
        pytest.param(patch.JSON_PATCH,
                     [{"op": "add", "path": "/spec/template/spec/containers/0/env",
                       "value": [{"name": "K", "value": "J"}]}],
                     [{"name": "K", "value": "J"}], id="a json patch adds at a pointer"),
    ],
)
def test_patch_types(store: Store, patch_type: str, body: Any, want_env: Any) -> None:
    store.create(DEPLOYMENTS, deployment("d"), "default")
    patched = store.patch(DEPLOYMENTS, "d", "default", patch_type, body)
    containers = patched["spec"]["template"]["spec"]["containers"]
    assert containers[0].get("env") == want_env
    if patch_type == patch.MERGE_PATCH:
        assert [c["name"] for c in containers] == ["d"]


def test_a_failed_json_patch_test_is_422(store: Store) -> None:
    store.create(CONFIGMAPS, configmap("c", {"k": "v"}), "default")
    with pytest.raises(StatusError) as err:
        store.patch(CONFIGMAPS, "c", "default", patch.JSON_PATCH,
                    [{"op": "test", "path": "/data/k", "value": "other"}])
    assert err.value.code == 422


def test_a_patch_carrying_a_stale_resource_version_conflicts(store: Store) -> None:
    obj = store.create(CONFIGMAPS, configmap("c"), "default")
    store.patch(CONFIGMAPS, "c", "default", patch.MERGE_PATCH, {"data": {"a": "1"}})
    with pytest.raises(StatusError) as err:
        store.patch(CONFIGMAPS, "c", "default", patch.MERGE_PATCH,
                    {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                     "data": {"a": "2"}})
    assert err.value.code == 409


async def test_foreground_deletion_removes_dependents_first_and_owner_last(store: Store) -> None:
    owner = store.create(JOBS, job("owner"), "default")
    store.create(PODS, pod("held", owner=owner, finalizers=["example.com/hold"]), "default")
    store.create(PODS, pod("free", owner=owner), "default")
    jobs = store.watch(JOBS, "default", store.resource_version)
    pods = store.watch(PODS, "default", store.resource_version)

    obj, gone = store.delete(JOBS, "owner", "default", propagation="Foreground")

    assert not gone
    assert "foregroundDeletion" in obj["metadata"]["finalizers"]
    assert obj["metadata"]["deletionTimestamp"] == "2026-01-02T03:04:05Z"
    assert store.try_get(PODS, "free", "default") is None
    held = clone(store.get(PODS, "held", "default"))
    assert held["metadata"]["deletionTimestamp"]
    held["metadata"]["finalizers"] = []
    store.update(PODS, held)
    assert store.try_get(JOBS, "owner", "default") is None
    assert await take(pods, 3) == [("DELETED", "free"), ("MODIFIED", "held"),
                                   ("DELETED", "held")]
    assert await take(jobs, 2) == [("MODIFIED", "owner"), ("DELETED", "owner")]
    deleted = {e.obj["metadata"]["name"]: e.rv for e in
               [*store.log(JOBS).events, *store.log(PODS).events] if e.type == "DELETED"}
    assert deleted["owner"] > deleted["held"] > deleted["free"]


@pytest.mark.parametrize(
    ("propagation", "want_pod_left", "want_owner_refs"),
    [
        pytest.param("Background", False, None, id="background deletes dependents"),
        pytest.param("Orphan", True, None, id="orphan keeps dependents and drops the reference"),
        pytest.param(None, True, None, id="jobs orphan their pods by default like batch/v1"),
    ],
)
def test_propagation_policies(
    store: Store, propagation: str | None, want_pod_left: bool, want_owner_refs: Any
) -> None:
    owner = store.create(JOBS, job("owner"), "default")
    store.create(PODS, pod("p", owner=owner), "default")
    _, gone = store.delete(JOBS, "owner", "default", propagation=propagation)
    assert gone
    left = store.try_get(PODS, "p", "default")
    assert (left is not None) is want_pod_left
    if left is not None:
        assert left["metadata"].get("ownerReferences") == want_owner_refs


def test_a_dependent_with_another_live_owner_survives(store: Store) -> None:
    first = store.create(CONFIGMAPS, configmap("one"), "default")
    second = store.create(CONFIGMAPS, configmap("two"), "default")
    body = configmap("child", owner=first)
    body["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "two",
         "uid": second["metadata"]["uid"]})
    store.create(CONFIGMAPS, body, "default")
    store.delete(CONFIGMAPS, "one", "default", propagation="Background")
    child = store.get(CONFIGMAPS, "child", "default")
    assert [r["name"] for r in child["metadata"]["ownerReferences"]] == ["two"]


def test_finalizers_hold_an_object_until_removed(store: Store) -> None:
    store.create(PODS, pod("p", finalizers=["example.com/f"]), "default")
    obj, gone = store.delete(PODS, "p", "default")
    assert not gone and obj["metadata"]["deletionTimestamp"]
    added = clone(obj)
    added["metadata"]["finalizers"].append("example.com/new")
    with pytest.raises(StatusError) as err:
        store.update(PODS, added)
    assert err.value.code == 422
    assert "no new finalizers" in err.value.message
    released = clone(obj)
    released["metadata"]["finalizers"] = []
    store.update(PODS, released)
    assert store.try_get(PODS, "p", "default") is None


def test_delete_preconditions(store: Store) -> None:
    store.create(CONFIGMAPS, configmap("c"), "default")
    with pytest.raises(StatusError) as err:
        store.delete(CONFIGMAPS, "c", "default", preconditions={"uid": "not-it"})
    assert err.value.code == 409
    assert "the UID in the precondition (not-it) does not match the UID in record" in (
        err.value.message)


async def test_watch_replays_from_a_version_and_streams_on(store: Store) -> None:
    store.create(CONFIGMAPS, configmap("before"), "default")
    start = store.resource_version
    store.create(CONFIGMAPS, configmap("after"), "default")
    stream = store.watch(CONFIGMAPS, "default", str(start))
    store.create(CONFIGMAPS, configmap("live"), "default")
    assert await take(stream, 2) == [("ADDED", "after"), ("ADDED", "live")]
    assert await nothing_more(stream)


async def test_watch_without_a_version_starts_with_synthetic_added(store: Store) -> None:
    store.create(CONFIGMAPS, configmap("x"), "default")
    stream = store.watch(CONFIGMAPS, "default")
    assert await take(stream, 1) == [("ADDED", "x")]


async def test_watch_list_ends_initial_events_with_an_annotated_bookmark(store: Store) -> None:
    store.create(CONFIGMAPS, configmap("x"), "default")
    stream = store.watch(CONFIGMAPS, "default", send_initial_events=True)
    assert await take(stream, 1) == [("ADDED", "x")]
    kind, obj = await asyncio.wait_for(anext(stream), 1.0)
    assert kind == "BOOKMARK"
    assert obj["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert obj["metadata"]["resourceVersion"] == str(store.resource_version)


@pytest.mark.parametrize(
    "expire",
    [
        pytest.param(lambda s: s.compact(), id="after compaction"),
        pytest.param(lambda s: [s.create(CONFIGMAPS, configmap(f"c{i}"), "default")
                                for i in range(5)], id="after the window rolled over"),
    ],
)
def test_watch_from_an_expired_version_is_410_gone(expire: Any) -> None:
    store = Store(clock=FixedClock(), watch_window=3)
    store.create(CONFIGMAPS, configmap("first"), "default")
    old = store.resource_version
    store.create(CONFIGMAPS, configmap("second"), "default")
    expire(store)
    with pytest.raises(StatusError) as err:
        store.watch(CONFIGMAPS, "default", str(old))
    assert (err.value.code, err.value.reason) == (410, "Expired")
    assert err.value.message.startswith(f"too old resource version: {old}")


async def test_label_filtered_watch_sees_objects_leave_and_enter(store: Store) -> None:
    store.create(CONFIGMAPS, configmap("c"), "default")
    stream = store.watch(CONFIGMAPS, "default", store.resource_version, label_selector="app=x")
    store.patch(CONFIGMAPS, "c", "default", patch.MERGE_PATCH,
                {"metadata": {"labels": {"app": "x"}}})
    store.patch(CONFIGMAPS, "c", "default", patch.MERGE_PATCH, {"data": {"k": "v"}})
    store.patch(CONFIGMAPS, "c", "default", patch.MERGE_PATCH,
                {"metadata": {"labels": {"app": None}}})
    assert await take(stream, 2) == [("ADDED", "c"), ("MODIFIED", "c")]
    kind, left = await asyncio.wait_for(anext(stream), 1.0)
    assert kind == "DELETED"
    assert left["metadata"]["labels"] == {"app": "x"}  # the object as it last matched
    assert left["metadata"]["resourceVersion"] == str(store.resource_version)


@pytest.mark.parametrize(
    ("selector", "want"),
    [
        pytest.param("app=web", ["a", "b"], id="equality"),
        pytest.param("app!=web", ["c", "d"], id="inequality includes unlabelled objects"),
        pytest.param("tier in (front, back)", ["a", "c"], id="set membership"),
        pytest.param("tier notin (front)", ["b", "c", "d"], id="set exclusion"),
        pytest.param("tier", ["a", "c"], id="existence"),
        pytest.param("!tier", ["b", "d"], id="non-existence"),
        pytest.param("app=web,tier=front", ["a"], id="all requirements must hold"),
    ],
)
def test_list_label_selectors(store: Store, selector: str, want: list[str]) -> None:
    labels = {"a": {"app": "web", "tier": "front"}, "b": {"app": "web"},
              "c": {"app": "db", "tier": "back"}, "d": {}}
    for name, value in labels.items():
        store.create(PODS, pod(name, labels=value), "default")
    names = [o["metadata"]["name"] for o in store.list(PODS, "default",
                                                        label_selector=selector).items]
    assert names == want


def test_field_selectors(store: Store) -> None:
    store.create(PODS, pod("a"), "default")
    store.create(PODS, pod("b"), "kube-system")
    page = store.list(PODS, field_selector="metadata.namespace=kube-system")
    assert [o["metadata"]["name"] for o in page.items] == ["b"]
    assert store.list(PODS, field_selector="status.phase=Pending").items
    with pytest.raises(StatusError) as err:
        store.list(PODS, field_selector="spec.unknown=x")
    assert err.value.code == 400


def test_limit_and_continue_page_through_everything(store: Store) -> None:
    for i in range(7):
        store.create(CONFIGMAPS, configmap(f"c{i}"), "default")
    seen, token = [], None
    while True:
        page = store.list(CONFIGMAPS, "default", limit=3, continue_token=token)
        seen += [o["metadata"]["name"] for o in page.items]
        token = page.continue_token
        if token is None:
            break
        assert page.remaining is not None and page.remaining > 0
    assert seen == [f"c{i}" for i in range(7)]


def test_deleting_a_namespace_deletes_its_content(store: Store) -> None:
    store.create(NAMESPACES, {"metadata": {"name": "team"}})
    store.create(CONFIGMAPS, configmap("c"), "team")
    _, gone = store.delete(NAMESPACES, "team")
    assert gone
    assert store.try_get(NAMESPACES, "team") is None
    assert not store.list(CONFIGMAPS, "team").items


def test_a_registered_crd_is_served_at_once_and_deleting_it_removes_its_objects(
    store: Store,
) -> None:
    crd = store.create(CRDS, widget_crd())
    assert {c["type"] for c in crd["status"]["conditions"]} == {"Established", "NamesAccepted"}
    created = store.create(WIDGETS, widget("w", size=2) | {"status": {"ready": True}}, "default")
    assert "status" not in created
    store.delete(CRDS, "widgets.example.com")
    with pytest.raises(StatusError) as err:
        store.list(WIDGETS)
    assert err.value.code == 404


def test_custom_resources_need_a_resource_version_to_update(store: Store) -> None:
    store.create(CRDS, widget_crd())
    store.create(WIDGETS, widget("w"), "default")
    body = widget("w", size=3)
    with pytest.raises(StatusError) as err:
        store.update(WIDGETS, body, "default")
    assert err.value.code == 422


def test_strategic_merge_is_refused_for_custom_resources(store: Store) -> None:
    store.create(CRDS, widget_crd())
    store.create(WIDGETS, widget("w"), "default")
    with pytest.raises(StatusError) as err:
        store.patch(WIDGETS, "w", "default", patch.STRATEGIC_PATCH, {"spec": {"size": 2}})
    assert err.value.code == 415


def test_dependents_of_owners_that_do_not_exist_are_collected(store: Store) -> None:
    from jobset_infra.sim.apiserver.gc import collect_dangling

    ghost = {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "ghost", "uid": "no-such-uid"}}
    live = store.create(CONFIGMAPS, configmap("live"), "default")
    store.create(CONFIGMAPS, configmap("orphaned", owner=ghost), "default")
    half = configmap("half", owner=ghost)
    half["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "live",
         "uid": live["metadata"]["uid"]})
    store.create(CONFIGMAPS, half, "default")
    assert collect_dangling(store) == 2
    assert store.try_get(CONFIGMAPS, "orphaned", "default") is None
    kept = store.get(CONFIGMAPS, "half", "default")
    assert [r["name"] for r in kept["metadata"]["ownerReferences"]] == ["live"]


async def test_watch_from_before_the_first_event_of_a_resource_type_is_not_expired(
    store: Store,
) -> None:
    before = store.resource_version
    store.create(PODS, pod("other-type"), "default")
    store.create(CONFIGMAPS, configmap("first"), "default")
    stream = store.watch(CONFIGMAPS, "default", str(before))
    assert await take(stream, 1) == [("ADDED", "first")]


@pytest.mark.parametrize(
    ("act", "want"),
    [
        pytest.param(lambda s: s.get(JOBS, "missing", "default"), NotFoundError,
                     id="a missing object raises NotFoundError"),
        pytest.param(lambda s: s.create(JOBS, job("a"), "default"), AlreadyExistsError,
                     id="a duplicate raises AlreadyExistsError"),
        pytest.param(lambda s: s.update(JOBS, job("a") | {"metadata": {
            "name": "a", "namespace": "default", "resourceVersion": "1"}}), ConflictError,
                     id="a stale write raises ConflictError"),
        pytest.param(lambda s: s.create(JOBS, {"metadata": {}}, "default"), InvalidError,
                     id="a nameless object raises InvalidError"),
    ],
)
def test_errors_have_classes_per_reason(store: Store, act: Any, want: type) -> None:
    store.create(JOBS, job("a"), "default")
    with pytest.raises(want):
        act(store)


def test_a_version_an_updated_crd_stops_serving_is_no_longer_served(store: Store) -> None:
    crd = clone(store.create(CRDS, widget_crd()))
    v2 = clone(crd["spec"]["versions"][0]) | {"name": "v2", "storage": False}
    crd["spec"]["versions"].append(v2)
    crd = clone(store.update(CRDS, crd))
    assert store.list(GVR("example.com", "v2", "widgets")).items == []
    crd["spec"]["versions"] = [v2 | {"storage": True}]
    store.update(CRDS, crd)
    with pytest.raises(NotFoundError):
        store.list(WIDGETS)


def test_a_patch_cannot_add_a_field_a_builtin_kind_does_not_have(store: Store) -> None:
    store.create(JOBS, job("a"), "default")
    patched = store.patch(JOBS, "a", "default", patch.MERGE_PATCH,
                          {"spec": {"completion": 3, "suspend": True}})
    assert patched["spec"]["suspend"] is True
    assert "completion" not in patched["spec"]
