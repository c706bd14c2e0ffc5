"""What the controller already knows about each JobSet's spec, by generation.

The full check of a spec (depth, the Job templates' types, what the API server will refuse in
every child Job) runs once per generation, not every pass. A JobSet found malformed is reported
once (InvalidSpec and a Warning, by the core's malformed plan) and, once that report stands,
costs nothing until its spec changes: its passes return an empty plan without parsing it.
A new generation (or a new object under the name) is checked afresh; a deleted JobSet is
forgotten. Both maps hold one short string per JobSet.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any

from jobset_infra.api.models import JobSet
from jobset_infra.controller.core import (
    MalformedJobSetError,
    Observed,
    Plan,
    reconcile_malformed,
)
from jobset_infra.controller.core.types import CoreConfig

__all__ = ["SpecVerdicts", "spec_version"]

log = logging.getLogger(__name__)

Observe = Callable[[bool], Observed[JobSet]]
Reconcile = Callable[[Observed[JobSet]], Plan]


def spec_version(jobset: Mapping[str, Any]) -> tuple[str, str]:
    """(uid, version of the spec): the generation, or the resourceVersion when a JobSet that
    bypassed the API server's bookkeeping has none."""
    meta = jobset.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    generation = meta.get("generation")
    version = f"g{generation}" if generation is not None else f"rv{meta.get('resourceVersion')}"
    return str(meta.get("uid", "")), version


class SpecVerdicts:
    def __init__(self) -> None:
        self.checked: dict[str, str] = {}  # uid -> spec version whose full check passed
        self.settled: dict[str, str] = {}  # uid -> spec version reported malformed

    def forget(self, uid: str) -> None:
        self.checked.pop(uid, None)
        self.settled.pop(uid, None)

    def decide(
        self,
        jobset: Mapping[str, Any],
        observe_with: Observe,
        reconcile_with: Reconcile,
        now: datetime.datetime,
        config: CoreConfig,
    ) -> Plan:
        """The pass's plan: empty for a settled malformed JobSet, the malformed plan for a
        newly malformed one, else the reconcile (the full check only if not done yet)."""
        uid, version = spec_version(jobset)
        if self.settled.get(uid) == version:
            return Plan()
        try:
            observed = observe_with(self.checked.get(uid) != version)
            self.checked[uid] = version
            return reconcile_with(observed)
        except MalformedJobSetError as err:
            return self._report(jobset, err, (uid, version), now, config)
        except Exception as err:  # a shape nothing above foresaw: report it, never loop on it
            log.exception("reconcile of JobSet %s failed; reporting it as InvalidSpec", uid)
            problem = RuntimeError(
                f"the controller cannot reconcile this JobSet ({type(err).__name__}: {err}); "
                "fix its spec (`jobset-infra validate` checks a JobSet file); the controller "
                "does nothing else with it until then"
            )
            return self._report(jobset, problem, (uid, version), now, config)

    def _report(
        self,
        jobset: Mapping[str, Any],
        err: Exception,
        spec: tuple[str, str],
        now: datetime.datetime,
        config: CoreConfig,
    ) -> Plan:
        plan = reconcile_malformed(jobset, err, now, config)
        if plan.is_empty:  # the report is on the object already: nothing more until it changes
            self.settled[spec[0]] = spec[1]
        return plan

