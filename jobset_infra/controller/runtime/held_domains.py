"""Which topology domains exclusive Jobs hold, as the controller's placement sees them.

The Job cache shows each exclusive Job's placement view; a Job this controller just created
holds its domain before its watch event arrives, so it is kept as in flight until the cache
shows that Job at the created resourceVersion or later. Both together are the occupancy a
placement decision reads, so two JobSets never get the same domain.
"""

from __future__ import annotations

from typing import Any

from jobset_infra.controller.runtime.caches import CachedJob
from jobset_infra.placement import JobPlacementView, job_view_from_manifest


def _rv(value: str) -> int:
    return int(value) if value.isdigit() else -1


class HeldDomains:
    def __init__(self) -> None:
        self._views: dict[str, JobPlacementView] = {}  # exclusive Jobs, from the cache
        self._inflight: dict[str, JobPlacementView] = {}  # written by us, not yet in the cache

    def track(self, job_key: str, new: CachedJob | None) -> None:
        """The cache's latest of Job `job_key` (None: gone)."""
        if new is not None and new.placement is not None:
            self._views[job_key] = new.placement
        else:
            self._views.pop(job_key, None)
        pending = self._inflight.get(job_key)
        if pending is not None and (
            new is None or _rv(new.child.resource_version) >= _rv(pending.resource_version)
        ):
            del self._inflight[job_key]

    def record_created(self, created: dict[str, Any]) -> None:
        """A Job we just created holds its domain before the informer shows it."""
        view = job_view_from_manifest(created)
        if view is not None and view.key not in self._views:
            self._inflight[view.key] = view

    def views(self) -> list[JobPlacementView]:
        return [*self._views.values(), *self._inflight.values()]


def freed_domain(old: CachedJob | None, new: CachedJob | None) -> bool:
    """An exclusive Job stopped holding its domain (finished, suspended, deleting, gone)."""
    held = old is not None and old.placement is not None and old.placement.holds_domain
    holds = new is not None and new.placement is not None and new.placement.holds_domain
    return held and not holds
