"""Which running JobSets a pool change kills, and how to stop and restart each (pure).

`jobsets_at_risk(changes, ...)` names each running JobSet on a pool that `tpu.pool_changes`
says the update replaces, shrinks or deletes. A JobSet is *on* a pool when either placement
put it there, read from the cluster's objects, never from memory:

* the controller's (`placement: controller`): it records the pool of every exclusive child Job
  in the Job itself, ``nodeSelector[cloud.google.com/gke-nodepool] = <pool>`` on its pod
  template (`placement.jobs`), held while the Job runs (not finished, suspended or deleting);
* Kueue's TAS (`placement: kueue-tas`): its Jobs name no pool; Kueue writes where their pods
  go into the admitted Workload (`status.admission.podSetAssignments[].topologyAssignment`:
  the Topology's levels, then each domain's value per level). Our Topology's levels are the
  pool, then the host (`tpu.placer.TAS_LEVELS`), but Kueue (0.19.2, as the real manager
  writes it) keeps only the host level when the last level is the host: the hosts are read
  through their Nodes' pool label (`node_pools`); a pool level, when written, is read as is.
  Held while the Workload is admitted and not finished (Kueue takes the admission back when it
  evicts).

`Drain` says how to stop it so that it can start again later:

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
from jobset_infra.tpu.constants import GKE_NODEPOOL_LABEL, HOSTNAME_LABEL
from jobset_infra.tpu.pool_changes import PoolChange

__all__ = [
    "DRAINED_ANNOTATION",
    "AtRiskJobSet",
    "Drain",
    "DrainVia",
    "at_risk_report",
    "drain_from_annotation",
    "jobsets_at_risk",
    "tas_assigned",
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
    node_pools: Mapping[str, str] | None = None,
) -> tuple[AtRiskJobSet, ...]:
    """Return the running JobSets on a changed pool (module docstring), by namespace/name.

    `jobs` and `workloads` as the API server returns them. `pool_key` is the node label naming
    a pool: a Job placed on another topology key is not on a pool this update changes.
    `node_pools`: node name -> pool, for a TAS assignment whose levels name hosts only.
    """
    workloads = list(workloads)
    by_pool = {change.pool: change for change in changes}
    hit: dict[str, set[str]] = {}
    for job in jobs:
        view = job_view_from_manifest(job)
        if (view is None or not view.holds_domain or not view.owner
                or view.topology_key != pool_key or view.domain not in by_pool):
            continue
        hit.setdefault(view.owner, set()).add(str(view.domain))
    for workload in workloads:
        owner = _jobset_owner(workload)
        pools = tas_assigned(workload, pool_key, node_pools or {}) & by_pool.keys()
        if owner and pools:
            hit.setdefault(owner, set()).update(pools)
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


def tas_assigned(workload: Mapping[str, Any], pool_key: str = GKE_NODEPOOL_LABEL,
                 node_pools: Mapping[str, str] | None = None) -> set[str]:
    """Return the pools Kueue's TAS assigned the Workload's pods to, while it is admitted and
    not finished; empty for a Workload without a topology assignment."""
    status = workload.get("status") or {}
    if not _condition(status, "Admitted") or _condition(status, "Finished"):
        return set()
    pools: set[str] = set()
    for podset in (status.get("admission") or {}).get("podSetAssignments") or ():
        assignment = podset.get("topologyAssignment") if isinstance(podset, Mapping) else None
        if not isinstance(assignment, Mapping):
            continue
        levels = list(assignment.get("levels") or ())
        if pool_key in levels:
            pools |= _level_values(assignment, levels.index(pool_key))
        elif HOSTNAME_LABEL in levels and node_pools:
            hosts = _level_values(assignment, levels.index(HOSTNAME_LABEL))
            pools |= {node_pools[host] for host in hosts if host in node_pools}
    return pools


def _level_values(assignment: Mapping[str, Any], level: int) -> set[str]:
    """Every domain's value at `level`: v1beta2's slices (a value for all the slice's domains,
    or one per domain between a common prefix and suffix), or v1beta1's domains' values."""
    found: set[str] = set()
    for part in assignment.get("slices") or ():
        per_level = part.get("valuesPerLevel") or () if isinstance(part, Mapping) else ()
        values = per_level[level] if level < len(per_level) else {}
        if not isinstance(values, Mapping):
            continue
        if values.get("universal"):
            found.add(str(values["universal"]))
        individual = values.get("individual") or {}
        if isinstance(individual, Mapping):
            prefix, suffix = individual.get("prefix") or "", individual.get("suffix") or ""
            found |= {f"{prefix}{root}{suffix}" for root in individual.get("roots") or ()}
    for domain in assignment.get("domains") or ():
        values = domain.get("values") or () if isinstance(domain, Mapping) else ()
        if level < len(values):
            found.add(str(values[level]))
    return found


def _condition(status: Mapping[str, Any], kind: str) -> bool:
    return any(isinstance(cond, Mapping) and cond.get("type") == kind
               and cond.get("status") == "True" for cond in status.get("conditions") or ())


def _jobset_owner(workload: Mapping[str, Any]) -> str:
    meta = workload.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("kind") == c.KIND and ref.get("name"):
            return f"{meta.get('namespace', '')}/{ref['name']}"
    return ""


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
