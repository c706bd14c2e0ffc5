"""Which pools an assignment may use: healthy ones, then hot spares, then kept-out ones (pure).

`allocate_recovering(requests, domains, occupancy, kept_out)` decides in three tiers:

1. **Healthy non-spare pools**: neither kept out (`pool_health.kept_out`) nor spares. If they
   hold the requests now, that is the answer.
2. **Hot spares** beside them (domains whose nodes carry `jobset-infra/spare-pool: "true"`),
   only when a non-spare pool of the key is *lost*: kept out after an infrastructure failure
   (present or deleted), or with nodes that are not ready. Spares are outside Kueue's quota:
   they stand in for lost capacity, never add to it. They are taken after every healthy
   non-spare pool (`allocate`'s `rank`), so with `RestartJob` only the failed slice moves,
   onto a spare, and a RestartJobSet restart takes as few spares as there are pools lost.
   Without a lost pool a JobSet that does not fit waits, and its condition says the spares
   are kept for recovery.
3. **Everything**, kept-out pools too (after the healthy pools and the spares, if opened),
   but only when the tier
   before could not hold the Jobs even once the pools held by other JobSets are free: the
   Jobs wait for those rather than take a pool that failed; a restart on a pool that failed
   recently beats no restart at all.

"Once free" counts as held for good the pools held by the JobSet's own other Jobs (with
`RestartJob` its other slices keep running), so a restarted slice never waits for its
siblings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from jobset_infra.api.resilience import SPARE_POOL_LABEL
from jobset_infra.placement.allocate import Assignment, NoFit, allocate
from jobset_infra.placement.domains import Domain, domain_sort_key
from jobset_infra.placement.jobs import PlacementRequest
from jobset_infra.placement.occupancy import DomainId, Occupancy
from jobset_infra.placement.pool_health import KeptOut

__all__ = ["Recovery", "allocate_recovering", "is_spare", "lost_domains"]


@dataclass(frozen=True, slots=True)
class Recovery:
    """An assignment (or why none) and what it took beyond the healthy non-spare pools."""

    result: Assignment | NoFit
    aside: tuple[KeptOut, ...] = ()
    """Kept-out domains among the candidates (left aside unless `used_kept_out`)."""
    spares: tuple[str, ...] = ()
    """Spare domains the assignment took, in name order."""
    lost: tuple[str, ...] = ()
    """Non-spare domains lost (kept out or with nodes not ready) when spares were opened."""
    used_kept_out: bool = False
    """No healthy pool or spare could hold the Jobs even once others' pools are free, so
    kept-out pools were allowed."""


def is_spare(domain: Domain) -> bool:
    """Return True when the domain is a hot-spare pool (any node labelled as one)."""
    return any(n.labels.get(SPARE_POOL_LABEL) == "true" for n in domain.nodes)


def lost_domains(
    domains: Sequence[Domain], kept_out: Mapping[DomainId, KeptOut], topology_keys: set[str]
) -> tuple[str, ...]:
    """Return the non-spare domains of `topology_keys` that are lost: kept out (present or
    not: a deleted pool's failure stays in the ledger) or with a node that is not ready."""
    spares = {(d.topology_key, d.name) for d in domains if is_spare(d)}
    lost = {name for (key, name) in kept_out if key in topology_keys and (key, name) not in spares}
    lost |= {d.name for d in domains
             if d.topology_key in topology_keys and not is_spare(d) and not d.healthy}
    return tuple(sorted(lost, key=domain_sort_key))


def allocate_recovering(
    requests: Sequence[PlacementRequest],
    domains: Sequence[Domain],
    occupancy: Occupancy,
    kept_out: Mapping[DomainId, KeptOut],
) -> Recovery:
    """Return the assignment of the first tier that holds the requests (module docstring)."""
    slot = {id(d): (d.topology_key, d.name) for d in domains}
    aside = tuple(kept_out[slot[id(d)]] for d in domains if slot[id(d)] in kept_out)
    spares = frozenset(slot[id(d)] for d in domains if is_spare(d))
    if not aside and not spares:
        return Recovery(allocate(requests, domains, occupancy))
    # 1. healthy non-spare pools
    tier = [d for d in domains if slot[id(d)] not in kept_out and slot[id(d)] not in spares]
    result = allocate(requests, tier, occupancy)
    if isinstance(result, Assignment):
        return Recovery(result, aside)
    # 2. hot spares beside them, when a non-spare pool was lost
    lost = lost_domains(domains, kept_out, {r.topology_key for r in requests})
    opened = spares if lost else frozenset()
    if opened:
        tier = [d for d in domains if slot[id(d)] not in kept_out]
        result = allocate(requests, tier, occupancy, dict.fromkeys(opened, 1))
        if isinstance(result, Assignment):
            return Recovery(result, aside, _taken(result, opened), lost)
    # Wait while the tier could hold the Jobs once pools held by others or stopping are free.
    if not aside or isinstance(
        allocate(requests, tier, _settled(occupancy, requests), dict.fromkeys(opened, 1)),
        Assignment
    ):
        kept = 0 if opened else len(spares)
        return Recovery(_spares_kept(result, kept), aside, (), lost if opened else ())
    # 3. everything, kept-out pools too: after the healthy ones and the spares (when opened)
    tier = [d for d in domains if slot[id(d)] not in spares or opened]
    rank = {**dict.fromkeys(opened, 1), **dict.fromkeys(kept_out, 2)}
    result = allocate(requests, tier, occupancy, rank)
    return Recovery(result, aside, _taken(result, opened), lost if opened else (), True)


def _settled(occupancy: Occupancy, requests: Sequence[PlacementRequest]) -> Occupancy:
    """Return the occupancy that lasts: pools held by the requesting JobSet's own other Jobs."""
    owners = {r.owner for r in requests if r.owner}
    keys = {r.key for r in requests}
    holders = {
        domain: kept
        for domain, views in occupancy.holders.items()
        if (kept := tuple(v for v in views if v.owner in owners and v.key not in keys))
    }
    return Occupancy(holders)


def _taken(result: Assignment | NoFit, spares: frozenset[DomainId]) -> tuple[str, ...]:
    if not isinstance(result, Assignment):
        return ()
    names = {name for _, name in spares}
    return tuple(sorted(set(result.domains.values()) & names, key=domain_sort_key))


def _spares_kept(result: Assignment | NoFit, spares: int) -> Assignment | NoFit:
    if isinstance(result, NoFit) and spares:
        return replace(result, message=f"{result.message}; {spares} hot-spare pool(s) are kept "
                       "for a pool lost to an infrastructure failure")
    return result
