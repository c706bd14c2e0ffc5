"""Deletion, finalizers and owner-reference garbage collection, as the API server and
kube-controller-manager's garbage collector do them together.

- Background: the owner goes now; its dependents are deleted right after.
- Foreground: the owner gets `deletionTimestamp` and the `foregroundDeletion` finalizer; every
  dependent is deleted; the owner goes once no dependent with `blockOwnerDeletion: true` remains.
- Orphan: the owner gets the `orphan` finalizer; dependents lose their owner reference to it; then
  the owner goes.
- An object with other finalizers only gets `deletionTimestamp` until they are removed.
- A deleted Namespace becomes Terminating, its content is deleted, and it goes when empty.
- A dependent written with an owner reference to an object that does not exist loses that
  reference, and is deleted when no owner is left (`collect_dangling`, run periodically by the
  `GarbageCollector` component a Sim starts).

batch/v1 Jobs default to Orphan, a backwards-compatibility default Kubernetes keeps (kubectl always
sends Background). The collector works through a queue inside the write that triggers it (no
recursion, so an owner of thousands of dependents is fine), and the write returns a settled state;
a real collector lags by milliseconds. A DELETE that marked the object (a finalizer, Foreground,
Orphan) still answers with the object as marked, as the API server answers before its collector
runs.

`store.collector = False` (`Sim(garbage_collector=False)`, envtest's shape: an API server without
kube-controller-manager) keeps what only the API server does: finalizers and deletionTimestamp,
removal once no finalizer is left, a Terminating Namespace; nothing processes the `orphan` and
`foregroundDeletion` finalizers, collects dependents or empties a Namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from jobset_infra.sim.apiserver.errors import ConflictError, field_cause, invalid

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.resources import GVR, ResourceInfo
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
Ref = tuple["GVR", str, str]
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
POLICIES = ("Foreground", "Background", "Orphan")


def default_policy(info: ResourceInfo) -> str:
    if (info.gvr.group, info.kind) == ("batch", "Job"):
        return "Orphan"
    return "Background"


def _check_preconditions(info: ResourceInfo, obj: JsonObj, preconditions: JsonObj) -> None:
    """409 as the registry's delete words a failed precondition (details name the Kind)."""
    meta = obj["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    why = None
    if uid and uid != meta["uid"]:
        why = (f"the UID in the precondition ({uid}) does not match the UID in record "
               f"({meta['uid']}). The object might have been deleted and then recreated")
    elif rv and rv != meta["resourceVersion"]:
        why = (f"the ResourceVersion in the precondition ({rv}) does not match the "
               f"ResourceVersion in record ({meta['resourceVersion']}). The object might have "
               "been modified")
    if why is not None:
        raise ConflictError(409, "Conflict", f'Operation cannot be fulfilled on {info.kind} '
                            f'"{meta["name"]}": {why}',
                            details={"name": meta["name"], "kind": info.kind})


# ---- entry points (called by the store; each drains the queue before returning) ---------------


def delete(
    store: Store,
    info: ResourceInfo,
    ns: str,
    obj: JsonObj,
    *,
    propagation: str | None = None,
    preconditions: JsonObj | None = None,
    dry_run: bool = False,
) -> tuple[JsonObj, bool]:
    """Delete or start deleting `obj`; returns (object, gone)."""
    if propagation is not None and propagation not in POLICIES:
        shown = ", ".join(f'"{p}"' for p in (*POLICIES, "nil"))
        raise invalid("meta.k8s.io", "DeleteOptions", "", [field_cause(
            "FieldValueNotSupported", "propagationPolicy",
            f'Unsupported value: "{propagation}": supported values: {shown}')])
    name, uid = obj["metadata"]["name"], obj["metadata"]["uid"]
    current = store.peek(info.gvr, ns, name)
    if current is None or current["metadata"]["uid"] != uid:
        return obj, True
    _check_preconditions(info, current, preconditions or {})
    if dry_run:
        return current, not _finalizers_for(info, current, propagation)
    gone = _start_delete(store, info, ns, current, propagation)
    marked = None if gone is not None else store.peek(info.gvr, ns, name)
    _drain(store)
    after = store.peek(info.gvr, ns, name)
    if after is not None and after["metadata"]["uid"] == uid:
        return after, False
    return gone or marked or current, True


def process_deleting(store: Store, info: ResourceInfo, ns: str, name: str) -> None:
    """A write changed an object that has deletionTimestamp: advance its deletion."""
    store.gc_queue.append(("advance", (info.gvr, ns, name), None))
    _drain(store)


def remove(
    store: Store, info: ResourceInfo, ns: str, name: str, final: JsonObj | None = None
) -> JsonObj:
    """Remove for good (as `final`, when an update released the last finalizer)."""
    gone = _remove_now(store, info, ns, name, final)
    _drain(store)
    return gone


# ---- the queue --------------------------------------------------------------------------------


def _drain(store: Store) -> None:
    if store.gc_busy:
        return  # an outer call is draining and will get to what was queued
    store.gc_busy = True
    try:
        while store.gc_queue:
            kind, ref, arg = store.gc_queue.popleft()
            info = store.registry.get(ref[0])
            obj = store.peek(*ref)
            if info is None or obj is None:
                if kind == "namespace":
                    _finish_namespace(store, ref[2])
                continue
            _STEPS[kind](store, info, ref, obj, arg)
    finally:
        store.gc_busy = False


def _step_delete(store: Store, info: ResourceInfo, ref: Ref, obj: JsonObj, arg: Any) -> None:
    if not obj["metadata"].get("deletionTimestamp"):
        _start_delete(store, info, ref[1], obj, arg)


def _step_collect(store: Store, info: ResourceInfo, ref: Ref, obj: JsonObj, arg: Any) -> None:
    """A dependent whose owner `arg` (a uid) is gone: deleted unless another owner exists."""
    others = [r for r in obj["metadata"].get("ownerReferences") or ()
              if r.get("uid") != arg and r.get("uid") in store.uids]
    if others:
        _drop_owner_ref(store, info, ref[1], obj, arg)
    elif not obj["metadata"].get("deletionTimestamp"):
        _start_delete(store, info, ref[1], obj, "Background")


def _step_advance(store: Store, info: ResourceInfo, ref: Ref, obj: JsonObj, arg: Any) -> None:
    """Run the GC finalizers of an object being deleted; remove it when none is left."""
    meta = obj["metadata"]
    if not meta.get("deletionTimestamp"):
        return
    uid, ns = meta["uid"], ref[1]
    finalizers = list(meta.get("finalizers") or ())
    if not store.collector:  # no garbage collector: its finalizers stay
        if not finalizers:
            _remove_now(store, info, ns, meta["name"], None)
        return
    if ORPHAN in finalizers:
        for dep_ref in _dependents(store, uid):
            dep = store.peek(*dep_ref)
            dep_info = store.registry.get(dep_ref[0])
            if dep is not None and dep_info is not None:
                _drop_owner_ref(store, dep_info, dep_ref[1], dep, uid)
        finalizers.remove(ORPHAN)
    if FOREGROUND in finalizers:
        if uid not in store.gc_cascaded:
            store.gc_cascaded.add(uid)
            for dep_ref in _dependents(store, uid):
                policy = "Foreground" if store.dependents.get(_uid(store, dep_ref)) else None
                store.gc_queue.append(("delete", dep_ref, policy or "Background"))
        if not _blocking(store, uid):
            finalizers.remove(FOREGROUND)
    if finalizers != list(meta.get("finalizers") or ()):
        _set_finalizers(store, info, ns, obj, finalizers)
    elif not finalizers:
        _remove_now(store, info, ns, meta["name"], None)


def _step_namespace(store: Store, info: ResourceInfo, ref: Ref, obj: JsonObj, arg: Any) -> None:
    _finish_namespace(store, ref[2])


_STEPS = {"delete": _step_delete, "collect": _step_collect, "advance": _step_advance,
          "namespace": _step_namespace}


# ---- building blocks --------------------------------------------------------------------------


def _finalizers_for(info: ResourceInfo, obj: JsonObj, propagation: str | None) -> list[str]:
    policy = propagation or default_policy(info)
    finalizers = list(obj["metadata"].get("finalizers") or ())
    if policy == "Foreground" and FOREGROUND not in finalizers:
        finalizers.append(FOREGROUND)
    if policy == "Orphan" and ORPHAN not in finalizers:
        finalizers.append(ORPHAN)
    return finalizers


def _start_delete(
    store: Store, info: ResourceInfo, ns: str, obj: JsonObj, propagation: str | None
) -> JsonObj | None:
    """Remove `obj` now (returned as deleted) or mark it deleting and queue its finalizers."""
    meta = obj["metadata"]
    if info.kind == "Namespace" and not info.gvr.group:
        _mark_namespace(store, info, obj)
        return None
    finalizers = _finalizers_for(info, obj, propagation)
    if not finalizers:
        return _remove_now(store, info, ns, meta["name"], None)
    if finalizers != list(meta.get("finalizers") or ()) or not meta.get("deletionTimestamp"):
        new = dict(obj)
        new_meta = dict(meta) | {"finalizers": finalizers}
        if not meta.get("deletionTimestamp"):
            new_meta["deletionTimestamp"] = store.now()
            new_meta["deletionGracePeriodSeconds"] = 0
            new_meta["generation"] = meta.get("generation", 0) + 1
        new["metadata"] = new_meta
        store.put_raw(info, ns, new, obj)
    store.gc_queue.append(("advance", (info.gvr, ns, meta["name"]), None))
    return None


def _remove_now(
    store: Store, info: ResourceInfo, ns: str, name: str, final: JsonObj | None
) -> JsonObj:
    """Drop the object, then queue its dependents' collection and its deleting owners."""
    gone = store.drop(info, ns, name, final)
    meta = gone["metadata"]
    store.gc_cascaded.discard(meta["uid"])
    if not store.collector:
        return gone
    for dep_ref in _dependents(store, meta["uid"]):
        store.gc_queue.append(("collect", dep_ref, meta["uid"]))
    for ref in meta.get("ownerReferences") or ():
        owner_ref = store.uids.get(ref.get("uid", ""))
        if owner_ref is not None:
            store.gc_queue.append(("advance", owner_ref, None))
    if ns and info.kind != "Namespace":
        namespace = store.peek(_namespaces(), "", ns)
        if namespace is not None and namespace["metadata"].get("deletionTimestamp"):
            store.gc_queue.append(("namespace", (_namespaces(), "", ns), None))
    return gone


def _dependents(store: Store, uid: str) -> list[Ref]:
    return sorted(store.dependents.get(uid, ()), key=lambda r: (r[1], r[2]))


def _uid(store: Store, ref: Ref) -> str:
    obj = store.peek(*ref)
    return "" if obj is None else str(obj["metadata"]["uid"])


def _blocking(store: Store, uid: str) -> bool:
    """Whether a dependent with blockOwnerDeletion still holds the owner `uid` (stops at the
    first one, so re-checking a large owner after each removal stays cheap)."""
    for ref in store.dependents.get(uid, ()):
        dep = store.peek(*ref)
        for owner in (dep or {}).get("metadata", {}).get("ownerReferences") or ():
            if owner.get("uid") == uid and owner.get("blockOwnerDeletion"):
                return True
    return False


def _set_finalizers(
    store: Store, info: ResourceInfo, ns: str, obj: JsonObj, finalizers: list[str]
) -> None:
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"]) | {"finalizers": finalizers}
    if finalizers:
        store.put_raw(info, ns, new, obj)
    else:
        del new["metadata"]["finalizers"]
        _remove_now(store, info, ns, obj["metadata"]["name"], new)


def _drop_owner_ref(store: Store, info: ResourceInfo, ns: str, obj: JsonObj, uid: str) -> None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or () if r.get("uid") != uid]
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"]) | {"ownerReferences": refs}
    if not refs:
        del new["metadata"]["ownerReferences"]
    store.put_raw(info, ns, new, obj)


def _namespaces() -> GVR:
    from jobset_infra.sim.apiserver.store import NAMESPACES

    return NAMESPACES


def _mark_namespace(store: Store, info: ResourceInfo, obj: JsonObj) -> None:
    name = obj["metadata"]["name"]
    if not obj["metadata"].get("deletionTimestamp"):
        new = dict(obj)
        new["metadata"] = dict(obj["metadata"]) | {"deletionTimestamp": store.now()}
        new["status"] = dict(obj.get("status") or {}) | {"phase": "Terminating"}
        store.put_raw(info, "", new, obj)
    if not store.collector:  # the namespace controller empties it; none runs
        return
    for res in store.registry.all():
        if res.namespaced:
            for child in store.iter_objects(res.gvr, name):
                ref = (res.gvr, name, child["metadata"]["name"])
                store.gc_queue.append(("delete", ref, "Background"))
    store.gc_queue.append(("namespace", (info.gvr, "", name), None))


def _finish_namespace(store: Store, ns: str) -> None:
    namespace = store.peek(_namespaces(), "", ns)
    if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
        return
    if any(next(store.iter_objects(r.gvr, ns), None) is not None
           for r in store.registry.all() if r.namespaced):
        return
    store.drop(store.info(_namespaces()), "", ns)
def collect_dangling(store: Store) -> int:
    """What the collector does with objects whose owners do not exist (never did, or were
    deleted before the dependent was written): drop those references, and delete the object
    when no owner is left. Returns how many objects it changed."""
    changed = 0
    refs, store.dangling = store.dangling, set()
    for gvr, ns, name in sorted(refs, key=lambda r: (r[1], r[2])):
        info, obj = store.registry.get(gvr), store.peek(gvr, ns, name)
        if info is None or obj is None:
            continue
        owners = obj["metadata"].get("ownerReferences") or []
        missing = [r["uid"] for r in owners if r.get("uid") not in store.uids]
        if not missing:
            continue
        changed += 1
        if len(missing) == len(owners):
            if not obj["metadata"].get("deletionTimestamp"):
                _start_delete(store, info, ns, obj, "Background")
                _drain(store)
            continue
        for uid in missing:
            current = store.peek(gvr, ns, name)
            if current is not None:
                _drop_owner_ref(store, info, ns, current, uid)
    return changed


class GarbageCollector:
    """A Sim component that collects dangling dependents every `interval` seconds."""

    def __init__(self, store: Store, interval: float = 0.05) -> None:
        self.store, self.interval = store, interval
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            if self.store.dangling:
                collect_dangling(self.store)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="sim-garbage-collector")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
