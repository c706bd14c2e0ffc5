"""Whether an update may change the slice pools under running JobSets, and what it says (pure).

The stack records each pool's replace-on-change settings in the cluster after every update
(ConfigMap `POOL_RECORD`, `tpu.pool_changes.pool_settings`); the next run reads that record,
the JobSets, their Jobs and Kueue's Workloads back (`stack.live`; without a record, the
Nodes of the stack's pools) and `guard(...)` decides:

* no running JobSet on a pool the update replaces, shrinks or deletes: go ahead;
* some, and `jobset-infra:drain_jobsets` is not set: refuse, at preview and at update, naming
  each JobSet (namespace/name), the pools under it and the fix;
* some, and it is set: go ahead, and the update drains them (`PoolGuard.drains`): cordon the
  changed pools' Nodes, suspend each JobSet, change the pools, then resume them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from jobset_infra.placement.drain import AtRiskJobSet, at_risk_report, jobsets_at_risk
from jobset_infra.stack.checks import NAMESPACE
from jobset_infra.tpu.constants import GKE_NODEPOOL_LABEL
from jobset_infra.tpu.pool_changes import (
    PoolChange,
    PoolSettings,
    pool_changes,
    pool_settings,
    settings_from_nodes,
)

if TYPE_CHECKING:
    from jobset_infra.stack.config import StackConfig

__all__ = [
    "DRAIN_KEY",
    "POOL_RECORD",
    "POOL_RECORD_KEY",
    "LiveView",
    "PoolGuard",
    "drained_keys",
    "guard",
    "guard_stack",
    "parse_pool_record",
    "pool_record_data",
]

DRAIN_KEY: Final = f"{NAMESPACE}:drain_jobsets"
POOL_RECORD: Final = "jobset-infra-slice-pools"
"""The ConfigMap (in the controller's namespace) holding the pools of the last update."""
POOL_RECORD_KEY: Final = "pools.json"


@dataclass(frozen=True)
class LiveView:
    """What the cluster holds that the guard reads (`stack.live` reads it; empty lists when
    there is no API)."""

    jobsets: list[dict[str, Any]] = field(default_factory=list)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    record: Mapping[str, Any] | None = None
    """The pool record's ConfigMap data, None when there is none."""
    nodes: list[dict[str, Any]] = field(default_factory=list)
    """Every Node (what a stack without a record reads its pools' settings from)."""


@dataclass(frozen=True)
class PoolGuard:
    """What this update does to pools under running JobSets, and whether it may."""

    changes: tuple[PoolChange, ...]
    at_risk: tuple[AtRiskJobSet, ...]
    drain: bool
    """The stack opted in (`DRAIN_KEY`): drain the JobSets at risk instead of refusing."""

    @property
    def refused(self) -> bool:
        """Return whether the update must not run: JobSets at risk and no opt-in."""
        return bool(self.at_risk) and not self.drain

    @property
    def drains(self) -> tuple[AtRiskJobSet, ...]:
        """Return the JobSets the update suspends before the pools change (opt-in only)."""
        return self.at_risk if self.drain else ()

    def message(self) -> str:
        """Return what preview says (empty when no running JobSet is on a changed pool)."""
        if not self.at_risk:
            return ""
        listing = at_risk_report(self.at_risk)
        count = f"{len(self.at_risk)} running JobSet(s)"
        if self.drain:
            return (f"this update changes slice pools under {count}; {DRAIN_KEY} is set, so "
                    "`pulumi up` suspends them first and resumes them on the new pools:\n"
                    f"{listing}")
        return (f"this update would kill {count} by changing the slice pools they run on:\n"
                f"{listing}\nto let `pulumi up` suspend them first and resume them on the new "
                f"pools, set {DRAIN_KEY}: true (pulumi config set {DRAIN_KEY} true); or stop "
                "them yourself, or keep the pools as they are")


def guard(previous: PoolSettings | None, current: PoolSettings,
          jobsets: Iterable[Mapping[str, Any]], jobs: Iterable[Mapping[str, Any]],
          workloads: Iterable[Mapping[str, Any]], *, drain: bool,
          nodes: Iterable[Mapping[str, Any]] = (), groups: Collection[str] = ()) -> PoolGuard:
    """Return the decision for an update from pools `previous` (the record) to `current`, with
    these JobSets running. Without a record (a stack deployed before it kept one), what the
    Nodes of the stack's slice-pool `groups` show stands in for it."""
    nodes = list(nodes)
    if previous is None:
        previous = settings_from_nodes(nodes, groups)
    changes = pool_changes(previous, current)
    if not changes:
        return PoolGuard(changes, (), drain)
    # A TAS assignment by hosts only is read through the Nodes' pool labels.
    node_pools = {str(meta["name"]): str(pool) for node in nodes
                  if (meta := node.get("metadata") or {}).get("name")
                  and (pool := (meta.get("labels") or {}).get(GKE_NODEPOOL_LABEL))}
    at_risk = jobsets_at_risk(changes, jobsets, jobs, workloads, node_pools=node_pools)
    return PoolGuard(changes, at_risk, drain)


def guard_stack(config: StackConfig, view: LiveView) -> tuple[PoolGuard, str]:
    """Return the decision for the stack `config` over what the cluster holds, and a problem
    with the pool record ('' if none): what `pulumi preview` (`stack.pool_drain`) and
    `jobset-infra plan --kubeconfig` both decide, the same way."""
    previous, problem = parse_pool_record(view.record)
    plans = config.pool_plans()
    decision = guard(previous, pool_settings(plans), view.jobsets, view.jobs, view.workloads,
                     drain=config.drain_jobsets, nodes=view.nodes,
                     groups={plan.name for plan in plans})
    return decision, problem


def pool_record_data(current: PoolSettings) -> dict[str, str]:
    """Return the record's ConfigMap data for pools `current` (keys sorted, stable)."""
    return {POOL_RECORD_KEY: json.dumps(current, sort_keys=True)}


def parse_pool_record(data: Mapping[str, Any] | None) -> tuple[PoolSettings | None, str]:
    """Return the recorded pools of a record's ConfigMap data, and a problem ('' if none).

    A record that cannot be read counts as none, with the problem said (a warning): the guard
    then knows of no pool change rather than inventing one.
    """
    if not data or POOL_RECORD_KEY not in data:
        return None, ""
    try:
        parsed = json.loads(str(data[POOL_RECORD_KEY]))
    except json.JSONDecodeError as err:
        return None, f"ConfigMap {POOL_RECORD}: {POOL_RECORD_KEY} is not JSON ({err})"
    if not _is_settings(parsed):
        return None, (f"ConfigMap {POOL_RECORD}: {POOL_RECORD_KEY} is not a mapping of pool "
                      "names to settings")
    return parsed, ""


def _is_settings(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(pool, str) and isinstance(settings, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in settings.items())
        for pool, settings in value.items())


def drained_keys(at_risk: Sequence[AtRiskJobSet]) -> list[str]:
    """Return the namespace/name of each JobSet, for the drain record and the outputs."""
    return [risk.key for risk in at_risk]
