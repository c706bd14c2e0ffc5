"""Which running JobSets a pool change kills, and how to stop and restart each (pure).

The controller records the pool of every exclusive child Job it placed in the Job itself:
``nodeSelector[cloud.google.com/gke-nodepool] = <pool>`` on its pod template (`placement.jobs`).
So what runs where is read from the cluster's Jobs, and `jobsets_at_risk(changes, ...)` names
each JobSet with a running exclusive Job on a pool that `tpu.pool_changes` says the update
replaces, shrinks or deletes. `Drain` says how to stop it so that it can start again later:

* queued (its ``kueue.x-k8s.io/queue-name`` label, and Kueue made its Workload): through Kueue,
  ``Workload.spec.active: false``. Kueue evicts it (suspending the JobSet, releasing its quota)
  and admits it again once ``active`` is true; a plain ``spec.suspend`` on a JobSet Kueue
  admitted would be undone by Kueue;
* otherwise ``JobSet.spec.suspend: true``, and false to resume.

Either way the child Jobs are suspended and lose their pools, and on resume the controller
places them on free pools of the new plan (`exclusive_placement.place_resumed_jobs`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.placement.jobs import job_view_from_manifest
from jobset_infra.tpu.constants import GKE_NODEPOOL_LABEL
from jobset_infra.tpu.pool_changes import PoolChange

__all__ = [
    "DRAINED_ANNOTATION",
    "AtRiskJobSet",
    "Drain",
    "DrainVia",
    "at_risk_report",
    "drain_from_annotation",
    "jobsets_at_risk",
]

DRAINED_ANNOTATION: Final = "jobset-infra.dev/drained-for-pool-change"
"""On a JobSet a stack update suspended: how to resume it (`Drain.annotation()`). It stays until
the resume, so an update that failed half-way resumes the JobSet on the next successful one."""


class DrainVia(StrEnum):
    """How a JobSet is stopped before a pool change and started again after it."""

    KUEUE = "kueue"  # Workload.spec.active
    SUSPEND = "suspend"  # JobSet.spec.suspend


@dataclass(frozen=True)
class Drain:
    """The one object to write to stop (and later restart) a JobSet."""

    via: DrainVia
    namespace: str
    name: str
    """The Workload's name (KUEUE) or the JobSet's (SUSPEND)."""

    def annotation(self) -> str:
        """Return the `DRAINED_ANNOTATION` value that says how to resume."""
        return f"{self.via}:{self.name}"


def drain_from_annotation(namespace: str, value: str) -> Drain | None:
    """Return the Drain a `DRAINED_ANNOTATION` value records (None if it is not ours)."""
    via, sep, name = value.partition(":")
    if not sep or not name or via not in set(DrainVia):
        return None
    return Drain(DrainVia(via), namespace, name)


@dataclass(frozen=True)
class AtRiskJobSet:
    """A running JobSet that the update would kill: where it runs, what happens there."""

    namespace: str
    name: str
    changes: tuple[PoolChange, ...]
    """The changes of the pools its running exclusive Jobs are on, by pool name."""
    drain: Drain

    @property
    def key(self) -> str:
        """Return ``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def describe(self) -> str:
        """Return e.g. ``default/train on v5e-0 (replaced: ...), v5e-1 (deleted: ...)``."""
        return f"{self.key} on {', '.join(change.describe() for change in self.changes)}"


def jobsets_at_risk(
    changes: Sequence[PoolChange],
    jobsets: Iterable[Mapping[str, Any]],
    jobs: Iterable[Mapping[str, Any]],
    workloads: Iterable[Mapping[str, Any]] = (),
    *,
    pool_key: str = GKE_NODEPOOL_LABEL,
) -> tuple[AtRiskJobSet, ...]:
    """Return the running JobSets with an exclusive Job on a changed pool, by namespace/name.

    `jobs` are child Jobs as the API server returns them; a Job counts while it holds its pool
    (not finished, suspended or being deleted). `pool_key` is the node label naming a pool: a
    Job placed on another topology key is not on a pool this update changes.
    """
    by_pool = {change.pool: change for change in changes}
    hit: dict[str, set[str]] = {}
    for job in jobs:
        view = job_view_from_manifest(job)
        if (view is None or not view.holds_domain or not view.owner
                or view.topology_key != pool_key or view.domain not in by_pool):
            continue
        hit.setdefault(view.owner, set()).add(str(view.domain))
    found = []
    for jobset in jobsets:
        meta = jobset.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if key not in hit or (jobset.get("spec") or {}).get("suspend") is True:
            continue
        found.append(AtRiskJobSet(
            namespace=str(meta.get("namespace", "")), name=str(meta.get("name", "")),
            changes=tuple(by_pool[pool] for pool in sorted(hit[key])),
            drain=_drain(jobset, workloads)))
    return tuple(sorted(found, key=lambda risk: risk.key))


def _drain(jobset: Mapping[str, Any], workloads: Iterable[Mapping[str, Any]]) -> Drain:
    meta = jobset.get("metadata") or {}
    namespace, uid = str(meta.get("namespace", "")), meta.get("uid")
    if c.KUEUE_QUEUE_NAME_LABEL in (meta.get("labels") or {}):
        for workload in workloads:
            wmeta = workload.get("metadata") or {}
            owned = any(ref.get("uid") == uid and ref.get("kind") == c.KIND
                        for ref in wmeta.get("ownerReferences") or ())
            if owned and wmeta.get("namespace") == namespace:
                return Drain(DrainVia.KUEUE, namespace, str(wmeta.get("name", "")))
    return Drain(DrainVia.SUSPEND, namespace, str(meta.get("name", "")))


def at_risk_report(at_risk: Sequence[AtRiskJobSet]) -> str:
    """Return one line per JobSet: which pools change under it and how."""
    return "\n".join(f"  {risk.describe()}" for risk in at_risk)
