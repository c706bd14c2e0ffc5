"""Watch streams: a bounded per-resource event history and the iterators clients consume.

Each resource type keeps the last `window` events. A watch that starts from a resourceVersion
older than the oldest retained event gets 410 Gone (reason Expired), exactly the signal a real API
server sends when its watch cache has moved on, and which informers answer with a relist. A watch
filtered by labels sees an object that stops matching as DELETED and one that starts matching as
ADDED, as Kubernetes' cacher does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobset_infra.sim.apiserver.errors import StatusError, too_old
from jobset_infra.sim.apiserver.selectors import Predicate

JsonObj = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@dataclass(frozen=True, slots=True)
class Event:
    """One stored change: type ADDED/MODIFIED/DELETED, the new object and, for updates, the old."""

    rv: int
    type: str
    obj: JsonObj
    old: JsonObj | None
    namespace: str


class EventLog:
    """The retained history of one resource type, and the watches subscribed to it."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.events: deque[Event] = deque()
        self.compacted_rv = 0
        self.watches: set[Watch] = set()

    def append(self, event: Event) -> None:
        self.events.append(event)
        while len(self.events) > self.window:
            self.compacted_rv = self.events.popleft().rv
        for watch in list(self.watches):
            watch.offer(event)

    def compact(self, up_to_rv: int) -> None:
        """Forget events up to and including `up_to_rv` (tests use this to force 410s)."""
        while self.events and self.events[0].rv <= up_to_rv:
            self.compacted_rv = self.events.popleft().rv
        self.compacted_rv = max(self.compacted_rv, up_to_rv)

    def since(self, rv: int) -> list[Event]:
        if rv < self.compacted_rv:
            oldest = self.events[0].rv if self.events else self.compacted_rv + 1
            raise too_old(rv, oldest)
        return [e for e in self.events if e.rv > rv]


def _bookmark(api_version: str, kind: str, rv: int, initial_end: bool = False) -> JsonObj:
    meta: JsonObj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


class Watch:
    """An async iterator of (type, object) for one client; `close()` ends it.

    Objects yielded are the store's snapshots: read-only, shared, never mutated after publication.
    """

    def __init__(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str | None,
        label: Predicate | None,
        field: Predicate | None,
        current_rv: Callable[[], int],
        bookmark_interval: float | None,
    ) -> None:
        self._api_version, self._kind = api_version, kind
        self._namespace, self._label, self._field = namespace, label, field
        self._current_rv = current_rv
        self._bookmark_interval = bookmark_interval
        self._queue: asyncio.Queue[tuple[str, JsonObj] | None] = asyncio.Queue()
        self._log: EventLog | None = None
        self._closed = False
        self._after = 0  # events at or below the version the watch started from are not sent
        self.last_rv = 0

    def _matches(self, obj: JsonObj | None) -> bool:
        if obj is None:
            return False
        if self._namespace is not None and obj["metadata"].get("namespace") != self._namespace:
            return False
        if self._label is not None and not self._label(obj):
            return False
        return self._field is None or self._field(obj)

    def offer(self, event: Event) -> None:
        """Translate a stored event into what this watch's filter makes of it."""
        if event.rv <= self._after:  # a watch from a version not reached yet waits for it
            return
        if self._namespace is not None and event.namespace != self._namespace:
            return
        now = self._matches(event.obj)
        if event.type != "MODIFIED":
            if now:
                self._queue.put_nowait((event.type, event.obj))
            return
        before = self._matches(event.old)
        if now:
            self._queue.put_nowait(("MODIFIED" if before else "ADDED", event.obj))
        elif before and event.old is not None:
            # like the watch cache: the object as it last matched, at the event's version
            left = dict(event.old)
            left["metadata"] = dict(event.old["metadata"]) | {"resourceVersion": str(event.rv)}
            self._queue.put_nowait(("DELETED", left))

    def start(
        self, log: EventLog, initial: list[JsonObj], replay: list[Event], initial_end: bool,
        after: int = 0,
    ) -> None:
        """Queue the initial state (synthetic ADDED) or the replayed history, then subscribe;
        only events newer than `after` (the version asked for, maybe one not reached yet)."""
        self._after = after
        for obj in initial:
            if self._matches(obj):
                self._queue.put_nowait(("ADDED", obj))
        if initial_end:
            rv = self._current_rv()
            self._queue.put_nowait(
                ("BOOKMARK", _bookmark(self._api_version, self._kind, rv, initial_end=True))
            )
        for event in replay:
            self.offer(event)
        self._log = log
        log.watches.add(self)

    def fail(self, error: StatusError) -> None:
        """End the stream with an ERROR event carrying `error`'s Status (e.g. a forced 410)."""
        self._queue.put_nowait(("ERROR", error.status))
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._log is not None:
            self._log.watches.discard(self)
        self._queue.put_nowait(None)

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> tuple[str, JsonObj]:
        try:
            if self._bookmark_interval is None or not self._queue.empty():
                # wait_for costs a Task and a timer even when an event is already queued
                item = await self._queue.get()
            else:
                item = await asyncio.wait_for(self._queue.get(), self._bookmark_interval)
        except TimeoutError:
            rv = self._current_rv()
            return "BOOKMARK", _bookmark(self._api_version, self._kind, rv)
        if item is None:
            raise StopAsyncIteration
        return self._seen(item)

    def take_ready(self) -> tuple[list[tuple[str, JsonObj]], bool]:
        """The events already queued, without waiting, and whether the stream ended after them
        (so a server can write a burst of events at once)."""
        items: list[tuple[str, JsonObj]] = []
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None:
                return items, True
            items.append(self._seen(item))
        return items, False

    def _seen(self, item: tuple[str, JsonObj]) -> tuple[str, JsonObj]:
        with contextlib.suppress(KeyError, ValueError):
            self.last_rv = int(item[1]["metadata"]["resourceVersion"])
        return item


class History:
    """The event logs of every resource type, and the watches opened on them."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.logs: dict[Any, EventLog] = {}

    def log(self, key: Any) -> EventLog:
        log = self.logs.get(key)
        if log is None:
            log = self.logs[key] = EventLog(self.window)
        return log

    def open(
        self, key: Any, stream: Watch, *, start: int | None, initial: list[JsonObj] | None,
        send_initial_events: bool,
    ) -> Watch:
        """Start `stream` with `initial` objects (synthetic ADDED, then the initial-events-end
        bookmark for a watch-list) or with the history after `start` (410 when too old)."""
        log = self.log(key)
        if initial is not None:
            stream.start(log, initial, [], initial_end=send_initial_events)
        else:
            stream.start(log, [], log.since(start or 0), initial_end=False, after=start or 0)
        return stream

    def watches(self, key: Any = None) -> list[Watch]:
        logs = [self.logs[key]] if key in self.logs else [] if key else list(self.logs.values())
        return [w for log in logs for w in log.watches]
