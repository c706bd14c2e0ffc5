"""fieldValidation for every verb, as the real kube-apiserver answers it (issue 16, findings 3
and 4): PATCH and server-side apply used to store misspelt fields' siblings silently."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yaml

from jobset_infra.sim.apiserver.server import Sim
from tests.conformance.servers import CRD_FILE

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with Sim() as sim, aiohttp.ClientSession(base_url=sim.url) as session:
        async with session.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                                json=yaml.safe_load(CRD_FILE.read_text())) as response:
            assert response.status == 201
        yield session


def jobset(name: str, jobs_key: str = "replicatedJobs") -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name},
            "spec": {"suspend": True, jobs_key: [{"name": "r", "template": {"spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox:1"}]}}}}}]}}


async def send(http: aiohttp.ClientSession, method: str, path: str, body: Any,
               content_type: str = "application/json") -> tuple[int, list[str], Any]:
    data = yaml.safe_dump(body) if content_type == APPLY else None
    async with http.request(method, path, json=None if data else body, data=data,
                            headers={"Content-Type": content_type}) as response:
        return response.status, response.headers.getall("Warning", []), await response.json()


@pytest.mark.parametrize(
    ("mode", "want_status", "want_warnings"),
    [
        pytest.param("Strict", 422, [], id="Strict refuses a merge patch with an unknown field"),
        pytest.param("Warn", 200, ['299 - "unknown field \\"bogus\\""'], id="Warn warns"),
        pytest.param("", 200, ['299 - "unknown field \\"bogus\\""'],
                     id="no parameter is Warn, as kubectl's default"),
        pytest.param("Ignore", 200, [], id="Ignore drops silently"),
    ],
)
async def test_a_patch_with_an_unknown_field(
    http: aiohttp.ClientSession, mode: str, want_status: int, want_warnings: list[str],
) -> None:
    await send(http, "POST", CONFIGMAPS, {"metadata": {"name": "cm"}, "data": {"a": "b"}})
    query = f"?fieldValidation={mode}" if mode else ""
    status, warnings, body = await send(http, "PATCH", f"{CONFIGMAPS}/cm{query}",
                                        {"bogus": 1, "data": {"c": "d"}}, MERGE)
    assert (status, warnings) == (want_status, want_warnings)
    if status == 422:
        assert body["details"]["causes"][0]["field"] == "patch"
        assert body["message"].endswith('strict decoding error: unknown field "bogus"')
    else:
        assert "bogus" not in body and body["data"] == {"a": "b", "c": "d"}


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore"])
async def test_server_side_apply_of_a_misspelt_field_is_refused_in_every_mode(
    http: aiohttp.ClientSession, mode: str,
) -> None:
    status, _, body = await send(
        http, "PATCH", f"{JOBSETS}/js?fieldManager=kubectl&fieldValidation={mode}",
        jobset("js", "replicatedJob"), APPLY)
    assert status == 500
    assert body["message"] == (
        "failed to create typed patch object (/js; jobset.x-k8s.io/v1alpha2, Kind=JobSet): "
        ".spec.replicatedJob: field not declared in schema")
    async with http.get(f"{JOBSETS}/js") as response:
        assert response.status == 404  # nothing stored


async def test_client_side_apply_of_a_misspelt_field_names_the_unknown_field(
    http: aiohttp.ClientSession,
) -> None:
    await send(http, "POST", JOBSETS, jobset("js"))
    status, _, body = await send(http, "PATCH", f"{JOBSETS}/js?fieldValidation=Strict",
                                 {"spec": {"replicatedJob": []}}, MERGE)
    assert status == 422
    assert 'unknown field "spec.replicatedJob"' in body["message"]
    assert "cannot be added, removed" not in body["message"]


async def test_an_unknown_field_validation_mode_is_422(http: aiohttp.ClientSession) -> None:
    status, _, body = await send(http, "POST", f"{CONFIGMAPS}?fieldValidation=Loud",
                                 {"metadata": {"name": "x"}})
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"].startswith('CreateOptions.meta.k8s.io "" is invalid: fieldValidation')
