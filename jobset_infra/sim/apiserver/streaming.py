"""Serving a watch over HTTP: newline-delimited JSON events on a chunked response, bookmarks,
timeouts, tables, 410 Gone as an ERROR event, and what a hook asks for (drop, expire)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from aiohttp import web

from jobset_infra.sim.apiserver import list_options, tables
from jobset_infra.sim.apiserver.errors import StatusError, gone
from jobset_infra.sim.apiserver.hooks import ApiRequest, InterceptLike
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.responses import JSON, dumps, flag, number
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.apiserver.watch import Watch

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
    try:
        if timeout is not None and timeout <= 0:
            return
        # one deadline for the whole watch (not a wait_for, i.e. a Task and a timer, per event)
        async with asyncio.timeout(timeout):
            while True:
                try:
                    first = await anext(stream)
                except StopAsyncIteration:
                    break
                # what queued meanwhile goes out in the same write (one send, not one per event)
                ready, ended = stream.take_ready()
                data = b"".join(_line(kind, obj, bookmarks, tabulate)
                                for kind, obj in (first, *ready))
                if data:
                    await response.write(data)
                if ended:
                    break
    except (ConnectionResetError, asyncio.CancelledError, TimeoutError):
        pass
    finally:
        stream.close()
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()


def _line(kind: str, obj: JsonObj, bookmarks: bool, tabulate: Tabulate | None) -> bytes:
    """One event as a line of the stream (nothing for a bookmark the client did not ask for)."""
    if kind == "BOOKMARK" and not bookmarks:
        return b""
    if tabulate is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
        obj = tabulate(obj)
    return dumps({"type": kind, "object": obj}) + b"\n"


async def _send(response: web.StreamResponse, kind: str, obj: JsonObj) -> None:
    await response.write(dumps({"type": kind, "object": obj}) + b"\n")
