"""Informer over real HTTP against a scripted list/watch server: watch from the list's version,
bookmarks, relist on 410 with deletions synthesised, indexes and write-through."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from jobset_infra.controller.runtime.auth import for_url
from jobset_infra.controller.runtime.backoff import Backoff
from jobset_infra.controller.runtime.informer import Informer
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.resources import JOBS


def job(name: str, rv: int, owner: str = "a") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "resourceVersion": str(rv),
            "labels": {"owner": owner},
        }
    }


class ListWatchServer:
    """Lists come from `lists` (one per LIST); each WATCH streams the next script of events."""

    def __init__(self) -> None:
        self.lists: list[tuple[int, list[dict[str, Any]]]] = []
        self.watches: list[list[dict[str, Any]]] = []
        self.watch_versions: list[str] = []
        self.watch_params: list[dict[str, str]] = []
        self.idle = asyncio.Event()
        self.deny_list = False
        self.closing = asyncio.Event()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.deny_list:
            return web.json_response({"code": 403, "reason": "Forbidden"}, status=403)
        if request.query.get("watch") != "true":
            rv, items = self.lists.pop(0)
            return web.json_response({"metadata": {"resourceVersion": str(rv)}, "items": items})
        self.watch_versions.append(request.query["resourceVersion"])
        self.watch_params.append(dict(request.query))
        response = web.StreamResponse()
        await response.prepare(request)
        events = self.watches.pop(0) if self.watches else []
        for event in events:
            await response.write(json.dumps(event).encode() + b"\n")
        if not self.watches and not events:
            self.idle.set()
            # hold the last stream open, like a quiet API server, until the test ends
            await asyncio.wait_for(self.closing.wait(), 30)
        return response


@pytest.fixture
async def lw() -> AsyncIterator[tuple[ListWatchServer, str]]:
    server = ListWatchServer()
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield server, f"http://127.0.0.1:{runner.addresses[0][1]}"
    server.closing.set()
    await runner.cleanup()


async def run_until_idle(informer: Informer[Any], server: ListWatchServer) -> None:
    task = asyncio.create_task(informer.run())
    try:
        await asyncio.wait_for(server.idle.wait(), timeout=5)
        await asyncio.sleep(0.01)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_watch_resumes_from_list_and_bookmark_and_relists_on_410(lw: Any) -> None:
    server, url = lw
    server.lists = [(10, [job("j1", 5), job("j2", 6)]), (40, [job("j1", 35), job("j3", 36)])]
    server.watches = [
        [
            {"type": "ADDED", "object": job("j4", 11, owner="b")},
            {"type": "MODIFIED", "object": job("j1", 12)},
            {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}},
        ],
        [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}}],
        [],
    ]
    events: list[tuple[str, str]] = []
    async with KubeClient(for_url(url)) as kube:
        informer: Informer[dict[str, Any]] = Informer(
            kube,
            JOBS,
            dict,
            indexers={"owner": lambda o: [o["metadata"]["labels"]["owner"]]},
        )
        informer.add_handler(
            lambda kind, old, new: events.append((kind, (new or old)["metadata"]["name"]))
        )
        await run_until_idle(informer, server)
    assert server.watch_versions == ["10", "20", "40"], "watch from the list, then the bookmark"
    assert server.watch_params[0]["allowWatchBookmarks"] == "true"
    assert sorted(informer.store) == ["ns/j1", "ns/j3"]
    assert ("delete", "j2") in events and ("delete", "j4") in events, "relist synthesises deletes"
    assert ("add", "j3") in events
    assert sorted(o["metadata"]["name"] for o in informer.by_index("owner", "a")) == ["j1", "j3"]
    assert informer.by_index("owner", "b") == []
    assert informer.relists == 2


async def test_write_through_is_not_undone_by_an_older_event(lw: Any) -> None:
    server, url = lw
    server.lists = [(10, [job("j1", 5)])]
    server.watches = [[{"type": "MODIFIED", "object": job("j1", 7)}], []]
    async with KubeClient(for_url(url)) as kube:
        informer: Informer[dict[str, Any]] = Informer(kube, JOBS, dict)
        task = asyncio.create_task(informer.run())
        await asyncio.wait_for(informer.synced.wait(), 5)
        informer.write_through(job("j1", 9))
        await asyncio.wait_for(server.idle.wait(), 5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert informer.store["ns/j1"]["metadata"]["resourceVersion"] == "9"


class Sleeps:
    """An injected sleep: records each delay, returns at once, and runs `then` after `count`."""

    def __init__(self, count: int = 0, then: Any = None) -> None:
        self.delays: list[float] = []
        self.count = count
        self.then = then

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        if len(self.delays) == self.count and self.then is not None:
            self.then()
        await asyncio.sleep(0)


async def test_a_forbidden_list_is_retried_with_backoff_until_allowed(
    lw: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="jobset_infra.controller.runtime.informer")
    server, url = lw
    server.deny_list = True
    server.lists = [(10, [job("j1", 5)])]

    def allow() -> None:
        server.deny_list = False

    sleeps = Sleeps(count=6, then=allow)
    async with KubeClient(for_url(url)) as kube:
        informer: Informer[Any] = Informer(
            kube, JOBS, lambda o: o, sleep=sleeps,
            backoff=Backoff(clock=lambda: 0.0, rand=lambda: 0.0),
        )
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(server.idle.wait(), 5)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    assert sleeps.delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6], "backoff, not a fixed retry"
    assert informer.state().in_sync() and list(informer.store) == ["ns/j1"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "403" in warnings[0], "one line per state change, not per try"
    assert any("again after 6 failures" in r.getMessage() for r in caplog.records)


async def test_a_refused_cache_is_out_of_sync_and_says_why(lw: Any) -> None:
    server, url = lw
    server.deny_list = True
    sleeps = Sleeps()
    async with KubeClient(for_url(url)) as kube:
        informer: Informer[Any] = Informer(kube, JOBS, lambda o: o, sleep=sleeps)
        optional: Informer[Any] = Informer(kube, JOBS, lambda o: o, sleep=sleeps,
                                           required=False, degrades="x is off")
        tasks = [asyncio.create_task(i.run()) for i in (informer, optional)]
        try:
            await asyncio.wait_for(optional.settled.wait(), 5)
            while len(sleeps.delays) < 4:
                await asyncio.sleep(0.01)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    state = informer.state()
    assert not state.in_sync() and state.forbidden and "403" in state.error
    assert not informer.settled.is_set(), "a required cache refused holds start-up"
    assert optional.settled.is_set() and not optional.usable, "an optional one lets it go on"


async def test_a_failing_watch_puts_the_cache_out_of_sync_until_it_reopens(lw: Any) -> None:
    server, url = lw
    server.lists = [(10, [job("j1", 5)])]
    states: list[bool] = []

    async def sleep(delay: float) -> None:
        states.append(informer.state().in_sync())
        await asyncio.sleep(0)

    server.watches = [[{"type": "ERROR", "object": {"kind": "Status", "code": 500,
                                                     "reason": "InternalError"}}], []]
    async with KubeClient(for_url(url)) as kube:
        informer: Informer[Any] = Informer(kube, JOBS, lambda o: o, sleep=sleep)
        await run_until_idle(informer, server)
    assert states == [False], "out of sync while backing off after the watch failed"
    assert informer.state().in_sync(), "the re-opened watch ended the streak"
    assert server.watch_versions == ["10", "10"], "re-watched from the same version"


async def test_write_through_cannot_resurrect_a_deleted_object(lw: Any) -> None:
    server, url = lw
    server.lists = [(10, [job("j1", 5)])]
    server.watches = [[{"type": "DELETED", "object": job("j1", 12)}], []]
    async with KubeClient(for_url(url)) as kube:
        informer: Informer[dict[str, Any]] = Informer(kube, JOBS, dict)
        await run_until_idle(informer, server)
        informer.write_through(job("j1", 11))
    assert informer.store == {}


async def test_events_larger_than_aiohttps_line_limit_are_read(lw: Any) -> None:
    server, url = lw
    big = job("big", 11)
    big["metadata"]["annotations"] = {"blob": "x" * 300_000}
    server.lists = [(10, [])]
    server.watches = [[{"type": "ADDED", "object": big}], []]
    async with KubeClient(for_url(url)) as kube:
        informer: Informer[dict[str, Any]] = Informer(kube, JOBS, dict)
        await run_until_idle(informer, server)
    assert len(informer.store["ns/big"]["metadata"]["annotations"]["blob"]) == 300_000
