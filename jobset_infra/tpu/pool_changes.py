"""What an update does to each slice pool: replaced, shrunk or deleted (pure).

`pool_settings(plans)` records, per node pool, the settings whose change GKE cannot apply in
place (the replace-on-change fields of `replacement_fingerprint`, rule 13) and the most nodes
the pool may hold. The stack writes that record into the cluster after every update
(docs/resilience.md, "Pool changes that know about running JobSets"), and the next preview
compares it with the new plan: `pool_changes(before, after)` names every pool the update
replaces (a setting changed), shrinks (fewer nodes at most) or deletes (gone from the plan).
A pool that is new, grows or keeps its settings is not a change that can kill a workload.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from jobset_infra.tpu.pools import SlicePoolsPlan, replacement_fingerprint

__all__ = [
    "MAX_NODES",
    "PoolChange",
    "PoolChangeKind",
    "PoolSettings",
    "pool_changes",
    "pool_settings",
]

MAX_NODES: Final = "max_nodes"
"""The setting that says how many nodes a pool may hold (fixed size, or autoscaling's max)."""
_GROUP_COUNTS: Final = frozenset({"slices", "spares"})  # the group's, not one pool's

PoolSettings = Mapping[str, Mapping[str, str]]
"""Pool name -> setting -> value, as `pool_settings` records them (plain strings: JSON)."""


class PoolChangeKind(StrEnum):
    """What an update does to a pool that kills the Pods running on it."""

    REPLACED = "replaced"
    SHRUNK = "shrunk"
    DELETED = "deleted"


@dataclass(frozen=True)
class PoolChange:
    """One pool the update replaces, shrinks or deletes, and why (a sentence fragment)."""

    pool: str
    kind: PoolChangeKind
    detail: str

    def describe(self) -> str:
        """Return e.g. ``v5e-0 (replaced: machine_type 'a' -> 'b')``."""
        return f"{self.pool} ({self.kind}: {self.detail})"


def pool_settings(plans: Iterable[SlicePoolsPlan]) -> dict[str, dict[str, str]]:
    """Return every pool of `plans` with its replace-on-change settings and its `max_nodes`."""
    settings: dict[str, dict[str, str]] = {}
    for plan in plans:
        fingerprint = {k: v for k, v in replacement_fingerprint(plan).items()
                       if k not in _GROUP_COUNTS}
        most = plan.autoscaling.max_nodes if plan.autoscaling else plan.nodes_per_pool
        for pool in plan.pools:
            settings[pool.name] = {**fingerprint, MAX_NODES: str(most)}
    return settings


def pool_changes(before: PoolSettings, after: PoolSettings) -> tuple[PoolChange, ...]:
    """Return the pools of `before` that `after` replaces, shrinks or deletes, by pool name."""
    changes = []
    for pool in sorted(before):
        change = _change(pool, before[pool], after.get(pool))
        if change is not None:
            changes.append(change)
    return tuple(changes)


def _change(pool: str, old: Mapping[str, str], new: Mapping[str, str] | None
            ) -> PoolChange | None:
    if new is None:
        return PoolChange(pool, PoolChangeKind.DELETED, "no longer in the stack's pools")
    replaced = [f"{key} {old[key]!r} -> {new[key]!r}" for key in sorted(old)
                if key != MAX_NODES and key in new and old[key] != new[key]]
    if replaced:
        return PoolChange(pool, PoolChangeKind.REPLACED, ", ".join(replaced))
    most_before, most_after = _count(old.get(MAX_NODES)), _count(new.get(MAX_NODES))
    if most_before is not None and most_after is not None and most_after < most_before:
        return PoolChange(pool, PoolChangeKind.SHRUNK,
                          f"{MAX_NODES} {old[MAX_NODES]} -> {new[MAX_NODES]}")
    return None


def _count(value: str | None) -> int | None:
    # A record written by another version may lack the count or spell it oddly: unknown is
    # never read as fewer nodes.
    return int(value) if value is not None and value.isdigit() else None
