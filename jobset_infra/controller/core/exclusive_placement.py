"""Exclusive topology placement step of reconcile: which domain each new or resumed Job gets.

STUB owned by the placement engineer, who replaces the bodies (keep the two signatures and
`PlacementDecision`, or agree a change in /work/notes/core-interfaces.md). As a stub it places
nothing: every Job is created or resumed unchanged, as if no domain assignment were needed.

Contract (pure; no I/O, no clock):
* `place_new_jobs` is called with the Job manifests reconcile is about to create (already fully
  labelled, annotated and owned) and may return them with `nodeSelector[<topology key>]` set on the
  pod template; Jobs left out of `create` are not created in this pass (list them in `hold`).
* `place_resumed_jobs` is called with the suspended Jobs reconcile is about to resume; for each
  name in `node_selectors` those entries are added to the Job's pod template nodeSelector on resume
  (and are treated as controller-owned, so they are not dropped as stale). Jobs in `hold` stay
  suspended in this pass.
* `conditions` are set on the JobSet with the usual condition semantics (an event is emitted per
  change); `requeue_after` asks for another pass when Jobs are held.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.types import ChildJob, CoreConfig, Manifest, Observed

__all__ = ["PlacementDecision", "place_new_jobs", "place_resumed_jobs"]


@dataclass(frozen=True, slots=True)
class PlacementDecision:
    """What the placement step decided for one reconcile pass."""

    create: tuple[Manifest, ...] = ()
    node_selectors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    hold: tuple[str, ...] = ()
    conditions: tuple[ConditionSpec, ...] = ()
    requeue_after: float | None = None


def place_new_jobs(
    jobs: tuple[Manifest, ...], observed: Observed, config: CoreConfig
) -> PlacementDecision:
    """Return the Jobs to create now, with their domains assigned. Stub: all, unchanged."""
    del observed, config
    return PlacementDecision(create=jobs)


def place_resumed_jobs(
    jobs: tuple[ChildJob, ...], observed: Observed, config: CoreConfig
) -> PlacementDecision:
    """Return the nodeSelector entries to add to Jobs being resumed. Stub: none, none held."""
    del jobs, observed, config
    return PlacementDecision()
