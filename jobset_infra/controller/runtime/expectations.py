"""Create/delete expectations per JobSet: writes we made but have not yet seen in the cache.

Why: after a fan-out of thousands of creates the Job informer lags behind; a reconcile on that
stale cache would decide to create (or delete) the same Jobs again. While a JobSet has unobserved
writes, the controller does not make create/delete decisions for it; the watch event that
fulfils the last expectation requeues it. Expectations expire (5 min, like kube-controller-manager)
so a lost event can delay, never wedge, a JobSet.

Pending creates carry an opaque payload (the placement domain a created Job was given), so the
exclusive-placement occupancy can count Jobs that exist but are not in the cache yet.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class _Pending:
    creates: dict[str, Any] = field(default_factory=dict)  # job name -> payload
    deletes: set[str] = field(default_factory=set)  # job uids
    deadline: float = 0.0


class Expectations:
    def __init__(self, timeout: float = 300.0) -> None:
        self.timeout = timeout
        self._pending: dict[Hashable, _Pending] = {}

    def expect(
        self,
        key: Hashable,
        now: float,
        creates: Mapping[str, Any] | None = None,
        deletes: set[str] | frozenset[str] | None = None,
    ) -> None:
        """Record writes about to be sent (call before sending, so no event can race past)."""
        if not creates and not deletes:
            return
        pending = self._pending.setdefault(key, _Pending())
        pending.creates.update(creates or {})
        pending.deletes.update(deletes or ())
        pending.deadline = now + self.timeout

    def observe_create(self, key: Hashable, name: str) -> bool:
        """Job `name` of `key` is visible (or its create failed). True if that settled `key`."""
        pending = self._pending.get(key)
        if pending is None or pending.creates.pop(name, _MISSING) is _MISSING:
            return False
        return self._settle(key, pending)

    def observe_delete(self, key: Hashable, uid: str) -> bool:
        """Job `uid` of `key` is gone or deleting (or its delete failed). True if `key` settled."""
        pending = self._pending.get(key)
        if pending is None or uid not in pending.deletes:
            return False
        pending.deletes.discard(uid)
        return self._settle(key, pending)

    def satisfied(self, key: Hashable, now: float) -> bool:
        """True when nothing is pending for `key`, or what is pending has expired (then dropped)."""
        pending = self._pending.get(key)
        if pending is None:
            return True
        if now >= pending.deadline:
            del self._pending[key]
            return True
        return False

    def expired(self, key: Hashable, now: float) -> bool:
        pending = self._pending.get(key)
        return pending is not None and now >= pending.deadline

    def deadline(self, key: Hashable) -> float | None:
        pending = self._pending.get(key)
        return pending.deadline if pending else None

    def forget(self, key: Hashable) -> None:
        """The JobSet is gone: drop whatever was pending for it."""
        self._pending.pop(key, None)

    def pending_creates(self) -> Iterator[tuple[Hashable, str, Any]]:
        """(key, job name, payload) of every create not yet observed, across all JobSets."""
        for key, pending in self._pending.items():
            for name, payload in pending.creates.items():
                yield key, name, payload

    def pending_count(self, key: Hashable) -> tuple[int, int]:
        pending = self._pending.get(key)
        return (len(pending.creates), len(pending.deletes)) if pending else (0, 0)

    def _settle(self, key: Hashable, pending: _Pending) -> bool:
        if pending.creates or pending.deletes:
            return False
        del self._pending[key]
        return True


_MISSING = object()
