"""The simulated cluster's object store: Kubernetes API semantics without HTTP.

`Store` keeps objects as JSON-like dicts keyed by resource type (`GVR`: group, version, plural),
namespace ("" for cluster-scoped) and name. The fake Job controller, the scheduler and the HTTP
layer (`jobset_infra.sim.apiserver.server`) all call it directly:

    jobs = GVR("batch", "v1", "jobs")
    job = store.create(jobs, {"metadata": {"name": "j"}, "spec": {...}}, namespace="default")
    page = store.list(jobs, "default", label_selector="app=x", limit=100)
    store.update(jobs, changed)                      # 409 Conflict on a stale resourceVersion
    store.update(jobs, changed, subresource="status")
    store.patch(jobs, "j", "default", MERGE_PATCH, {"spec": {"suspend": True}})
    store.delete(jobs, "j", "default", propagation="Foreground")
    async for kind, obj in store.watch(jobs, "default", since_rv="123"): ...

Semantics (docs/sim.md lists them): one resourceVersion counter, uid/creationTimestamp/generation,
the status subresource, no-op writes not persisted, finalizers, garbage collection (`gc`),
watches with a bounded history and 410 Gone (`watch`). Failures raise `StatusError`.

Objects returned by get/list/watch are the stored snapshots, shared and never mutated after
publication: treat them as read-only and `clone` one before changing it. Every write stores a
fresh copy of what the caller passed.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from jobset_infra.api.crd.schema import CrdSchema
from jobset_infra.sim.apiserver import (
    field_validation,
    gc,
    listing,
    managed_fields,
    patch,
    pod_updates,
    strategies,
    updates,
)
from jobset_infra.sim.apiserver.clock import Clock, SystemClock
from jobset_infra.sim.apiserver.errors import (
    NotFoundError,
    StatusError,
    already_exists,
    not_found,
)
from jobset_infra.sim.apiserver.event_views import CORE_EVENTS, EVENTS_V1, to_core, to_events_v1
from jobset_infra.sim.apiserver.listing import ListResult
from jobset_infra.sim.apiserver.objects import ObjectIndex, Ref
from jobset_infra.sim.apiserver.resources import GVR, Registry, ResourceInfo, builtin_resources
from jobset_infra.sim.apiserver.selectors import parse_field_selector, parse_label_selector
from jobset_infra.sim.apiserver.updates import clone
from jobset_infra.sim.apiserver.watch import Event, EventLog, History, Watch

__all__ = ["NAMESPACES", "ListResult", "Store", "clone"]

JsonObj = dict[str, Any]
JsonList = list[JsonObj]
WatchList = list[Watch]
NAMESPACES = GVR("", "v1", "namespaces")
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


Admit = Callable[[ResourceInfo, JsonObj, JsonObj | None], JsonObj]
Observer = Callable[["Store", str, ResourceInfo, JsonObj], None]
UnknownFields = Callable[[JsonObj, list[str]], None]


class Store:
    """In-memory objects with Kubernetes semantics (see module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        watch_window: int = 10_000,
        registry: Registry | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.registry = registry or Registry(builtin_resources())
        self.watch_window = watch_window
        self.rng = rng or random.Random()  # uids differ between stores unless seeded (tests)
        self.admission: dict[GVR, list[Admit]] = {}
        self.schemas: dict[GVR, CrdSchema] = {}  # of served custom resources
        self.observers: list[Observer] = []
        self.writes = 0
        self._rv = 0
        self.index = ObjectIndex()
        self.history = History(watch_window)
        self.dependents, self.uids = self.index.dependents, self.index.uids
        self.gc_queue: deque[tuple[str, Ref, Any]] = deque()  # the collector's work
        self.gc_busy = False
        self.gc_cascaded: set[str] = set()  # owners whose dependents foreground deletion hit
        self.collector = True  # kube-controller-manager's collectors run (gc module docstring)
        strategies.install(self)
        for name in INITIAL_NAMESPACES:
            self.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": name}})

    # ---- lookup -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    def info(self, gvr: GVR) -> ResourceInfo:
        info = self.registry.get(gvr)
        if info is None:
            raise NotFoundError(404, "NotFound",
                                "the server could not find the requested resource",
                                details={})
        return info

    def _find(self, info: ResourceInfo, name: str, ns: str) -> JsonObj:
        obj = self.index.peek(info.gvr, ns, name)
        if obj is None:
            raise not_found(info.gvr.group, info.gvr.resource, name)
        return obj

    def get(self, gvr: GVR, name: str, namespace: str | None = None) -> JsonObj:
        info = self.info(gvr)
        return self._find(info, name, updates.namespace_of(info, namespace) if namespace or not
                          info.namespaced else "")

    def try_get(self, gvr: GVR, name: str, namespace: str | None = None) -> JsonObj | None:
        try:
            return self.get(gvr, name, namespace)
        except StatusError:
            return None

    def peek(self, gvr: GVR, ns: str, name: str) -> JsonObj | None:
        """The stored object at an exact key ("" namespace for cluster-scoped), or None."""
        return self.index.peek(gvr, ns, name)

    def by_uid(self, uid: str) -> JsonObj | None:
        return self.index.by_uid(uid)

    def iter_objects(self, gvr: GVR, namespace: str | None = None) -> Iterator[JsonObj]:
        return self.index.iter(gvr, namespace)

    @property
    def dangling(self) -> set[Ref]:
        return self.index.dangling

    @dangling.setter
    def dangling(self, refs: set[Ref]) -> None:
        self.index.dangling = refs

    def list(
        self,
        gvr: GVR,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListResult:
        """Objects sorted by namespace and name (etcd key order), filtered and paged."""
        info = self.info(gvr)
        label = parse_label_selector(label_selector)
        field = parse_field_selector(field_selector, info.selectable_fields, gvr.group_resource,
                                     own_fields=bool(info.selectable_fields) or bool(info.crd))
        return listing.page(self.index.by_namespace(gvr), namespace, label=label, field=field,
                            limit=limit, continue_token=continue_token, current_rv=self._rv)

    # ---- writes -------------------------------------------------------------------------------

    def now(self) -> str:
        """The clock's time as Kubernetes serialises metav1.Time."""
        return self.clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")

    def _admit(self, info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
        obj = strategies.prepare(info, obj, old)
        for admit in self.admission.get(info.gvr, ()):
            obj = admit(info, obj, old)
        return obj

    def create(
        self,
        gvr: GVR,
        obj: JsonObj,
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JsonObj:
        """POST: assign uid, creationTimestamp, generation 1 and a resourceVersion."""
        info = self.info(gvr)
        obj = updates.decoded_body(obj, info)
        ns = updates.namespace_of(info, namespace, obj)
        suffix = "".join(self.rng.choice(_NAME_CHARS) for _ in range(5))
        obj = updates.prepare_create(info, obj, ns, uid=updates.new_uid(self.rng), now=self.now(),
                                     name_suffix=suffix)
        name = obj["metadata"]["name"]
        if info.namespaced:
            updates.check_namespace(info, self.index.peek(NAMESPACES, "", ns), ns, name)
        if self.index.peek(gvr, ns, name) is not None:
            raise already_exists(gvr.group, gvr.resource, name)
        obj = self._admit(info, obj, None)
        if field_manager:  # a write to the main resource owns no status (its reset fields)
            obj["metadata"]["managedFields"] = managed_fields.record_update(
                None, updates.owned_part(info, obj, None), manager=field_manager,
                api_version=gvr.api_version, now=self.now(), keys=info.keys)
        if dry_run:
            return obj
        self._commit(info, ns, obj, None, "ADDED")
        return obj

    def update(
        self,
        gvr: GVR,
        obj: JsonObj,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JsonObj:
        """PUT the object or its status; 409 Conflict when metadata.resourceVersion is stale."""
        info = self.info(gvr)
        obj = updates.decoded_body(obj, info)
        meta = obj["metadata"]
        ns = updates.namespace_of(info, namespace, obj)
        old = self._find(info, meta.get("name", ""), ns)
        updates.check_put_version(info, old, meta)
        return self.replace(info, old, obj, subresource=subresource,
                            field_manager=field_manager, dry_run=dry_run)

    def update_status(self, gvr: GVR, obj: JsonObj, namespace: str | None = None) -> JsonObj:
        """PUT .../status: only `obj["status"]` is taken; 409 on a stale resourceVersion."""
        return self.update(gvr, obj, namespace, subresource="status")

    def replace(
        self,
        info: ResourceInfo,
        old: JsonObj,
        obj: JsonObj,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> JsonObj:
        """The shared update path of PUT, PATCH and apply (after their bodies became `obj`)."""
        old_meta, name = old["metadata"], old["metadata"]["name"]
        updates.check_preconditions(info, old, obj)
        new = updates.merge_subresource(info, old, obj, subresource)
        if subresource is None and info.gvr == pod_updates.PODS:
            pod_updates.check(old, new)
        updates.check_finalizers(info, old, new)
        updates.check_metadata(info, new)
        if updates.content(new, info.has_status) != updates.content(old, info.has_status):
            new["metadata"]["generation"] = old_meta.get("generation", 1) + 1
        new = self._admit(info, new, old)
        if field_manager and new != old:
            new["metadata"]["managedFields"] = managed_fields.record_update(
                updates.owned_part(info, old, subresource),
                updates.owned_part(info, new, subresource), manager=field_manager,
                api_version=info.gvr.api_version, now=self.now(), subresource=subresource,
                keys=info.keys)
        if new == old or dry_run:
            return old if new == old else new
        ns = old_meta.get("namespace", "")
        if new["metadata"].get("deletionTimestamp") and not new["metadata"].get("finalizers"):
            return gc.remove(self, info, ns, name, final=new)
        self._commit(info, ns, new, old, "MODIFIED")
        if new["metadata"].get("deletionTimestamp"):
            gc.process_deleting(self, info, ns, name)
        return new

    def patch(
        self,
        gvr: GVR,
        name: str,
        namespace: str | None,
        patch_type: str,
        body: Any,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool = False,
        dry_run: bool = False,
        on_unknown: UnknownFields | None = None,
    ) -> JsonObj:
        """PATCH with a merge, JSON, strategic-merge or apply (server-side apply) body.
        `on_unknown(patched, paths)` sees the unknown fields of the patched object (it raises
        or records warnings, per fieldValidation); apply refuses unknown fields itself."""
        info = self.info(gvr)
        ns = updates.namespace_of(info, namespace) if info.namespaced else ""
        if patch_type in (patch.APPLY_PATCH, patch.APPLY_PATCH_CBOR):
            from jobset_infra.sim.apiserver import apply

            return apply.server_side_apply(self, info, name, ns, body, subresource=subresource,
                                           field_manager=field_manager, force=force,
                                           dry_run=dry_run)
        old = self._find(info, name, ns)
        new = updates.patched(info, old, patch_type, body)
        pruned, unknown = field_validation.unknown_fields(self, info, new)
        if unknown and on_unknown is not None:
            on_unknown(new, unknown)
        new = pruned  # a built-in type cannot hold fields its Go type lacks
        return self.replace(info, old, new, subresource=subresource,
                            field_manager=field_manager, dry_run=dry_run)

    def delete(
        self,
        gvr: GVR,
        name: str,
        namespace: str | None = None,
        *,
        propagation: str | None = None,
        preconditions: JsonObj | None = None,
        dry_run: bool = False,
    ) -> tuple[JsonObj, bool]:
        """DELETE: returns (object, gone). `gone` is False while finalizers hold the object."""
        info = self.info(gvr)
        ns = updates.namespace_of(info, namespace) if info.namespaced else ""
        obj = self._find(info, name, ns)
        return gc.delete(self, info, ns, obj, propagation=propagation,
                         preconditions=preconditions, dry_run=dry_run)

    def delete_collection(
        self,
        gvr: GVR,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        propagation: str | None = None,
    ) -> JsonList:
        page = self.list(gvr, namespace, label_selector=label_selector,
                         field_selector=field_selector)
        return [self.delete(gvr, o["metadata"]["name"], o["metadata"].get("namespace"),
                            propagation=propagation)[0] for o in page.items]

    # ---- the write primitive ------------------------------------------------------------------

    def _commit(
        self, info: ResourceInfo, ns: str, obj: JsonObj, old: JsonObj | None, kind: str
    ) -> None:
        """Stamp a new resourceVersion, store `obj`, index owners and publish the event."""
        if info.gvr == EVENTS_V1:  # one collection: stored as core/v1 (event_views)
            info, obj, old = self.info(CORE_EVENTS), to_core(obj), old and to_core(old)
        self._rv += 1
        self.writes += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self._rv)
        self.index.put((info.gvr, ns, meta["name"]), obj, old)
        self._publish(info, Event(self._rv, kind, obj, old, ns))

    def drop(
        self, info: ResourceInfo, ns: str, name: str, final: JsonObj | None = None
    ) -> JsonObj:
        """Remove an object for good (finalizers already empty) and publish DELETED; `final` is
        its last state when the write that released it changed it too."""
        if info.gvr == EVENTS_V1:
            core = self.drop(self.info(CORE_EVENTS), ns, name, final and to_core(final))
            return to_events_v1(core)
        stored = self.index.pop((info.gvr, ns, name))
        old = final if final is not None else stored
        self._rv += 1
        self.writes += 1
        gone = dict(old)
        gone["metadata"] = dict(old["metadata"]) | {"resourceVersion": str(self._rv)}
        self._publish(info, Event(self._rv, "DELETED", gone, None, ns))
        return gone

    def _publish(self, info: ResourceInfo, event: Event) -> None:
        self.log(info.gvr).append(event)
        if info.gvr == CORE_EVENTS:
            self._publish_events_v1(event)
        for observer in self.observers:
            observer(self, event.type, info, event.obj)

    def _publish_events_v1(self, event: Event) -> None:
        """Keep the events.k8s.io/v1 view of a stored core/v1 Event: same uid, same version."""
        view = to_events_v1(event.obj)
        by_name = self.index.data.setdefault(EVENTS_V1, {}).setdefault(event.namespace, {})
        if event.type == "DELETED":
            by_name.pop(view["metadata"]["name"], None)
        else:
            by_name[view["metadata"]["name"]] = view
        old = event.old and to_events_v1(event.old)
        self.log(EVENTS_V1).append(Event(event.rv, event.type, view, old, event.namespace))

    def put_raw(self, info: ResourceInfo, ns: str, obj: JsonObj, old: JsonObj) -> None:
        """Store an already-prepared update (used by the garbage collector)."""
        self._commit(info, ns, obj, old, "MODIFIED")

    # ---- watch --------------------------------------------------------------------------------

    def log(self, gvr: GVR) -> EventLog:
        return self.history.log(gvr)

    def compact(self, gvr: GVR | None = None) -> None:
        """Forget all history so far, so that any watch from an older version gets 410 (tests)."""
        for key in [gvr] if gvr else list(self.history.logs):
            self.log(key).compact(self._rv)

    def watch(
        self,
        gvr: GVR,
        namespace: str | None = None,
        since_rv: str | int | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        send_initial_events: bool | None = None,
        bookmark_interval: float | None = None,
    ) -> Watch:
        """Stream changes after `since_rv`; with no version (or "0"), start with the current
        objects as synthetic ADDED events. `send_initial_events` True always starts with them
        (then the initial-events-end bookmark), False never does. 410 Gone when `since_rv` is
        older than the history."""
        info = self.info(gvr)
        stream = Watch(
            api_version=gvr.api_version, kind=info.kind, namespace=namespace or None,
            label=parse_label_selector(label_selector),
            field=parse_field_selector(field_selector, info.selectable_fields,
                                       gvr.group_resource,
                                       own_fields=bool(info.selectable_fields) or bool(info.crd)),
            current_rv=lambda: self._rv, bookmark_interval=bookmark_interval,
        )
        start = listing.parse_version(since_rv)
        if start is None and send_initial_events is False:
            start = self._rv  # "start at most recent": no synthetic state
        initial = self.list(gvr, namespace).items if start is None or send_initial_events \
            else None
        return self.history.open(gvr, stream, start=start, initial=initial,
                                 send_initial_events=bool(send_initial_events))

    def watches(self, gvr: GVR | None = None) -> WatchList:
        """Open watches (fault injection drops or expires them)."""
        return self.history.watches(gvr)
