"""Watches over HTTP: watch-lists, label filters, hooks that drop or expire streams."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from jobset_infra.sim.apiserver.hooks import ApiRequest, Intercept
from jobset_infra.sim.apiserver.server import Sim
from tests.sim.kube_objects import configmap

CM_URL = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    async with Sim(bookmark_interval=0.05) as server:
        yield server


@pytest.fixture
async def http(sim: Sim) -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(base_url=sim.url) as session:
        yield session


async def events(http: aiohttp.ClientSession, url: str, until: str) -> list[dict[str, Any]]:
    """Read watch events until one of type `until` (or the stream ends)."""
    out: list[dict[str, Any]] = []
    async with http.get(url, timeout=aiohttp.ClientTimeout(total=5)) as stream:
        assert stream.headers["Content-Type"] == "application/json"
        async for line in stream.content:
            out.append(json.loads(line))
            if out[-1]["type"] == until:
                break
    return out


async def test_watch_list_sends_the_state_then_the_initial_events_end_bookmark(
    http: aiohttp.ClientSession,
) -> None:
    for name in ("a", "b"):
        await http.post(CM_URL, json=configmap(name))
    got = await events(http, f"{CM_URL}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
                             "&resourceVersionMatch=NotOlderThan", until="BOOKMARK")
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in got] == [
        ("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None)]
    assert got[-1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert all(e["object"]["kind"] == "ConfigMap" for e in got)


async def test_watch_list_without_bookmarks_sends_the_state_but_no_bookmark(
    sim: Sim, http: aiohttp.ClientSession,
) -> None:
    await http.post(CM_URL, json=configmap("a"))
    got = await events(http, f"{CM_URL}?watch=1&sendInitialEvents=true"
                             "&resourceVersionMatch=NotOlderThan&timeoutSeconds=0.3", until="")
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in got] == [("ADDED", "a")]


async def test_send_initial_events_false_starts_at_the_most_recent_version(
    http: aiohttp.ClientSession,
) -> None:
    await http.post(CM_URL, json=configmap("before"))
    url = (f"{CM_URL}?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
           "&timeoutSeconds=0.3")
    async with http.get(url) as stream:
        await http.post(CM_URL, json=configmap("after"))
        got = [json.loads(line) async for line in stream.content]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in got] == [("ADDED", "after")]


async def test_label_selected_watch_over_http(sim: Sim, http: aiohttp.ClientSession) -> None:
    rv = sim.store.resource_version
    await http.post(CM_URL, json=configmap("plain"))
    labelled = configmap("labelled")
    labelled["metadata"]["labels"] = {"app": "x"}
    await http.post(CM_URL, json=labelled)
    got = await events(http, f"{CM_URL}?watch=1&resourceVersion={rv}&labelSelector=app%3Dx",
                       until="ADDED")
    assert [e["object"]["metadata"].get("name") for e in got] == ["labelled"], got


async def test_timeout_seconds_ends_the_stream(http: aiohttp.ClientSession) -> None:
    got = await events(http, f"{CM_URL}?watch=1&timeoutSeconds=0.1", until="never")
    assert got == []


@pytest.mark.parametrize(
    ("intercept", "want_types"),
    [
        pytest.param(Intercept(drop_after=0.05), [], id="a dropped watch just ends"),
        pytest.param(Intercept(expire=True), ["ERROR"], id="an expired watch gets a 410 event"),
    ],
)
async def test_hooks_drop_or_expire_watches(
    sim: Sim, http: aiohttp.ClientSession, intercept: Intercept, want_types: list[str]
) -> None:
    def on_watch(request: ApiRequest) -> Intercept | None:
        return intercept if request.verb == "watch" else None

    sim.add_hook(on_watch)
    rv = sim.store.resource_version
    got = await events(http, f"{CM_URL}?watch=1&resourceVersion={rv}", until="ERROR")
    assert [e["type"] for e in got] == want_types
    if want_types:
        assert got[0]["object"]["code"] == 410
    assert not sim.store.watches()
