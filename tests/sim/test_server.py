"""The HTTP surface of the simulated API server, driven with a plain aiohttp client."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from jobset_infra.sim.apiserver.errors import too_many_requests
from jobset_infra.sim.apiserver.hooks import ApiRequest, Intercept
from jobset_infra.sim.apiserver.server import Sim, SimThread
from tests.sim.kube_objects import configmap, job, widget, widget_crd

JOBS_URL = "/apis/batch/v1/namespaces/default/jobs"
CM_URL = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    async with Sim(bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
async def http(sim: Sim) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=sim.url) as session:
        yield session


async def call(http: aiohttp.ClientSession, method: str, path: str, body: Any = None,
               content_type: str = "application/json", **headers: str) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body)
    async with http.request(method, path, data=data,
                            headers={"Content-Type": content_type, **headers}) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        return response.status, await response.json()


@pytest.mark.parametrize(
    ("path", "want_status", "want_kind"),
    [
        pytest.param("/api", 200, "APIVersions", id="core versions"),
        pytest.param("/apis", 200, "APIGroupList", id="group list"),
        pytest.param("/apis/batch", 200, "APIGroup", id="one group"),
        pytest.param("/apis/batch/v1", 200, "APIResourceList", id="group version resources"),
        pytest.param("/apis/coordination.k8s.io/v1", 200, "APIResourceList", id="leases"),
        pytest.param("/apis/events.k8s.io/v1", 200, "APIResourceList", id="events"),
        pytest.param("/apis/no.such.group", 404, "Status", id="an unknown group is 404"),
        pytest.param("/apis/batch/v9", 404, "Status", id="an unknown version is 404"),
    ],
)
async def test_discovery(http: aiohttp.ClientSession, path: str, want_status: int,
                         want_kind: str) -> None:
    status, body = await call(http, "GET", path)
    assert (status, body["kind"]) == (want_status, want_kind)


async def test_resource_list_names_jobs_with_status_subresource(
    http: aiohttp.ClientSession,
) -> None:
    _, body = await call(http, "GET", "/apis/batch/v1")
    names = {r["name"]: r for r in body["resources"]}
    assert names["jobs"]["kind"] == "Job" and names["jobs"]["namespaced"] is True
    assert "watch" in names["jobs"]["verbs"]
    assert "jobs/status" in names


async def test_crud_status_codes_and_bodies(http: aiohttp.ClientSession) -> None:
    status, created = await call(http, "POST", JOBS_URL, job("a"))
    assert status == 201 and created["kind"] == "Job"
    status, again = await call(http, "POST", JOBS_URL, job("a"))
    assert (status, again["reason"]) == (409, "AlreadyExists")
    status, got = await call(http, "GET", f"{JOBS_URL}/a")
    assert status == 200 and got["metadata"]["uid"] == created["metadata"]["uid"]
    got["metadata"]["labels"] = {"x": "y"}
    status, updated = await call(http, "PUT", f"{JOBS_URL}/a", got)
    assert status == 200 and updated["metadata"]["labels"] == {"x": "y"}
    status, conflict = await call(http, "PUT", f"{JOBS_URL}/a", got)
    assert (status, conflict["reason"]) == (409, "Conflict")
    status, listed = await call(http, "GET", f"{JOBS_URL}?labelSelector=x%3Dy")
    assert (status, listed["kind"], len(listed["items"])) == (200, "JobList", 1)
    status, patched = await call(http, "PATCH", f"{JOBS_URL}/a/status", {"status": {"active": 1}},
                                 "application/merge-patch+json")
    assert status == 200 and patched["status"] == {"active": 1}
    status, deleted = await call(http, "DELETE", f"{JOBS_URL}/a",
                                 {"propagationPolicy": "Background"})
    assert (status, deleted["status"]) == (200, "Success")
    status, missing = await call(http, "GET", f"{JOBS_URL}/a")
    assert (status, missing["reason"], missing["message"]) == (
        404, "NotFound", 'jobs.batch "a" not found')


async def test_a_client_accepting_anything_after_protobuf_gets_json(
    http: aiohttp.ClientSession,
) -> None:
    async with http.get(f"{CM_URL}?limit=1", headers={
            "Accept": "application/vnd.kubernetes.protobuf;q=1, */*;q=0.5"}) as response:
        assert response.headers["Content-Type"].startswith("application/json")
        assert (await response.json())["kind"] == "ConfigMapList"
    async with http.get(CM_URL, headers={
            "Accept": "application/vnd.kubernetes.protobuf"}) as response:
        assert response.status == 406  # the sim has no protobuf encoder (docs/sim.md)


async def test_objects_created_without_type_fields_come_back_with_them_first(
    http: aiohttp.ClientSession,
) -> None:
    status, created = await call(http, "POST", CM_URL, {"metadata": {"name": "bare"}})
    assert status == 201 and list(created)[:2] == ["apiVersion", "kind"]
    assert (created["apiVersion"], created["kind"]) == ("v1", "ConfigMap")


async def test_watch_streams_events_and_bookmarks(sim: Sim, http: aiohttp.ClientSession) -> None:
    await call(http, "POST", CM_URL, configmap("before"))
    rv = sim.store.resource_version
    url = f"{CM_URL}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true"
    async with http.get(url) as stream:
        await call(http, "POST", CM_URL, configmap("after"))
        events = []
        async for line in stream.content:
            events.append(json.loads(line))
            if events[-1]["type"] == "BOOKMARK":
                break
    assert [(e["type"], e["object"]["kind"]) for e in events] == [
        ("ADDED", "ConfigMap"), ("BOOKMARK", "ConfigMap")]
    assert events[0]["object"]["apiVersion"] == "v1"


async def test_watch_from_an_expired_version_sends_a_410_error_event(
    sim: Sim, http: aiohttp.ClientSession
) -> None:
    await call(http, "POST", CM_URL, configmap("a"))
    old = sim.store.resource_version
    await call(http, "POST", CM_URL, configmap("b"))
    sim.store.compact()
    async with http.get(f"{CM_URL}?watch=1&resourceVersion={old}") as stream:
        line = await stream.content.readline()
    event = json.loads(line)
    assert event["type"] == "ERROR"
    assert (event["object"]["code"], event["object"]["reason"]) == (410, "Expired")


@pytest.mark.parametrize(
    ("query", "want_causes"),
    [
        pytest.param("watch=1&sendInitialEvents=true",
                     [("resourceVersionMatch", "Forbidden: sendInitialEvents requires setting "
                                               "resourceVersionMatch to NotOlderThan")],
                     id="a watch-list needs resourceVersionMatch=NotOlderThan"),
        pytest.param("watch=1&resourceVersionMatch=NotOlderThan",
                     [("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden "
                                               "for watch unless sendInitialEvents is provided")],
                     id="a plain watch may not set resourceVersionMatch"),
        pytest.param("watch=1&sendInitialEvents=true&resourceVersionMatch=Exact",
                     [("resourceVersionMatch", "Forbidden: sendInitialEvents requires setting "
                                               "resourceVersionMatch to NotOlderThan"),
                      ("resourceVersionMatch",
                       'Unsupported value: "Exact": supported values: "NotOlderThan"')],
                     id="a watch supports only NotOlderThan"),
        pytest.param("sendInitialEvents=true",
                     [("sendInitialEvents",
                       "Forbidden: sendInitialEvents is forbidden for list")],
                     id="a list may not ask for initial events"),
        pytest.param("resourceVersionMatch=NotOlderThan",
                     [("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden "
                                               "unless resourceVersion is provided")],
                     id="a list match needs a resourceVersion"),
    ],
)
async def test_list_options_the_api_server_refuses_are_422_with_a_cause_per_field(
    http: aiohttp.ClientSession, query: str, want_causes: list[tuple[str, str]],
) -> None:
    status, body = await call(http, "GET", f"{CM_URL}?{query}")
    assert (status, body["reason"], body["details"]["kind"]) == (422, "Invalid", "ListOptions")
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == want_causes


async def test_a_hook_can_answer_instead_of_the_server(
    sim: Sim, http: aiohttp.ClientSession
) -> None:
    seen: list[ApiRequest] = []

    def throttle_creates(request: ApiRequest) -> Intercept | None:
        seen.append(request)
        return Intercept(error=too_many_requests(2)) if request.verb == "create" else None

    sim.add_hook(throttle_creates)
    async with http.post(CM_URL, json=configmap("c")) as response:
        assert response.status == 429
        assert response.headers["Retry-After"] == "2"
    assert seen[-1] == ApiRequest("create", "", "v1", "configmaps", "default", None, None,
                                  "POST", CM_URL)


async def test_stats_count_requests_and_writes(sim: Sim, http: aiohttp.ClientSession) -> None:
    sim.stats.reset()
    await call(http, "POST", CM_URL, configmap("c"))
    await call(http, "GET", f"{CM_URL}/c")
    await call(http, "PATCH", f"{CM_URL}/c", {"data": {"a": "b"}}, "application/merge-patch+json")
    assert sim.stats.writes == 2
    assert sim.stats.count("get", "configmaps") == 1
    sim.stats.reset()
    assert sim.stats.writes == 0


async def test_a_crd_is_served_with_printer_columns(http: aiohttp.ClientSession) -> None:
    status, _ = await call(http, "POST",
                           "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           widget_crd())
    assert status == 201
    status, _ = await call(http, "POST", "/apis/example.com/v1/namespaces/default/widgets",
                           widget("w", size=3))
    assert status == 201
    status, table = await call(http, "GET", "/apis/example.com/v1/namespaces/default/widgets",
                               Accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert status == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Ready"]
    assert table["rows"][0]["cells"] == ["w", 3, None]


async def test_bearer_token_is_required_when_configured(tmp_path: Path) -> None:
    async with Sim(token="s3cret") as sim, aiohttp.ClientSession(base_url=sim.url) as http:
        async with http.get("/api") as response:
            assert response.status == 401
        async with http.get("/api", headers={"Authorization": "Bearer s3cret"}) as response:
            assert response.status == 200
        config = yaml.safe_load(sim.kubeconfig(tmp_path / "kc").read_text())
        assert config["users"][0]["user"] == {"token": "s3cret"}
        assert config["clusters"][0]["cluster"]["server"] == sim.url


def test_sim_thread_serves_synchronous_callers(tmp_path: Path) -> None:
    import urllib.request

    with SimThread() as sim:
        with urllib.request.urlopen(f"{sim.url}/api/v1/namespaces", timeout=5) as response:
            names = [n["metadata"]["name"] for n in json.load(response)["items"]]
        assert "default" in names
        assert sim.call(lambda store: store.resource_version) > 0


@pytest.mark.parametrize(
    ("mode", "want_status", "want_warning"),
    [
        pytest.param("Strict", 400, None, id="strict validation refuses unknown fields"),
        pytest.param("Warn", 201, '299 - "unknown field \\"spec.colour\\""',
                     id="warn validation prunes and warns"),
        pytest.param("Ignore", 201, None, id="ignore validation prunes silently"),
    ],
)
async def test_field_validation_of_custom_resources(
    http: aiohttp.ClientSession, mode: str, want_status: int, want_warning: str | None
) -> None:
    await call(http, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
               widget_crd())
    body = widget("w", colour="red")
    async with http.post(f"/apis/example.com/v1/namespaces/default/widgets?fieldValidation={mode}",
                         json=body) as response:
        assert response.status == want_status
        assert response.headers.get("Warning") == want_warning
        created = await response.json()
    if want_status == 400:
        assert created["message"] == ('Widget in version "v1" cannot be handled as a Widget: '
                                      'strict decoding error: unknown field "spec.colour"')
    else:
        assert "colour" not in created["spec"]


async def test_the_sim_collects_dependents_of_missing_owners(
    sim: Sim, http: aiohttp.ClientSession
) -> None:
    ghost = {"apiVersion": "batch/v1", "kind": "Job",
             "metadata": {"name": "ghost", "uid": "no-such-uid"}}
    await call(http, "POST", CM_URL, configmap("dangling", owner=ghost))
    for _ in range(100):
        status, _ = await call(http, "GET", f"{CM_URL}/dangling")
        if status == 404:
            break
        await asyncio.sleep(0.02)
    assert status == 404


async def test_aggregated_discovery_lists_every_group_in_one_document(
    http: aiohttp.ClientSession,
) -> None:
    accept = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json")
    async with http.get("/apis", headers={"Accept": accept}) as response:
        assert response.headers["Content-Type"].endswith("as=APIGroupDiscoveryList")
        body = await response.json()
    assert body["kind"] == "APIGroupDiscoveryList"
    batch = next(g for g in body["items"] if g["metadata"]["name"] == "batch")
    jobs = next(r for r in batch["versions"][0]["resources"] if r["resource"] == "jobs")
    assert jobs["scope"] == "Namespaced"
    assert jobs["subresources"][0]["subresource"] == "status"
    async with http.get("/api", headers={"Accept": accept}) as response:
        core = await response.json()
    assert [g["metadata"]["name"] for g in core["items"]] == [""]


async def test_deletecollection_deletes_what_the_selector_picks(
    sim: Sim, http: aiohttp.ClientSession
) -> None:
    for name, app in (("a", "x"), ("b", "x"), ("c", "y")):
        body = configmap(name)
        body["metadata"]["labels"] = {"app": app}
        await call(http, "POST", CM_URL, body)
    status, gone = await call(http, "DELETE", f"{CM_URL}?labelSelector=app%3Dx")
    assert (status, gone["kind"]) == (200, "ConfigMapList")
    _, left = await call(http, "GET", CM_URL)
    assert [i["metadata"]["name"] for i in left["items"]] == ["c"]


async def test_delete_of_an_object_held_by_a_finalizer_answers_with_the_object(
    http: aiohttp.ClientSession,
) -> None:
    """200 with the object as marked (202 only when the client sent orphanDependents=false)."""
    body = configmap("held")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await call(http, "POST", CM_URL, body)
    status, obj = await call(http, "DELETE", f"{CM_URL}/held")
    assert status == 200
    assert obj["metadata"]["deletionTimestamp"]
    body["metadata"]["name"] = "held-too"
    await call(http, "POST", CM_URL, body)
    status, obj = await call(http, "DELETE", f"{CM_URL}/held-too",
                             {"kind": "DeleteOptions", "orphanDependents": False})
    assert status == 202


async def test_binding_assigns_a_pod_to_a_node_once(http: aiohttp.ClientSession) -> None:
    pods = "/api/v1/namespaces/default/pods"
    await call(http, "POST", pods, {"metadata": {"name": "p"},
                                    "spec": {"containers": [{"name": "c", "image": "i:1"}]}})
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    status, _ = await call(http, "POST", f"{pods}/p/binding", binding)
    assert status == 201
    _, bound = await call(http, "GET", f"{pods}/p")
    assert bound["spec"]["nodeName"] == "node-1"
    status, again = await call(http, "POST", f"{pods}/p/binding", binding)
    assert (status, again["reason"]) == (409, "Conflict")


async def test_openapi_v3_tells_kubectl_that_field_validation_is_supported(
    http: aiohttp.ClientSession,
) -> None:
    _, index = await call(http, "GET", "/openapi/v3")
    url = index["paths"]["apis/batch/v1"]["serverRelativeURL"]
    _, doc = await call(http, "GET", url)
    patch_op = doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"]
    assert patch_op["x-kubernetes-group-version-kind"] == {
        "group": "batch", "version": "v1", "kind": "Job"}
    assert "fieldValidation" in [p["name"] for p in patch_op["parameters"]]
    assert "io.k8s.api.batch.v1.Job" in doc["components"]["schemas"]


async def test_components_start_with_the_server_and_stop_before_it() -> None:
    calls: list[str] = []

    class Recorder:
        async def start(self) -> None:
            calls.append("start")

        async def stop(self) -> None:
            calls.append("stop")

    sim = Sim(garbage_collector=False)
    sim.add_component(Recorder())
    async with sim:
        assert calls == ["start"]
    assert calls == ["start", "stop"]


async def test_the_fake_job_controller_can_run_with_the_server() -> None:
    async with Sim(job_controller=True) as sim, \
            aiohttp.ClientSession(base_url=sim.url) as http:
        await call(http, "POST", JOBS_URL, job("runs"))
        pods: list[Any] = []
        for _ in range(100):
            _, listed = await call(http, "GET", "/api/v1/namespaces/default/pods")
            pods = listed["items"]
            if pods:
                break
            await asyncio.sleep(0.02)
        assert pods and pods[0]["metadata"]["ownerReferences"][0]["name"] == "runs"


@pytest.mark.parametrize(
    ("path", "body", "want_columns", "want_cells"),
    [
        pytest.param("/api/v1/namespaces/default/services",
                     {"metadata": {"name": "svc"},
                      "spec": {"clusterIP": "None", "ports": [{"port": 80}]}},
                     ["Name", "Type", "Cluster-IP", "Port(s)", "Age"],
                     ["svc", "ClusterIP", "None", "80/TCP"], id="services"),
        pytest.param("/apis/events.k8s.io/v1/namespaces/default/events",
                     {"metadata": {"name": "e"}, "type": "Warning", "reason": "Failed",
                      "note": "boom", "regarding": {"kind": "Job", "name": "j"}},
                     ["Name", "Type", "Reason", "Object", "Message"],
                     ["e", "Warning", "Failed", "job/j", "boom"], id="events"),
    ],
)
async def test_tables_of_builtin_kinds(
    http: aiohttp.ClientSession, path: str, body: dict[str, Any], want_columns: list[str],
    want_cells: list[str],
) -> None:
    await call(http, "POST", path, body)
    _, table = await call(http, "GET", path, Accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert [c["name"] for c in table["columnDefinitions"]] == want_columns
    assert table["rows"][0]["cells"][:len(want_cells)] == want_cells


async def test_stats_name_subresources(sim: Sim, http: aiohttp.ClientSession) -> None:
    await call(http, "POST", JOBS_URL, job("s"))
    await call(http, "PATCH", f"{JOBS_URL}/s/status", {"status": {"active": 1}},
               "application/merge-patch+json")
    assert sim.stats.count("patch", "jobs/status") == 1
    assert sim.stats.count("patch", "jobs") == 0


@pytest.mark.parametrize(
    ("mode", "want_status", "want_warning"),
    [
        pytest.param("Strict", 400, None, id="strict validation refuses a built-in typo"),
        pytest.param("Warn", 201, '299 - "unknown field \\"spec.completion\\""',
                     id="warn validation drops a built-in typo with a warning"),
        pytest.param("Ignore", 201, None, id="ignore validation drops a built-in typo"),
    ],
)
async def test_field_validation_of_builtin_kinds(
    http: aiohttp.ClientSession, mode: str, want_status: int, want_warning: str | None
) -> None:
    body = job("typo")
    body["spec"]["completion"] = 3
    async with http.post(f"{JOBS_URL}?fieldValidation={mode}", json=body) as response:
        assert response.status == want_status
        assert response.headers.get("Warning") == want_warning
        created = await response.json()
    if want_status == 400:
        assert created["message"] == ('Job in version "v1" cannot be handled as a Job: '
                                      'strict decoding error: unknown field "spec.completion"')
    else:
        assert "completion" not in created["spec"]


async def test_latency_is_added_to_every_request() -> None:
    async with Sim(latency=0.05) as sim, aiohttp.ClientSession(base_url=sim.url) as http:
        began = asyncio.get_running_loop().time()
        await call(http, "GET", "/api/v1/namespaces")
        assert asyncio.get_running_loop().time() - began >= 0.05


@pytest.mark.parametrize("path", [
    pytest.param("/apis/example.com/v1/namespaces/default/widgets", id="a custom resource"),
    pytest.param(CM_URL, id="a built-in kind"),
])
async def test_a_protobuf_body_is_refused_with_415(http: aiohttp.ClientSession, path: str) -> None:
    await call(http, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
               widget_crd())
    async with http.post(path, data=b"k8s\x00\x0a\x0f",
                         headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
                         ) as response:
        body = await response.json()
    assert (response.status, body["reason"]) == (415, "UnsupportedMediaType")
    assert body["message"].endswith("accepted media types include: application/json, "
                                    "application/yaml, application/vnd.kubernetes.protobuf")


def test_the_token_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import hmac

    from jobset_infra.sim.apiserver import tokens

    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def recording(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(tokens.hmac, "compare_digest", recording)
    with SimThread(token="s3cret") as sim:
        import urllib.error
        import urllib.request

        request = urllib.request.Request(sim.url + "/version",
                                         headers={"Authorization": "Bearer guess"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=5)
        assert refused.value.code == 401
    assert compared == [(b"guess", b"s3cret")]
