"""Which domains are held, by which Jobs, at which priority (pure).

Built from `JobPlacementView`s of every exclusive Job in the cluster plus the runtime's in-flight
writes. Exclusivity is scoped by priority as upstream scopes it (its anti-affinity term matches
only pods of the same priority): a Job holds its domain against Jobs of its own priority scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from jobset_infra.placement.jobs import JobPlacementView

__all__ = ["DomainId", "Occupancy"]

DomainId = tuple[str, str]  # (topology key, domain name)


@dataclass(frozen=True, slots=True)
class Occupancy:
    """Domains held by exclusive Jobs: (topology key, domain) -> the views holding it."""

    holders: Mapping[DomainId, tuple[JobPlacementView, ...]] = field(default_factory=dict)
    draining: frozenset[DomainId] = frozenset()  # released by Jobs whose pods are still stopping

    @classmethod
    def from_views(cls, views: Iterable[JobPlacementView]) -> Occupancy:
        """Return the occupancy of these views; a later view of the same Job replaces an earlier.

        So the runtime passes its cache first and its in-flight writes after them.
        """
        latest: dict[str, JobPlacementView] = {}
        for view in views:
            latest[view.key] = view
        holders: dict[DomainId, list[JobPlacementView]] = {}
        for view in latest.values():
            if view.holds_domain and view.domain:
                holders.setdefault((view.topology_key, view.domain), []).append(view)
        draining = frozenset(
            (v.topology_key, v.domain) for v in latest.values() if v.draining and v.domain
        )
        return cls({k: tuple(sorted(v, key=lambda x: x.key)) for k, v in holders.items()}, draining)

    def holders_of(self, topology_key: str, domain: str) -> tuple[JobPlacementView, ...]:
        """Return every Job holding `domain`, whatever its priority."""
        return self.holders.get((topology_key, domain), ())

    def blockers(
        self, topology_key: str, domain: str, scope: str, job_key: str
    ) -> tuple[JobPlacementView, ...]:
        """Return the Jobs that keep `job_key` (priority `scope`) out of `domain`."""
        return tuple(
            v
            for v in self.holders_of(topology_key, domain)
            if v.scope == scope and v.key != job_key
        )

    def with_views(self, views: Iterable[JobPlacementView]) -> Occupancy:
        """Return this occupancy updated with more views (e.g. the Jobs just placed)."""
        current = [v for vs in self.holders.values() for v in vs]
        merged = Occupancy.from_views([*current, *views])
        return Occupancy(merged.holders, merged.draining | self.draining)

    def __len__(self) -> int:
        return sum(len(v) for v in self.holders.values())
