"""An event recorder: events.k8s.io/v1 Events (core/v1 when that group is not served).

Like client-go's recorder, emitting never blocks the reconcile: events go to a queue that a
background task sends. Repeats of the same event on the same object within 10 minutes become a
`series` PATCH instead of a new object, and each object gets a token bucket (burst 25, one more
per 5 minutes) so a hot loop cannot flood the API server with events.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import ObjectRef
from jobset_infra.controller.runtime.kube import MERGE_PATCH, ApiError, KubeClient, NotFoundError
from jobset_infra.controller.runtime.ratelimit import Clock, TokenBucket
from jobset_infra.controller.runtime.resources import CORE_EVENTS, EVENTS

log = logging.getLogger(__name__)

SERIES_WINDOW = 600.0  # client-go aggregates identical events seen within 10 minutes
SPAM_BURST = 25
SPAM_REFILL = 1.0 / 300.0


@dataclass(frozen=True)
class Event:
    regarding: ObjectRef
    type: str
    reason: str
    note: str
    action: str = c.RECONCILING_ACTION


@dataclass
class _Seen:
    name: str
    namespace: str
    count: int
    last: float


def micro_time(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        controller: str = c.JOBSET_EVENT_SOURCE,
        instance: str | None = None,
        clock: Clock = time.monotonic,
        wall: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.client = client
        self.controller = controller
        self.instance = instance or f"{controller}-{os.environ.get('HOSTNAME', 'local')}"
        self._clock = clock
        self._wall = wall
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._seen: dict[tuple[str, str, str, str], _Seen] = {}
        self._buckets: dict[str, TokenBucket] = {}
        self._use_core: bool | None = None
        self.sent = 0
        self.dropped = 0

    def emit(self, event: Event) -> None:
        """Queue an event; never blocks, never raises."""
        self._queue.put_nowait(event)

    async def run(self) -> None:
        """Send queued events until cancelled."""
        while True:
            event = await self._queue.get()
            try:
                await self._send(event)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # events are best effort, as in client-go
                log.warning(
                    "event %s on %s not recorded: %s", event.reason, event.regarding.name, err
                )
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Wait until every queued event was sent (or given up on)."""
        await self._queue.join()

    async def _send(self, event: Event) -> None:
        ref = event.regarding
        key = (ref.uid or f"{ref.namespace}/{ref.name}", event.type, event.reason, event.note)
        now = self._clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen.last < SERIES_WINDOW:
            seen.count += 1
            seen.last = now
            await self._bump_series(seen)
            return
        bucket = self._buckets.setdefault(
            key[0], TokenBucket(SPAM_REFILL, SPAM_BURST, clock=self._clock)
        )
        if bucket.reserve() > 0:
            self.dropped += 1
            return
        name = f"{ref.name}.{secrets.token_hex(8)}"
        namespace = ref.namespace or "default"
        if await self._core():
            await self.client.create(
                CORE_EVENTS, self._core_body(event, name, namespace), namespace
            )
        else:
            await self.client.create(EVENTS, self._body(event, name, namespace), namespace)
        self._seen[key] = _Seen(name=name, namespace=namespace, count=1, last=now)
        self.sent += 1

    async def _bump_series(self, seen: _Seen) -> None:
        stamp = micro_time(self._wall())
        if await self._core():
            patch: dict[str, Any] = {"count": seen.count, "lastTimestamp": stamp[:19] + "Z"}
            resource = CORE_EVENTS
        else:
            patch = {"series": {"count": seen.count, "lastObservedTime": stamp}}
            resource = EVENTS
        try:
            await self.client.patch(
                resource, seen.name, patch, namespace=seen.namespace, content_type=MERGE_PATCH
            )
            self.sent += 1
        except NotFoundError:  # the event expired (1 h TTL) or its object's namespace is gone
            self._seen = {k: v for k, v in self._seen.items() if v is not seen}

    async def _core(self) -> bool:
        """Whether to fall back to core/v1 Events (events.k8s.io/v1 not served)."""
        if self._use_core is None:
            try:
                await self.client.request("GET", "/apis/events.k8s.io/v1")
                self._use_core = False
            except NotFoundError:
                self._use_core = True
            except ApiError:
                return False  # unknown yet; try events.k8s.io and ask again next time
        return self._use_core

    def _body(self, event: Event, name: str, namespace: str) -> dict[str, Any]:
        ref = event.regarding
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": micro_time(self._wall()),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": event.action,
            "reason": event.reason,
            "note": event.note[:1024],
            "type": event.type,
            "regarding": _ref(ref),
        }

    def _core_body(self, event: Event, name: str, namespace: str) -> dict[str, Any]:
        ref = event.regarding
        stamp = micro_time(self._wall())[:19] + "Z"
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": _ref(ref),
            "reason": event.reason,
            "message": event.note[:1024],
            "type": event.type,
            "source": {"component": self.controller},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "action": event.action,
            "reportingComponent": self.controller,
            "reportingInstance": self.instance,
        }


def _ref(ref: ObjectRef) -> dict[str, str]:
    body = {"kind": ref.kind, "apiVersion": ref.api_version, "name": ref.name}
    if ref.namespace:
        body["namespace"] = ref.namespace
    if ref.uid:
        body["uid"] = ref.uid
    return body


def creation_failed_event(manifest: dict[str, Any], reason: str, error: str) -> Event | None:
    """The Warning on the JobSet whose child (Job, headless Service, PVC) `manifest` the API
    server refused with `error`, as upstream words it (None: no JobSet is named)."""
    ref = owner_ref(manifest) or _labelled_jobset(manifest)
    if ref is None:
        return None
    name = (manifest.get("metadata") or {}).get("name", "")
    what = {c.JOB_CREATION_FAILED_EVENT: "job", c.PVC_CREATION_FAILED_EVENT: "pvc"}.get(
        reason, "service"
    )
    return Event(ref, "Warning", reason, f'{what} "{name}" creation failed with error: {error}')


def owner_ref(manifest: dict[str, Any]) -> ObjectRef | None:
    """The JobSet a child manifest belongs to (its controller ownerReference)."""
    meta = manifest.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == c.KIND:
            return ObjectRef(
                kind=c.KIND,
                api_version=str(ref.get("apiVersion", c.API_VERSION)),
                namespace=str(meta.get("namespace", "")),
                name=str(ref.get("name", "")),
                uid=str(ref.get("uid", "")),
            )
    return None


def _labelled_jobset(manifest: dict[str, Any]) -> ObjectRef | None:
    """The JobSet named by the jobset-name label (a retained PVC has no ownerReference)."""
    meta = manifest.get("metadata") or {}
    name = (meta.get("labels") or {}).get(c.JOBSET_NAME_KEY)
    if not name:
        return None
    namespace = str(meta.get("namespace", ""))
    return ObjectRef(kind=c.KIND, api_version=c.API_VERSION, namespace=namespace, name=name, uid="")
