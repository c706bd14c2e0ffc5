"""List+watch informers: a local cache of one resource kept current from the API server.

LIST, replace the store (synthesising deletes for objects that vanished), then WATCH from the
list's resourceVersion with bookmarks. A clean end of the stream re-watches from the last seen
version; 410 Gone relists; transport errors back off and re-watch. Each object is cached through a
`transform` (a slim projection; never whole Job manifests), and secondary indexes are kept up to
date on every change. Handlers run synchronously on the loop and must be O(1): enqueue a key.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, Literal, TypeVar

from jobset_infra.controller.runtime.kube import ApiError, GoneError, KubeClient
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
        retry_delay: float = 0.5,
    ) -> None:
        self.client = client
        self.resource = resource
        self.transform = transform
        self.namespace = namespace or None
        self.watch_timeout = watch_timeout
        self.label_selector = label_selector  # server-side filter: cache only what we own
        self.retry_delay = retry_delay
        self.store: dict[str, T] = {}
        self._versions: dict[str, int | None] = {}
        # key -> resourceVersion at deletion, so a late write-through cannot resurrect the object
        self._tombstones: dict[str, int] = {}
        self._indexers = dict(indexers or {})
        self._indexes: dict[str, dict[Hashable, set[str]]] = {n: {} for n in self._indexers}
        self._handlers: list[Handler] = []
        self.synced = asyncio.Event()
        self.resource_version = ""
        self.relists = 0
        self.forbidden = False  # LIST was refused (403): the cache stays empty and "synced"

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, key: str) -> T | None:
        return self.store.get(key)

    def by_index(self, index: str, value: Hashable) -> list[T]:
        return [self.store[k] for k in self._indexes[index].get(value, ()) if k in self.store]

    def keys_by_index(self, index: str, value: Hashable) -> frozenset[str]:
        return frozenset(self._indexes[index].get(value, ()))

    # --- running ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled."""
        while True:
            try:
                await self._list()
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                if err.code == 403:
                    self._forbid(err)
                    return
                log.warning("list %s failed: %s", self.resource.plural, err)
                await asyncio.sleep(self.retry_delay)
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
                ):
                    self._apply(event)
            except asyncio.CancelledError:
                raise
            except GoneError:
                log.info("watch %s expired (410): relisting", self.resource.plural)
                return
            except ApiError as err:
                log.warning("watch %s failed: %s; re-watching", self.resource.plural, err)
                await asyncio.sleep(self.retry_delay)
            except Exception:  # a malformed event must not kill the informer
                log.exception("watch %s broke; relisting", self.resource.plural)
                await asyncio.sleep(self.retry_delay)
                return

    async def resync(self) -> None:
        """LIST again (a consistent read) into the cache, retrying until it succeeds.

        A new leader calls it before its first reconcile: its watch may lag behind the writes its
        predecessor made just before dying (a dropped watch backing off), and placement must not
        decide from a cache older than what the old leader did.
        """
        while not self.forbidden:
            try:
                await self._list()
                return
            except ApiError as err:
                log.warning("resync of %s failed: %s", self.resource.plural, err)
                await asyncio.sleep(self.retry_delay)

    async def _list(self) -> None:
        listing = await self.client.list(
            self.resource, self.namespace, label_selector=self.label_selector
        )
        fresh = {object_key(obj): obj for obj in listing["items"]}
        for key in [k for k in self.store if k not in fresh]:
            self._delete(key)
        for key, obj in fresh.items():
            self._upsert(key, obj, force=True)
        self.resource_version = str((listing.get("metadata") or {}).get("resourceVersion", ""))
        self._tombstones.clear()
        self.relists += 1
        self.synced.set()

    def _forbid(self, err: ApiError) -> None:
        log.warning("not allowed to list %s (%s); continuing without", self.resource.plural, err)
        self.forbidden = True
        self.synced.set()

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        obj = event.get("object") or {}
        rv = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if kind == "BOOKMARK":
            self.resource_version = rv or self.resource_version
            return
        key = object_key(obj)
        if kind in ("ADDED", "MODIFIED"):
            self._upsert(key, obj)
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
