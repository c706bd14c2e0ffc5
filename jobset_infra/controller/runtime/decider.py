"""The pure core as the controller calls it: a `Decide` from the controller's configuration,
parsing each JobSet once per spec version (`SpecCache`) before `reconcile` plans its pass."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable

from jobset_infra.api.controller_config import ControllerConfig, PlacementMode
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.child_tally import ChildTally
from jobset_infra.controller.core.types import CoreConfig, Manifest, Observed, Plan
from jobset_infra.controller.runtime.spec_cache import SpecCache

__all__ = ["Decide", "Tallies", "core_config", "core_decider"]

Decide = Callable[[Observed[Manifest], datetime.datetime], Plan]
"""The decision for one JobSet as the caches hold it (the core's, unless a test injects one)."""
Tallies = Callable[[Observed[JobSet]], ChildTally]
"""The tally of a parsed JobSet's children for the pass about to run (`child_tally`)."""


def core_config(config: ControllerConfig) -> CoreConfig:
    return CoreConfig(
        gates=config.gates(),
        exclusive_placement=config.placement.mode is not PlacementMode.OFF,
    )


def core_decider(
    config: CoreConfig, specs: SpecCache | None = None, tallies: Tallies | None = None
) -> Decide:
    """The pure core as a `Decide`: parse + reconcile, or the malformed-object plan. `specs`
    remembers, per spec version, the full parse, the spec check's verdict and a malformed
    report (the checks cost milliseconds, a pass microseconds); `tallies` gives the pass the
    tally of the JobSet's children kept from their events."""
    cache = specs if specs is not None else SpecCache(config)

    def decide(seen: Observed[Manifest], now: datetime.datetime) -> Plan:
        def observed(check_templates: bool) -> Observed[JobSet]:
            return observe(seen.jobset, seen.jobs, seen.service_exists, seen.placement,
                           seen.pvc_names, check_templates=check_templates,
                           taken_names=seen.taken_names, pods=seen.pods)

        def planned(found: Observed[JobSet]) -> Plan:
            if tallies is not None:
                found = dataclasses.replace(found, tally=tallies(found))
            return reconcile(found, now, config)

        return cache.decide(seen.jobset, observed, planned, now)

    return decide
