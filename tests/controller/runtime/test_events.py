"""EventRecorder: events.k8s.io/v1 with a core/v1 fallback, series for repeats, spam limit."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import ObjectRef
from jobset_infra.controller.runtime.auth import for_url
from jobset_infra.controller.runtime.events import Event, EventRecorder
from jobset_infra.controller.runtime.kube import KubeClient

REF = ObjectRef(kind=c.KIND, api_version=c.API_VERSION, namespace="ns", name="js", uid="u1")


class EventsApi:
    def __init__(self, serves_events_group: bool) -> None:
        self.serves_events_group = serves_events_group
        self.seen: list[tuple[str, str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = json.loads(await request.text() or "null")
        self.seen.append((request.method, request.path, body))
        if request.path == "/apis/events.k8s.io/v1" and not self.serves_events_group:
            return web.json_response({"code": 404, "reason": "NotFound"}, status=404)
        return web.json_response(body or {"kind": "APIResourceList"}, status=201)


async def serve(api: EventsApi) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", api.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


@pytest.fixture(params=[True, False], ids=["events.k8s.io served", "core/v1 fallback"])
async def recorder(
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[EventRecorder, EventsApi]]:
    api = EventsApi(serves_events_group=request.param)
    runner, url = await serve(api)
    client = KubeClient(for_url(url))
    rec = EventRecorder(client, instance="test")
    sender = asyncio.create_task(rec.run())
    yield rec, api
    sender.cancel()
    await asyncio.gather(sender, return_exceptions=True)
    await client.close()
    await runner.cleanup()


async def test_first_event_is_created_and_a_repeat_becomes_a_series(recorder: Any) -> None:
    rec, api = recorder
    event = Event(REF, "Warning", c.FAILED_JOBS_REASON, "jobset failed")
    rec.emit(event)
    rec.emit(event)
    await asyncio.wait_for(rec.flush(), 5)
    writes = [(m, p, b) for m, p, b in api.seen if m != "GET"]
    assert [m for m, _, _ in writes] == ["POST", "PATCH"]
    created = writes[0][2]
    if api.serves_events_group:
        assert writes[0][1] == "/apis/events.k8s.io/v1/namespaces/ns/events"
        assert created["regarding"]["uid"] == "u1"
        assert created["action"] == c.RECONCILING_ACTION
        assert created["reportingController"] == c.JOBSET_EVENT_SOURCE
        assert writes[1][2]["series"]["count"] == 2
    else:
        assert writes[0][1] == "/api/v1/namespaces/ns/events"
        assert created["involvedObject"]["name"] == "js"
        assert created["message"] == "jobset failed"
        assert writes[1][2]["count"] == 2


async def test_one_object_cannot_flood_the_api_server(recorder: Any) -> None:
    rec, _ = recorder
    for i in range(30):
        rec.emit(Event(REF, "Normal", "Reason", f"message {i}"))
    await asyncio.wait_for(rec.flush(), 5)
    assert rec.sent == 25
    assert rec.dropped == 5
