"""The store's indexed object map: objects by resource type, namespace and name (O(1) gets,
per-namespace lists), by uid, and by owner uid (for garbage collection), plus the dependents
written with an owner that does not exist."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from jobset_infra.sim.apiserver.resources import GVR

JsonObj = dict[str, Any]
Ref = tuple[GVR, str, str]  # resource type, namespace ("" when cluster-scoped), name


class ObjectIndex:
    def __init__(self) -> None:
        self.data: dict[GVR, dict[str, dict[str, JsonObj]]] = {}
        self.uids: dict[str, Ref] = {}
        self.dependents: dict[str, set[Ref]] = {}  # owner uid -> dependents
        self.dangling: set[Ref] = set()  # dependents of owners that did not exist when written

    def peek(self, gvr: GVR, ns: str, name: str) -> JsonObj | None:
        return self.data.get(gvr, {}).get(ns, {}).get(name)

    def by_namespace(self, gvr: GVR) -> Mapping[str, Mapping[str, JsonObj]]:
        return self.data.get(gvr, {})

    def by_uid(self, uid: str) -> JsonObj | None:
        ref = self.uids.get(uid)
        return None if ref is None else self.data[ref[0]][ref[1]][ref[2]]

    def iter(self, gvr: GVR, namespace: str | None = None) -> Iterator[JsonObj]:
        by_ns = self.data.get(gvr, {})
        if namespace is not None:
            yield from by_ns.get(namespace, {}).values()
            return
        for objs in by_ns.values():
            yield from objs.values()

    def put(self, ref: Ref, obj: JsonObj, old: JsonObj | None) -> None:
        self.data.setdefault(ref[0], {}).setdefault(ref[1], {})[ref[2]] = obj
        self.uids[obj["metadata"]["uid"]] = ref
        self._index_owners(ref, old, obj)

    def pop(self, ref: Ref) -> JsonObj:
        stored = self.data[ref[0]][ref[1]].pop(ref[2])
        self.uids.pop(stored["metadata"]["uid"], None)
        self._index_owners(ref, stored, None)
        return stored

    def _index_owners(self, ref: Ref, old: JsonObj | None, new: JsonObj | None) -> None:
        before = {o["uid"] for o in (old or {}).get("metadata", {}).get("ownerReferences") or ()}
        after = {o["uid"] for o in (new or {}).get("metadata", {}).get("ownerReferences") or ()}
        for uid in before - after:
            deps = self.dependents.get(uid)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self.dependents[uid]
        for uid in after - before:
            self.dependents.setdefault(uid, set()).add(ref)
            if uid not in self.uids:
                self.dangling.add(ref)  # an owner that does not exist: for the collector
