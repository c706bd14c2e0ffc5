"""What an update does to each slice pool: replaced, shrunk or deleted (pure).

`pool_settings(plans)` records, per node pool, the settings whose change GKE cannot apply in
place (the replace-on-change fields of `replacement_fingerprint`, rule 13) and the most nodes
the pool may hold. The stack writes that record into the cluster after every update
(docs/resilience.md, "Pool changes that know about running JobSets"), and the next preview
compares it with the new plan: `pool_changes(before, after)` names every pool the update
replaces (a setting changed), shrinks (fewer nodes at most) or deletes (gone from the plan).
A pool that is new, grows or keeps its settings is not a change that can kill a workload.

A stack deployed before it kept the record has none: `settings_from_nodes` reads what the live
Nodes of its pools show instead (machine type, topology, zone), enough to see those settings
change or a pool of its groups go.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from jobset_infra.tpu import constants as c
from jobset_infra.tpu.pools import GROUP_COUNTS, SlicePoolsPlan, replacement_fingerprint

__all__ = [
    "MAX_NODES",
    "PoolChange",
    "PoolChangeKind",
    "PoolSettings",
    "pool_changes",
    "pool_settings",
    "settings_from_nodes",
]

MAX_NODES: Final = "max_nodes"
"""The setting that says how many nodes a pool may hold (fixed size, or autoscaling's max)."""

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
                       if k not in GROUP_COUNTS}
        most = plan.autoscaling.max_nodes if plan.autoscaling else plan.nodes_per_pool
        for pool in plan.pools:
            settings[pool.name] = {**fingerprint, MAX_NODES: str(most)}
    return settings


# The recorded settings a Node's labels show (GKE and the kubelet set them).
_NODE_SETTINGS: Final = (("machine_type", c.INSTANCE_TYPE_LABEL), ("topology", c.TOPOLOGY_LABEL),
                         ("zone", c.ZONE_LABEL))


def settings_from_nodes(nodes: Iterable[Mapping[str, Any]], groups: Collection[str]
                        ) -> dict[str, dict[str, str]]:
    """Return the settings the Nodes of slice pools in `groups` show, per pool.

    Only Nodes this package's pools label (`SLICE_GROUP_LABEL` one of `groups`: the stack's own
    groups, never another stack's pools in the same cluster); a pool's first Node speaks for it.
    """
    found: dict[str, dict[str, str]] = {}
    for node in nodes:
        labels = (node.get("metadata") or {}).get("labels") or {}
        pool = labels.get(c.GKE_NODEPOOL_LABEL)
        if not pool or labels.get(c.SLICE_GROUP_LABEL) not in groups or pool in found:
            continue
        found[str(pool)] = {key: str(labels[label]) for key, label in _NODE_SETTINGS
                            if label in labels}
    return found


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
