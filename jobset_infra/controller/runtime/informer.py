"""List+watch informers: a local cache of one resource kept current from the API server.

LIST, replace the store (synthesising deletes for objects that vanished), then WATCH from the
list's resourceVersion with bookmarks. A clean end of the stream re-watches from the last seen
version; 410 Gone relists. A failing LIST or WATCH (a 403 while RBAC is missing, an API server
restarting) is retried forever with client-go's reflector backoff (`backoff.py`), logged once
when the streak starts or its error changes and once when it ends; meanwhile the cache is out
of sync (`state()`, judged in `cache_health.py`). Each object is cached through a `transform`
(a slim projection; never whole manifests), and secondary indexes are kept up to date on every
change. Handlers run synchronously on the loop and must be O(1): enqueue a key.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, Literal, TypeVar

from jobset_infra.controller.runtime.backoff import Backoff, Clock
from jobset_infra.controller.runtime.cache_health import CacheState, settled
from jobset_infra.controller.runtime.kube import ApiError, GoneError, KubeClient
from jobset_infra.controller.runtime.ratelimit import Sleep
from jobset_infra.controller.runtime.resources import Resource

T = TypeVar("T")
EventKind = Literal["add", "update", "delete"]
Handler = Callable[[EventKind, Any, Any], None]  # (kind, old or None, new or None)
Indexer = Callable[[Any], Iterable[Hashable]]

log = logging.getLogger(__name__)
_MAX_TOMBSTONES = 10_000


def object_key(obj: Mapping[str, Any]) -> str:
    """The cache key: namespace/name, or name for cluster-scoped objects (client-go's)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def _rv_int(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


class Informer(Generic[T]):
    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        transform: Callable[[Mapping[str, Any]], T],
        *,
        namespace: str | None = None,
        indexers: Mapping[str, Indexer] | None = None,
        watch_timeout: int = 300,
        label_selector: str = "",
        keep: Callable[[Mapping[str, Any]], bool] | None = None,
        required: bool = True,
        degrades: str = "",
        backoff: Backoff | None = None,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.client = client
        self.resource = resource
        self.transform = transform
        self.namespace = namespace or None
        self.watch_timeout = watch_timeout
        self.label_selector = label_selector  # server-side filter
        # Client-side filter: an object `keep` refuses is not cached (and leaves the cache when
        # it stops qualifying, e.g. a Job whose owner reference was removed).
        self.keep = keep
        self.required = required  # probes and leadership wait for it (cache_health.py)
        self.degrades = degrades  # what an optional cache's absence costs, for the log
        self.store: dict[str, T] = {}
        self._versions: dict[str, int | None] = {}
        # key -> resourceVersion at deletion, so a late write-through cannot resurrect the object
        self._tombstones: dict[str, int] = {}
        self._indexers = dict(indexers or {})
        self._indexes: dict[str, dict[Hashable, set[str]]] = {n: {} for n in self._indexers}
        self._handlers: list[Handler] = []
        self.synced = asyncio.Event()  # a LIST has succeeded at least once
        # Start-up may go on: listed, or (an optional cache) refused (cache_health.settled).
        self.settled = asyncio.Event()
        self.resource_version = ""
        self.relists = 0
        self._backoff = backoff or Backoff(clock=clock)
        self._clock = clock
        self._sleep = sleep
        self.failing_since: float | None = None
        self.failures = 0  # failed lists and watches in the current streak
        self.error = ""  # the current streak's latest error
        self.forbidden = False  # the current streak's latest error is a 403
        self._logged = ""  # the error kind last logged, so a streak logs once per change

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, key: str) -> T | None:
        return self.store.get(key)

    def by_index(self, index: str, value: Hashable) -> list[T]:
        return [self.store[k] for k in self._indexes[index].get(value, ()) if k in self.store]

    def index_size(self, index: str, value: Hashable) -> int:
        """How many cached objects `value` indexes (no walk of them)."""
        return len(self._indexes[index].get(value, ()))

    def keys_by_index(self, index: str, value: Hashable) -> frozenset[str]:
        return frozenset(self._indexes[index].get(value, ()))

    def state(self, running: bool = True) -> CacheState:
        return CacheState(
            resource=self.resource.plural,
            required=self.required,
            listed=self.synced.is_set(),
            failing_since=self.failing_since,
            error=self.error,
            forbidden=self.forbidden,
            running=running,
        )

    @property
    def usable(self) -> bool:
        """The cache may be read as the cluster's state: listed, and not refused since (an
        optional cache that is refused is read as "unknown" instead)."""
        return self.synced.is_set() and not self.forbidden

    # --- running ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled; failures are retried with backoff, never given up."""
        while True:
            try:
                await self._list()
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                await self._failed("list", err)
                continue
            await self._watch_until_gone()

    async def _watch_until_gone(self) -> None:
        while True:
            try:
                async for event in self.client.watch(
                    self.resource,
                    self.namespace,
                    self.resource_version,
                    self.watch_timeout,
                    label_selector=self.label_selector,
                    on_open=self._recovered,
                ):
                    self._apply(event)
            except asyncio.CancelledError:
                raise
            except GoneError:
                log.info("watch %s expired (410): relisting", self.resource.plural)
                return
            except ApiError as err:
                await self._failed("watch", err)
            except Exception as err:  # a malformed event must not kill the informer
                log.exception("watch %s broke; relisting", self.resource.plural)
                await self._failed("watch", ApiError(0, type(err).__name__, str(err)))
                return

    async def resync(self) -> None:
        """LIST again (a consistent read) into the cache, retrying until it succeeds (or, for
        an optional cache, until it is refused).

        A new leader calls it before its first reconcile: its watch may lag behind the writes its
        predecessor made just before dying (a dropped watch backing off), and placement must not
        decide from a cache older than what the old leader did.
        """
        while True:
            try:
                await self._list()
                return
            except ApiError as err:
                if err.code == 403 and not self.required:
                    self._record_failure("resync", err)
                    return
                await self._failed("resync", err)

    async def _list(self) -> None:
        listing = await self.client.list(
            self.resource, self.namespace, label_selector=self.label_selector
        )
        fresh = {
            object_key(obj): obj for obj in listing["items"]
            if self.keep is None or self.keep(obj)
        }
        for key in [k for k in self.store if k not in fresh]:
            self._delete(key)
        for key, obj in fresh.items():
            self._upsert(key, obj, force=True)
        self.resource_version = str((listing.get("metadata") or {}).get("resourceVersion", ""))
        self._tombstones.clear()
        self.relists += 1
        self.synced.set()
        self.settled.set()
        self._recovered()

    # --- failure streaks -------------------------------------------------------------------------

    async def _failed(self, verb: str, err: ApiError) -> None:
        """Record a failure, log it if its kind is new to this streak, wait out the backoff."""
        self._record_failure(verb, err)
        await self._sleep(self._backoff.next_delay())

    def _record_failure(self, verb: str, err: ApiError) -> None:
        if self.failing_since is None:
            self.failing_since = self._clock()
            self.failures = 0
        self.failures += 1
        self.error = f"{verb}: {err}"
        self.forbidden = err.code == 403
        if settled(self.state()):
            self.settled.set()
        kind = f"{verb} {err.code} {err.reason}"
        if kind == self._logged:
            log.debug("%s %s failed again: %s", verb, self.resource.plural, err)
            return
        self._logged = kind
        if self.required:
            log.warning("%s %s failed: %s; the cache is out of sync and the controller not "
                        "ready until it works again (retrying with backoff)",
                        verb, self.resource.plural, err)
        else:
            log.warning("%s %s failed: %s; until it works, %s (retrying with backoff)",
                        verb, self.resource.plural, err, self.degrades or "this cache is empty")

    def _recovered(self) -> None:
        """A LIST or WATCH succeeded: end the failure streak (logged once)."""
        if self.failing_since is None:
            return
        log.info("%s can be listed and watched again after %d failures in %.1f s",
                 self.resource.plural, self.failures, self._clock() - self.failing_since)
        self.failing_since = None
        self.failures = 0
        self.error = ""
        self.forbidden = False
        self._logged = ""

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        key = object_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            if self.keep is None or self.keep(obj):
                self._upsert(key, obj)
            else:
                self._delete(key)  # no longer ours to cache (or never was)
        elif kind == "DELETED":
            self._delete(key)
            deleted_rv = _rv_int(rv)
            if deleted_rv is not None:
                self._tombstones[key] = deleted_rv
                if len(self._tombstones) > _MAX_TOMBSTONES:
                    del self._tombstones[next(iter(self._tombstones))]
        if rv:
            self.resource_version = rv

    # --- store -----------------------------------------------------------------------------------

    def write_through(self, obj: Mapping[str, Any]) -> None:
        """Cache an object a write of ours returned, so the next reconcile sees our own write;
        the watch event of the same version later is a no-op update."""
        key = object_key(obj)
        rv = _rv_int((obj.get("metadata") or {}).get("resourceVersion"))
        tombstone = self._tombstones.get(key)
        if tombstone is not None and (rv is None or rv <= tombstone):
            return  # deleted after this write: the informer already knows better
        if self.keep is None or self.keep(obj):
            self._upsert(key, obj)

    def _upsert(self, key: str, obj: Mapping[str, Any], force: bool = False) -> None:
        rv = _rv_int((obj.get("metadata") or {}).get("resourceVersion"))
        known = self._versions.get(key)
        if known is not None and rv is not None and (rv == known or (rv < known and not force)):
            return  # the version we hold, or older than a write-through of ours
        new = self.transform(obj)
        old = self.store.get(key)
        self.store[key] = new
        self._versions[key] = rv
        self._reindex(key, old, new)
        self._notify("add" if old is None else "update", old, new)

    def _delete(self, key: str) -> None:
        old = self.store.pop(key, None)
        self._versions.pop(key, None)
        if old is None:
            return
        self._reindex(key, old, None)
        self._notify("delete", old, None)

    def _reindex(self, key: str, old: T | None, new: T | None) -> None:
        for name, indexer in self._indexers.items():
            index = self._indexes[name]
            if old is not None:
                for value in indexer(old):
                    members = index.get(value)
                    if members is not None:
                        members.discard(key)
                        if not members:
                            del index[value]
            if new is not None:
                for value in indexer(new):
                    index.setdefault(value, set()).add(key)

    def _notify(self, kind: EventKind, old: T | None, new: T | None) -> None:
        for handler in self._handlers:
            try:
                handler(kind, old, new)
            except Exception:  # one bad handler must not stop the cache
                log.exception("%s handler failed", self.resource.plural)
