"""Invariants checked on every write the sim's store commits (a store observer), so a violation
that lasts one resourceVersion is caught, not only what is left at the end.

- one Job per (namespace, name, restart attempt) ever: a second uid for the same pair means the
  controller created a Job twice (e.g. from a stale cache after a failover);
- a JobSet's `status.restarts` never goes down and never jumps by more than one in one write;
- an exclusive pool is never held by two Jobs at once (held = pod template targets the pool, not
  suspended, not finished, not being deleted: the controller's own definition);
- the highest attempt ever created for a JobSet equals its final `restarts`, and every attempt
  in between exists (no restart lost, none counted without its Jobs).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.sim.apiserver.resources import ResourceInfo
from jobset_infra.sim.apiserver.store import Store
from tests.reliability.scenario import POOL_KEY, attempt_of, finished


def _holds(job: dict[str, Any]) -> str | None:
    meta, spec = job["metadata"], job["spec"]
    if meta.get("deletionTimestamp") or spec.get("suspend") or finished(job):
        return None
    selector = (spec.get("template") or {}).get("spec", {}).get("nodeSelector") or {}
    pool = selector.get(POOL_KEY)
    return str(pool) if pool else None


@dataclass
class Invariants:
    """Attach with `store.observers.append(inv.observe)`; read `violations` afterwards."""

    violations: list[str] = field(default_factory=list)
    uids: dict[tuple[str, str, int], set[str]] = field(default_factory=lambda: defaultdict(set))
    attempts: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    restarts: dict[str, int] = field(default_factory=dict)
    holders: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    held_by: dict[str, str] = field(default_factory=dict)
    jobs_created: int = 0
    checks: int = 0
    trail: list[str] = field(default_factory=list)  # Job writes that touched a pool, for reports

    def observe(self, store: Store, kind: str, info: ResourceInfo, obj: dict[str, Any]) -> None:
        if info.gvr.resource == "jobs":
            self._job(kind, obj)
        elif info.gvr.resource == c.PLURAL:
            self._jobset(kind, obj)

    def _job(self, kind: str, job: dict[str, Any]) -> None:
        meta = job["metadata"]
        labels = meta.get("labels") or {}
        if c.RESTARTS_KEY not in labels:
            return
        self.checks += 1
        key = f"{meta.get('namespace')}/{meta['name']}"
        if kind == "ADDED":
            self.jobs_created += 1
            pair = (meta.get("namespace", ""), meta["name"], attempt_of(job))
            self.uids[pair].add(meta["uid"])
            if len(self.uids[pair]) > 1:
                self.violations.append(f"Job {key} attempt {pair[2]} created twice")
            self.attempts[labels[c.JOBSET_NAME_KEY]].add(pair[2])
        pool = None if kind == "DELETED" else _holds(job)
        if pool is not None or key in self.held_by:
            self.trail.append(
                f"rv={meta.get('resourceVersion')} {kind} {key} "
                f"attempt={labels[c.RESTARTS_KEY]} holds={pool}"
            )
        self._placement(key, pool)

    def _placement(self, key: str, pool: str | None) -> None:
        before = self.held_by.pop(key, None)
        if before is not None:
            self.holders[before].discard(key)
        if pool is None:
            return
        self.held_by[key] = pool
        self.holders[pool].add(key)
        if len(self.holders[pool]) > 1:
            history = "\n  ".join(self.trail[-12:])
            self.violations.append(
                f"pool {pool} shared by {sorted(self.holders[pool])}; last writes:\n  {history}"
            )

    def _jobset(self, kind: str, js: dict[str, Any]) -> None:
        if kind == "DELETED":
            return
        self.checks += 1
        name = js["metadata"]["name"]
        now = int((js.get("status") or {}).get("restarts", 0))
        before = self.restarts.get(name, 0)
        if now < before:
            self.violations.append(f"JobSet {name}: restarts went down {before} -> {now}")
        elif now > before + 1:
            self.violations.append(f"JobSet {name}: restarts jumped {before} -> {now}")
        self.restarts[name] = max(before, now)

    def attempt_gaps(self, final_restarts: dict[str, int]) -> list[str]:
        """JobSets whose created attempts are not exactly 0..restarts."""
        out = []
        for name, restarts in final_restarts.items():
            seen = self.attempts.get(name, set())
            if seen and seen != set(range(restarts + 1)):
                out.append(f"JobSet {name}: attempts {sorted(seen)} for restarts={restarts}")
        return out
