"""Assign free, fitting domains to a JobSet's Jobs, all or nothing (pure; no I/O).

`allocate(requests, domains, occupancy)` returns an `Assignment` (Job key -> domain) covering
every request, or a `NoFit` explaining which domains exist, which are busy and why none fits.
No partial slice is ever started: a JobSet whose Jobs cannot all be placed gets nothing.

The choice is deterministic (the same inputs give the same domains on every replica):
1. a domain pinned by the Job's own nodeSelector is the only candidate;
2. otherwise domains nobody holds come first, then domains held only by other priority levels
   (upstream scoping: a higher-priority JobSet may take a pool a lower one is being preempted from);
3. within a tier, the domain the Job had before (resume), then the smallest domain that fits
   (keeping big pools for big Jobs), then natural name order;
4. the Jobs are matched to domains by augmenting paths, so if any complete assignment exists,
   one is found even when a greedy pass would have painted itself into a corner.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from jobset_infra.controller.placement.domains import Domain, domain_sort_key
from jobset_infra.controller.placement.fit import Fit, fit
from jobset_infra.controller.placement.jobs import JobPlacementView, PlacementRequest
from jobset_infra.controller.placement.occupancy import Occupancy

__all__ = ["Assignment", "NoFit", "allocate", "placed_views"]

_MAX_LISTED = 8  # domains named per category in a NoFit message, so conditions stay readable


@dataclass(frozen=True, slots=True)
class Assignment:
    """Every request placed: Job key ("<namespace>/<name>") -> domain name."""

    domains: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NoFit:
    """Nothing was placed; `message` says which domains exist, which are busy and why none fits."""

    topology_key: str
    message: str
    unplaced: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Candidate:
    tier: int
    domain: Domain
    room: int


def _candidates(
    request: PlacementRequest, domains: Sequence[Domain], occupancy: Occupancy
) -> list[_Candidate]:
    out = []
    for domain in domains:
        if domain.topology_key != request.topology_key:
            continue
        if occupancy.blockers(domain.topology_key, domain.name, request.scope, request.key):
            continue
        result = fit(request, domain)
        if not result.ok:
            continue
        held = occupancy.holders_of(domain.topology_key, domain.name)
        tier = 0 if not any(v.key != request.key for v in held) else 1
        out.append(_Candidate(tier, domain, result.room))
    out.sort(
        key=lambda cand: (
            cand.tier,
            cand.domain.name != request.previous,
            cand.room,
            domain_sort_key(cand.domain.name),
        )
    )
    return out


def _augment(
    i: int,
    options: Sequence[list[_Candidate]],
    owner_of: dict[tuple[str, str], int],
    seen: set[tuple[str, str]],
) -> bool:
    # A free slot first, in preference order: Jobs already matched move only when they must.
    for cand in options[i]:
        slot = (cand.domain.topology_key, cand.domain.name)
        if slot not in owner_of:
            owner_of[slot] = i
            return True
    for cand in options[i]:
        slot = (cand.domain.topology_key, cand.domain.name)
        if slot in seen:
            continue
        seen.add(slot)
        if _augment(owner_of[slot], options, owner_of, seen):
            owner_of[slot] = i
            return True
    return False


def _match(options: Sequence[list[_Candidate]]) -> dict[int, str] | None:
    # Most constrained Jobs first; each later Job may move an earlier one along an augmenting path.
    order = sorted(range(len(options)), key=lambda i: (len(options[i]), i))
    owner_of: dict[tuple[str, str], int] = {}
    for i in order:
        if not _augment(i, options, owner_of, set()):
            return None
    return {i: slot[1] for slot, i in owner_of.items()}


def allocate(
    requests: Sequence[PlacementRequest], domains: Sequence[Domain], occupancy: Occupancy
) -> Assignment | NoFit:
    """Return a domain for every request, or a NoFit saying why that is impossible now."""
    if not requests:
        return Assignment()
    options = [_candidates(r, domains, occupancy) for r in requests]
    matched = _match(options)
    if matched is not None:
        return Assignment({requests[i].key: name for i, name in matched.items()})
    return _no_fit(requests, options, domains, occupancy)


def placed_views(
    requests: Iterable[PlacementRequest], assignment: Assignment
) -> tuple[JobPlacementView, ...]:
    """Return occupancy views for the Jobs of an assignment, as if they were already created."""
    return tuple(
        JobPlacementView(
            key=r.key,
            uid="",
            owner=r.owner,
            topology_key=r.topology_key,
            domain=assignment.domains[r.key],
            scope=r.scope,
            holds_domain=True,
        )
        for r in requests
        if r.key in assignment.domains
    )


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return f"{shown} and {more} more" if more > 0 else shown


def _why_not(
    request: PlacementRequest, domains: Sequence[Domain], occupancy: Occupancy
) -> tuple[list[str], list[str]]:
    busy, unfit = [], []
    for domain in domains:
        result: Fit = fit(request, domain)
        blockers = occupancy.blockers(domain.topology_key, domain.name, request.scope, request.key)
        if blockers:
            busy.append(f"{domain.name} (held by {blockers[0].key})")
        elif not result.ok:
            unfit.append(f"{domain.name} ({result.problem})")
    return busy, unfit


def _no_fit(
    requests: Sequence[PlacementRequest],
    options: Sequence[list[_Candidate]],
    domains: Sequence[Domain],
    occupancy: Occupancy,
) -> NoFit:
    # Explain with the most constrained request: the one with the fewest candidates.
    worst = min(range(len(requests)), key=lambda i: (len(options[i]), i))
    request = requests[worst]
    key = request.topology_key
    same_key = [d for d in domains if d.topology_key == key]
    need = sum(1 for r in requests if r.topology_key == key)
    unplaced = tuple(r.key for r in requests)
    if not same_key:
        message = (
            f"{need} Job(s) need a {key} domain each, but no node has the label {key} and no "
            "domain is declared in the controller's placement configuration"
        )
        return NoFit(key, message, unplaced)
    busy, unfit = _why_not(request, same_key, occupancy)
    free = len(same_key) - len(busy) - len(unfit)
    parts = [f"{need} Job(s) need a {key} domain each; {len(same_key)} exist"]
    parts.append(f"{free} free and fitting")
    if busy:
        parts.append(f"busy: {_listed(busy)}")
    if unfit:
        parts.append(f"not fitting {request.key} ({request.pods} pods): {_listed(unfit)}")
    return NoFit(key, "; ".join(parts), unplaced)
