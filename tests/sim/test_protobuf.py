"""Protobuf bodies of built-in kinds, as client-go's typed clients (Events, controller-runtime's
built-in kinds) send them: decoded to the JSON a real server stores, and answered in protobuf
when the client lists it first."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from jobset_infra.sim.apiserver import protobuf
from jobset_infra.sim.apiserver.server import Sim

PROTOBUF = "application/vnd.kubernetes.protobuf"
JOBS = "/apis/batch/v1/namespaces/default/jobs"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with Sim() as sim, aiohttp.ClientSession(base_url=sim.url) as session:
        yield session


async def send(http: aiohttp.ClientSession, method: str, path: str, obj: Any,
               accept: str = "application/json") -> tuple[int, str, bytes]:
    async with http.request(method, path, data=protobuf.encode(obj), headers={
            "Content-Type": PROTOBUF, "Accept": accept}) as response:
        return response.status, response.headers["Content-Type"], await response.read()


def a_job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pb", "labels": {
        "app": "x"}}, "spec": {**spec, "template": {"metadata": {}, "spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1",
                                                      "ports": [{"containerPort": 80}]}]}}}}


async def test_a_protobuf_event_is_stored(http: aiohttp.ClientSession) -> None:
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": "e1", "namespace": "default"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
             "reason": "Started", "message": "started", "type": "Normal", "count": 1,
             "firstTimestamp": "2025-01-02T03:04:05Z", "source": {"component": "kueue"}}
    status, _, _ = await send(http, "POST", "/api/v1/namespaces/default/events", event)
    async with http.get("/api/v1/namespaces/default/events/e1") as response:
        stored = await response.json()
    assert status == 201
    assert (stored["reason"], stored["count"], stored["firstTimestamp"]) == (
        "Started", 1, "2025-01-02T03:04:05Z")


async def test_pointer_fields_keep_their_zero_values_and_value_fields_drop_them(
    http: aiohttp.ClientSession,
) -> None:
    status, _, body = await send(http, "POST", JOBS, a_job(parallelism=0, suspend=False),
                                 accept=PROTOBUF)
    job = protobuf.decode(body)
    assert status == 201
    assert (job["spec"]["parallelism"], job["spec"]["suspend"]) == (0, False)
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert "workingDir" not in container  # "" in protobuf, omitted in JSON


async def test_the_answer_is_protobuf_when_the_client_lists_it_first(
    http: aiohttp.ClientSession,
) -> None:
    await send(http, "POST", JOBS, a_job())
    async with http.get(f"{JOBS}/pb", headers={"Accept": f"{PROTOBUF}, application/json"}) as r:
        assert r.headers["Content-Type"] == PROTOBUF
        job = protobuf.decode(await r.read())
    async with http.get(f"{JOBS}/pb", headers={"Accept": f"application/json, {PROTOBUF}"}) as r:
        assert r.headers["Content-Type"] == "application/json"
        assert await r.json() == job


async def test_errors_are_protobuf_statuses_too(http: aiohttp.ClientSession) -> None:
    async with http.get(f"{JOBS}/missing", headers={"Accept": PROTOBUF}) as response:
        status = protobuf.decode(await response.read())
    assert (response.status, status["kind"], status["reason"]) == (404, "Status", "NotFound")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        pytest.param(b"k8s\x00\xff\xff", "the object provided is unrecognized (must be of type "
                     "Job)", id="garbage after the magic"),
        pytest.param(b"{}", "the object provided is unrecognized", id="no magic"),
    ],
)
async def test_an_undecodable_body_is_400_naming_the_kind(
    http: aiohttp.ClientSession, body: bytes, words: str,
) -> None:
    async with http.post(JOBS, data=body, headers={"Content-Type": PROTOBUF}) as response:
        status = await response.json()
    assert (response.status, status["reason"]) == (400, "BadRequest")
    assert words in status["message"]


async def test_a_body_of_another_kind_is_400(http: aiohttp.ClientSession) -> None:
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    status, _, body = await send(http, "POST", JOBS, configmap)
    assert status == 400
    assert b'ConfigMap in version \\"v1\\" cannot be handled as a Job' in body
