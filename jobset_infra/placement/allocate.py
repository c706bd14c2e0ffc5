"""Assign free, fitting domains to a JobSet's Jobs, all or nothing (pure; no I/O).

`allocate(requests, domains, occupancy)` returns an `Assignment` (Job key -> domain) covering
every request, or a `NoFit` explaining which domains exist, which are busy and why none fits.
No partial slice is ever started: a JobSet whose Jobs cannot all be placed gets nothing.

The choice is deterministic (the same inputs give the same domains on every replica):
1. a domain pinned by the Job's own nodeSelector is the only candidate;
2. otherwise domains nobody holds come first (empty ones before those whose last Job's pods are
   still stopping, so a restarted slice does not queue behind another slice's terminating pods),
   then domains held only by other priority levels (upstream scoping: a higher-priority JobSet
   may take a pool a lower one is being preempted from);
3. within a tier, the domain the Job had before (resume), then the smallest domain that fits
   (keeping big pools for big Jobs), then natural name order; above all that, a domain's
   `rank` (0 unless given: hot spares 1, pools that failed recently 2) orders the candidates,
   whatever their tier;
4. the Jobs are matched to domains by augmenting paths, so if any complete assignment exists,
   one is found even when a greedy pass would have painted itself into a corner.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from jobset_infra.placement.domains import Domain, domain_sort_key
from jobset_infra.placement.fit import Fit, fit
from jobset_infra.placement.jobs import JobPlacementView, PlacementRequest
from jobset_infra.placement.occupancy import Occupancy

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

    @property
    def slot(self) -> tuple[str, str]:
        return (self.domain.topology_key, self.domain.name)


def _shape(request: PlacementRequest) -> tuple[object, ...]:
    """Return what fit() depends on: the Jobs of one replicated job share it."""
    return (
        request.topology_key,
        request.pods,
        tuple(sorted(request.per_pod.items())),
        tuple(sorted(request.node_selector.items())),
        json.dumps(request.affinity, sort_keys=True) if request.affinity else "",
        request.tolerations,
        request.pinned,
    )


class _Options:
    """Candidate lists per request, computed once per distinct (shape, priority scope).

    Jobs of one replicated job are identical for placement, so a JobSet of 512 slices costs one
    pass over the domains, not 512; only a Job with a previous domain or one it still holds gets
    a list of its own.
    """

    def __init__(
        self, domains: Sequence[Domain], occupancy: Occupancy, rank: Mapping[tuple[str, str], int]
    ) -> None:
        self.domains, self.occupancy, self.rank = domains, occupancy, rank
        self._fits: dict[tuple[object, ...], list[tuple[Domain, int]]] = {}
        self._lists: dict[tuple[tuple[object, ...], str], list[_Candidate]] = {}
        self._holding = {v.key for vs in occupancy.holders.values() for v in vs}

    def fitting(self, request: PlacementRequest) -> list[tuple[Domain, int]]:
        shape = _shape(request)
        if shape not in self._fits:
            results = (
                (d, fit(request, d)) for d in self.domains if d.topology_key == request.topology_key
            )
            self._fits[shape] = [(d, r.room) for d, r in results if r.ok]
        return self._fits[shape]

    def of(self, request: PlacementRequest) -> list[_Candidate]:
        if request.key in self._holding:
            return self._build(request)
        key = (_shape(request), request.scope)
        if key not in self._lists:
            self._lists[key] = self._build(replace(request, previous=None))
        shared = self._lists[key]
        return _preferring(shared, request.previous, self.rank) if request.previous else shared

    def _build(self, request: PlacementRequest) -> list[_Candidate]:
        out = []
        for domain, room in self.fitting(request):
            name, key = domain.name, domain.topology_key
            if self.occupancy.blockers(key, name, request.scope, request.key):
                continue
            held = any(v.key != request.key for v in self.occupancy.holders_of(key, name))
            tier = 2 if held else 1 if (key, name) in self.occupancy.draining else 0
            out.append(_Candidate(tier, domain, room))
        out.sort(
            key=lambda cand: (
                self.rank.get(cand.slot, 0),
                cand.tier,
                cand.domain.name != request.previous,
                cand.room,
                domain_sort_key(cand.domain.name),
            )
        )
        return out


def _preferring(
    cands: list[_Candidate], previous: str, rank: Mapping[tuple[str, str], int]
) -> list[_Candidate]:
    """Return `cands` with the domain named `previous` first within its tier (resume)."""
    found = next((c for c in cands if c.domain.name == previous), None)
    if found is None:
        return cands
    pos = cands.index(found)
    first = next(i for i, c in enumerate(cands) if c.tier == found.tier
                 and rank.get(c.slot, 0) == rank.get(found.slot, 0))
    return [*cands[:first], found, *cands[first:pos], *cands[pos + 1 :]]


class _Matcher:
    """Bipartite matching of Jobs to domains by augmenting paths (Kuhn), free slots first."""

    def __init__(self, options: Sequence[list[_Candidate]]) -> None:
        self.options = options
        self.owner_of: dict[tuple[str, str], int] = {}
        self._cursor: dict[int, int] = {}  # per shared list: slots before it are all taken

    def _free(self, i: int) -> _Candidate | None:
        cands = self.options[i]
        start = self._cursor.get(id(cands), 0)
        for pos in range(start, len(cands)):
            if cands[pos].slot not in self.owner_of:
                self._cursor[id(cands)] = pos
                return cands[pos]
        self._cursor[id(cands)] = len(cands)
        return None

    def augment(self, i: int, seen: set[tuple[str, str]]) -> bool:
        # A free slot first, in preference order: Jobs already matched move only when they must.
        free = self._free(i)
        if free is not None:
            self.owner_of[free.slot] = i
            return True
        for cand in self.options[i]:
            if cand.slot in seen:
                continue
            seen.add(cand.slot)
            if self.augment(self.owner_of[cand.slot], seen):
                self.owner_of[cand.slot] = i
                return True
        return False

    def match(self) -> dict[int, str] | None:
        slots = {cand.slot for cands in {id(o): o for o in self.options}.values() for cand in cands}
        if len(slots) < len(self.options):
            return None  # fewer candidate domains than Jobs: no matching can exist
        # Most constrained Jobs first; a later Job may move an earlier one along an augmenting path.
        for i in sorted(range(len(self.options)), key=lambda i: (len(self.options[i]), i)):
            if not self.augment(i, set()):
                return None
        return {i: slot[1] for slot, i in self.owner_of.items()}


def allocate(
    requests: Sequence[PlacementRequest],
    domains: Sequence[Domain],
    occupancy: Occupancy,
    rank: Mapping[tuple[str, str], int] | None = None,
) -> Assignment | NoFit:
    """Return a domain for every request, or a NoFit saying why that is impossible now.

    `rank`: (topology key, domain) -> how late to take it (0, the default, first): hot spares
    and pools that failed recently go after the others.
    """
    if not requests:
        return Assignment()
    table = _Options(domains, occupancy, rank or {})
    options = [table.of(r) for r in requests]
    matched = _Matcher(options).match()
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
    busy: list[str] = []
    unfit: list[tuple[int, str]] = []
    for domain in domains:
        result: Fit = fit(request, domain)
        blockers = occupancy.blockers(domain.topology_key, domain.name, request.scope, request.key)
        if blockers:
            busy.append(f"{domain.name} (held by {blockers[0].key})")
        elif not result.ok:
            unfit.append((_distance(result.problem), f"{domain.name} ({result.problem})"))
    # Nearest misses first: the list is cut at _MAX_LISTED, and a pool with the right labels
    # but an untolerated taint says more than ten pools of another accelerator.
    return busy, [reason for _, reason in sorted(unfit, key=lambda item: item[0])]


def _distance(problem: str) -> int:
    """How far a domain is from fitting: wrong labels (2), wrong affinity (1), else (0)."""
    if problem.startswith("nodeSelector"):
        return 2
    return 1 if "node affinity" in problem else 0


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
