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
sends Background). The collector here runs synchronously inside the write that triggers it, so
tests see a settled state; a real collector lags by milliseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from jobset_infra.sim.errors import StatusError, bad_request

if TYPE_CHECKING:
    from jobset_infra.sim.resources import ResourceInfo
    from jobset_infra.sim.store import Store

JsonObj = dict[str, Any]
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
NAMESPACE_FINALIZER = "kubernetes"
POLICIES = ("Foreground", "Background", "Orphan")


def default_policy(info: ResourceInfo) -> str:
    if (info.gvr.group, info.kind) == ("batch", "Job"):
        return "Orphan"
    return "Background"


def _check_preconditions(obj: JsonObj, preconditions: JsonObj) -> None:
    meta = obj["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != meta["uid"]:
        raise StatusError(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, "
                          f"UID in object meta: {meta['uid']}")
    if rv and rv != meta["resourceVersion"]:
        raise StatusError(409, "Conflict", f"Precondition failed: ResourceVersion in "
                          f"precondition: {rv}, ResourceVersion in object meta: "
                          f"{meta['resourceVersion']}")


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
        raise bad_request(f"propagationPolicy {propagation!r} is not one of {', '.join(POLICIES)}")
    current = store.peek(info.gvr, ns, obj["metadata"]["name"])
    if current is None or current["metadata"]["uid"] != obj["metadata"]["uid"]:
        return obj, True  # already gone, e.g. collected while its owner was being deleted
    obj = current
    _check_preconditions(obj, preconditions or {})
    policy = propagation or default_policy(info)
    meta = obj["metadata"]
    finalizers = list(meta.get("finalizers") or ())
    if info.kind == "Namespace" and info.gvr.group == "":
        return _delete_namespace(store, info, obj, dry_run)
    if policy == "Foreground" and FOREGROUND not in finalizers:
        finalizers.append(FOREGROUND)
    if policy == "Orphan" and ORPHAN not in finalizers:
        finalizers.append(ORPHAN)
    if not finalizers:
        if dry_run:
            return obj, True
        gone = remove(store, info, ns, meta["name"])
        return gone, True
    if dry_run:
        return obj, False
    if finalizers != list(meta.get("finalizers") or ()) or not meta.get("deletionTimestamp"):
        _mark_deleting(store, info, ns, obj, finalizers)
    process_deleting(store, info, ns, meta["name"])
    current = store.try_get(info.gvr, meta["name"], ns or None)
    if current is not None and current["metadata"]["uid"] == meta["uid"]:
        return current, False
    return obj, True


def _mark_deleting(
    store: Store, info: ResourceInfo, ns: str, obj: JsonObj, finalizers: list[str]
) -> None:
    new = dict(obj)
    meta = dict(obj["metadata"])
    if not meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = store.now()
        meta["deletionGracePeriodSeconds"] = 0
        meta["generation"] = meta.get("generation", 0) + 1
    meta["finalizers"] = finalizers
    new["metadata"] = meta
    store.put_raw(info, ns, new, obj)


def _dependents(store: Store, uid: str) -> list[tuple[ResourceInfo, str, JsonObj]]:
    out = []
    for gvr, ns, name in sorted(store.dependents.get(uid, ()), key=lambda r: (r[1], r[2])):
        info = store.registry.get(gvr)
        obj = store.peek(gvr, ns, name)
        if info is not None and obj is not None:
            out.append((info, ns, obj))
    return out


def _set_finalizers(
    store: Store, info: ResourceInfo, ns: str, obj: JsonObj, finalizers: list[str]
) -> JsonObj:
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"]) | {"finalizers": finalizers}
    if not finalizers:
        del new["metadata"]["finalizers"]
        remove(store, info, ns, obj["metadata"]["name"], final=new)
    else:
        store.put_raw(info, ns, new, obj)
    return new


def process_deleting(store: Store, info: ResourceInfo, ns: str, name: str) -> None:
    """Advance an object that has deletionTimestamp: run the GC finalizers, remove when free."""
    obj = store.peek(info.gvr, ns, name)
    if obj is None or not obj["metadata"].get("deletionTimestamp"):
        return
    uid = obj["metadata"]["uid"]
    finalizers = list(obj["metadata"].get("finalizers") or ())
    if ORPHAN in finalizers:
        for dep_info, dep_ns, dep in _dependents(store, uid):
            _drop_owner_ref(store, dep_info, dep_ns, dep, uid)
        finalizers.remove(ORPHAN)
        obj = _set_finalizers(store, info, ns, obj, finalizers)
    if FOREGROUND in finalizers:
        for dep_info, dep_ns, dep in _dependents(store, uid):
            if not dep["metadata"].get("deletionTimestamp"):
                policy = "Foreground" if store.dependents.get(dep["metadata"]["uid"]) else None
                delete(store, dep_info, dep_ns, dep, propagation=policy or "Background")
        # deleting a dependent may already have released and removed this object
        current = store.peek(info.gvr, ns, name)
        if current is None or current["metadata"]["uid"] != uid:
            return
        obj, finalizers = current, list(current["metadata"].get("finalizers") or ())
        if FOREGROUND in finalizers and not _blocking(store, uid):
            finalizers.remove(FOREGROUND)
            obj = _set_finalizers(store, info, ns, obj, finalizers)
    if not finalizers and store.peek(info.gvr, ns, name) is obj:
        remove(store, info, ns, name)


def _blocking(store: Store, uid: str) -> bool:
    for _, _, dep in _dependents(store, uid):
        for ref in dep["metadata"].get("ownerReferences") or ():
            if ref.get("uid") == uid and ref.get("blockOwnerDeletion"):
                return True
    return False


def _drop_owner_ref(store: Store, info: ResourceInfo, ns: str, obj: JsonObj, uid: str) -> None:
    refs = [r for r in obj["metadata"].get("ownerReferences") or () if r.get("uid") != uid]
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"]) | {"ownerReferences": refs}
    if not refs:
        del new["metadata"]["ownerReferences"]
    store.put_raw(info, ns, new, obj)


def remove(
    store: Store, info: ResourceInfo, ns: str, name: str, final: JsonObj | None = None
) -> JsonObj:
    """Remove for good (as `final`, when an update released the last finalizer), then collect
    dependents and release owners waiting in the foreground."""
    gone = store.drop(info, ns, name, final)
    meta = gone["metadata"]
    for dep_info, dep_ns, dep in _dependents(store, meta["uid"]):
        _collect(store, dep_info, dep_ns, dep, meta["uid"])
    for ref in meta.get("ownerReferences") or ():
        owner_ref = store.uids.get(ref.get("uid", ""))
        if owner_ref is not None:
            owner_info = store.registry.get(owner_ref[0])
            if owner_info is not None:
                process_deleting(store, owner_info, owner_ref[1], owner_ref[2])
    if ns and info.kind != "Namespace":
        _finish_namespace(store, ns)
    return gone


def _collect(store: Store, info: ResourceInfo, ns: str, dep: JsonObj, owner_uid: str) -> None:
    """A dependent whose owner is gone: deleted unless another owner still exists."""
    others = [r for r in dep["metadata"].get("ownerReferences") or ()
              if r.get("uid") != owner_uid and r.get("uid") in store.uids]
    if others:
        _drop_owner_ref(store, info, ns, dep, owner_uid)
    elif not dep["metadata"].get("deletionTimestamp"):
        delete(store, info, ns, dep, propagation="Background")


def _delete_namespace(
    store: Store, info: ResourceInfo, obj: JsonObj, dry_run: bool
) -> tuple[JsonObj, bool]:
    name = obj["metadata"]["name"]
    if dry_run:
        return obj, False
    if not obj["metadata"].get("deletionTimestamp"):
        new = dict(obj)
        new["metadata"] = dict(obj["metadata"]) | {"deletionTimestamp": store.now()}
        new["status"] = dict(obj.get("status") or {}) | {"phase": "Terminating"}
        store.put_raw(info, "", new, obj)
    for res in store.registry.all():
        if res.namespaced:
            for child in list(store.iter_objects(res.gvr, name)):
                if not child["metadata"].get("deletionTimestamp"):
                    delete(store, res, name, child, propagation="Background")
    _finish_namespace(store, name)
    current = store.try_get(info.gvr, name)
    return (current, False) if current is not None else (obj, True)


def _finish_namespace(store: Store, ns: str) -> None:
    from jobset_infra.sim.store import NAMESPACES

    namespace = store.try_get(NAMESPACES, ns)
    if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
        return
    if any(next(store.iter_objects(r.gvr, ns), None) is not None
           for r in store.registry.all() if r.namespaced):
        return
    store.drop(store.info(NAMESPACES), "", ns)


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
                delete(store, info, ns, obj, propagation="Background")
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
