"""Serving a watch over HTTP: newline-delimited JSON events on a chunked response, bookmarks,
timeouts, tables, 410 Gone as an ERROR event, and what a hook asks for (drop, expire)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from jobset_infra.sim import list_options, tables
from jobset_infra.sim.errors import StatusError, gone
from jobset_infra.sim.hooks import ApiRequest, InterceptLike
from jobset_infra.sim.resources import GVR
from jobset_infra.sim.responses import JSON, dumps, flag, number
from jobset_infra.sim.store import Store
from jobset_infra.sim.watch import Watch

JsonObj = dict[str, Any]
Tabulate = Callable[[JsonObj], JsonObj]


async def serve_watch(
    request: web.Request,
    api: ApiRequest,
    store: Store,
    intercept: InterceptLike | None,
    bookmark_interval: float,
) -> web.StreamResponse:
    gvr, query = GVR(api.group, api.version, api.resource), request.query
    list_options.check(query, watch=True)
    send_initial = list_options.send_initial_events(query)
    bookmarks = flag(query, "allowWatchBookmarks")
    timeout = number(query, "timeoutSeconds")
    if intercept is not None and intercept.drop_after is not None:
        timeout = min(timeout or intercept.drop_after, intercept.drop_after)
    stream = None
    try:
        stream = store.watch(
            gvr, api.namespace, query.get("resourceVersion"),
            label_selector=query.get("labelSelector"), field_selector=query.get("fieldSelector"),
            send_initial_events=send_initial,
            bookmark_interval=bookmark_interval if bookmarks else None)
    except StatusError as error:
        if error.code != 410:
            raise
        expired = error
    response = web.StreamResponse(headers={"Content-Type": JSON})
    response.enable_chunked_encoding()
    await response.prepare(request)
    if stream is None:  # a real server answers an expired version with 200 and an ERROR event
        await _send(response, "ERROR", expired.status)
        return response
    if intercept is not None and intercept.expire:
        stream.fail(gone("too old resource version: injected (forced by a fault)"))
    tabulate = None
    if "as=Table" in request.headers.get("Accept", ""):
        tabulate = _tabulate(store, gvr, query.get("includeObject", "Metadata"))
    await _pump(response, stream, timeout, bookmarks, tabulate)
    return response


def _tabulate(store: Store, gvr: GVR, include: str) -> Tabulate:
    info = store.info(gvr)
    return lambda obj: tables.table(
        info, [obj], {"resourceVersion": obj["metadata"]["resourceVersion"]}, include)


async def _pump(response: web.StreamResponse, stream: Watch, timeout: float | None,
                bookmarks: bool, tabulate: Tabulate | None) -> None:
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            try:
                kind, obj = await asyncio.wait_for(anext(stream), remaining)
            except (StopAsyncIteration, TimeoutError):
                break
            if kind == "BOOKMARK" and not bookmarks:
                continue
            if tabulate is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
                obj = tabulate(obj)
            await _send(response, kind, obj)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        stream.close()
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()


async def _send(response: web.StreamResponse, kind: str, obj: JsonObj) -> None:
    await response.write(dumps({"type": kind, "object": obj}) + b"\n")
