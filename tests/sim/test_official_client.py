"""The official `kubernetes` Python client (a real client no one here wrote) against the sim."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from jobset_infra.sim.apiserver.server import SimThread
from tests.sim.kube_objects import CONFIGMAPS, job, pod, widget, widget_crd


@pytest.fixture(scope="module")
def sim() -> Iterator[SimThread]:
    with SimThread() as server:
        yield server


@pytest.fixture(scope="module")
def api(sim: SimThread, tmp_path_factory: pytest.TempPathFactory) -> client.ApiClient:
    path = sim.kubeconfig(tmp_path_factory.mktemp("official") / "kubeconfig")
    return config.new_client_from_config(config_file=str(path))


def test_namespaces_are_listed_with_the_preset_ones(api: client.ApiClient) -> None:
    names = {n.metadata.name for n in client.CoreV1Api(api).list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_replace_with_a_stale_resource_version_raises_409(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    created = core.create_namespaced_config_map("default", {
        "metadata": {"name": "stale"}, "data": {"a": "1"}})
    fresh = core.read_namespaced_config_map("stale", "default")
    fresh.data = {"a": "2"}
    core.replace_namespaced_config_map("stale", "default", fresh)
    created.data = {"a": "3"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("stale", "default", created)
    assert err.value.status == 409


def test_job_status_subresource_and_foreground_delete(
    api: client.ApiClient, sim: SimThread
) -> None:
    batch, core = client.BatchV1Api(api), client.CoreV1Api(api)
    created = batch.create_namespaced_job("default", job("official"))
    owner = api.sanitize_for_serialization(created)
    core.create_namespaced_pod("default", pod("official-0", owner=owner))
    batch.patch_namespaced_job_status("official", "default", {"status": {"active": 1}})
    assert batch.read_namespaced_job_status("official", "default").status.active == 1
    batch.delete_namespaced_job("official", "default", body=client.V1DeleteOptions(
        propagation_policy="Foreground"))
    assert core.list_namespaced_pod("default", label_selector="").items == []
    with pytest.raises(ApiException) as err:
        batch.read_namespaced_job("official", "default")
    assert err.value.status == 404


def test_paging_with_limit_and_continue(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    for i in range(5):
        core.create_namespace({"metadata": {"name": f"paged-{i}", "labels": {"paged": "yes"}}})
    names: list[str] = []
    token = None
    while True:
        page = core.list_namespace(label_selector="paged=yes", limit=2, _continue=token)
        names += [n.metadata.name for n in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"paged-{i}" for i in range(5)]


def test_watch_streams_changes_after_a_version(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "watched"}})
    events = []
    for event in watch.Watch().stream(core.list_namespaced_config_map, "default",
                                      resource_version=start, timeout_seconds=1):
        events.append((event["type"], event["object"].metadata.name))
        if event["object"].metadata.name == "watched":
            break
    assert ("ADDED", "watched") in events


def test_watch_from_an_expired_version_raises_410(api: client.ApiClient, sim: SimThread) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "expiring"}})
    old = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "expiring-2"}})
    sim.call(lambda store: store.compact(CONFIGMAPS))
    with pytest.raises(ApiException) as err:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, "default",
                                      resource_version=old, timeout_seconds=1):
            pass
    assert err.value.status == 410


def test_custom_resources_through_the_custom_objects_api(api: client.ApiClient) -> None:
    client.ApiextensionsV1Api(api).create_custom_resource_definition(widget_crd())
    custom = client.CustomObjectsApi(api)
    created: dict[str, Any] = custom.create_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", widget("w1"))
    assert created["spec"]["size"] == 1  # the schema default
    custom.patch_namespaced_custom_object_status(
        "example.com", "v1", "default", "widgets", "w1", {"status": {"ready": True}})
    got = custom.get_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")
    assert got["status"] == {"ready": True}
    assert got["metadata"]["generation"] == 1
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object("example.com", "v1", "default", "widgets",
                                               widget("w2", size="big"))
    assert err.value.status == 422


def test_leases_and_events(api: client.ApiClient, tmp_path: Path) -> None:
    leases = client.CoordinationV1Api(api)
    leases.create_namespaced_lease("kube-system", {
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "a"}})
    lease = leases.read_namespaced_lease("leader", "kube-system")
    lease.spec.holder_identity = "b"
    assert leases.replace_namespaced_lease("leader", "kube-system", lease).spec.holder_identity \
        == "b"
    events = client.EventsV1Api(api)
    events.create_namespaced_event("default", {
        "metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reason": "Created", "action": "Create", "type": "Normal",
        "reportingController": "test", "reportingInstance": "test-1",
        "regarding": {"kind": "Job", "name": "x", "namespace": "default"}})
    assert [e.reason for e in events.list_namespaced_event("default").items] == ["Created"]


def test_pods_of_the_fake_job_controller_parse_as_the_clients_models(tmp_path: Path) -> None:
    with SimThread(job_controller=True) as server:
        api = config.new_client_from_config(config_file=str(server.kubeconfig(
            tmp_path / "kubeconfig")))
        client.BatchV1Api(api).create_namespaced_job("default", job("modelled"))
        core = client.CoreV1Api(api)
        pods: list[Any] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the fake Job controller runs on the server's loop
            pods = core.list_namespaced_pod("default", label_selector="job-name=modelled").items
            if pods and pods[0].status.phase == "Running":
                break
            time.sleep(0.02)
        assert pods and pods[0].status.phase == "Running"
        status = pods[0].status.container_statuses[0]
        assert (status.ready, status.restart_count) == (True, 0)
        assert status.image_id.startswith("busybox@sha256:")
