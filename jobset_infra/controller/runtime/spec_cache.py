"""What the controller already knows about each JobSet's spec, by spec version: one cache.

Two checks of a spec cost milliseconds where a reconcile pass costs microseconds and runs on
every watch event: the full parse (depth, the Job templates' types, what the API server will
refuse in every child Job) and the spec check (`core.admission.spec_problems`: upstream's
webhook rules, the CRD's CEL rules evaluated with celpy among them). The spec of a custom
resource cannot change without metadata.generation changing (the resourceVersion stands in for
an object that bypassed the API server's bookkeeping), so both verdicts hold for (uid, spec
version) until the next spec change. A JobSet found malformed is reported once (InvalidSpec and
a Warning, by the core's malformed plan) and, once that report stands, costs nothing until its
spec changes: its passes return an empty plan without parsing it. A new version (or a new object
under the name) is checked afresh; a deleted JobSet is forgotten; beyond `capacity` JobSets the
least recently used are forgotten (and checked again if they come back).

The check's machinery (celpy, the CRD schema and its CEL programs) loads when the first JobSet
is reconciled, not at start, so an idle controller does not hold it (13 MiB, measured
2026-12-02). It loads once, in a thread (`loaded`), so the event loop goes on renewing the lease
and reading watches meanwhile; the first pass waits for it: about 0.3 s of CPU (0.29 s measured;
it was a second before celpy's parser tables were cached on disk, and was then done at start).
No pass can act before it is in, however: the full parse asks the CRD's CEL rules whether the
API server would refuse the children (and nothing is created for such a JobSet). A pass that
went ahead without the spec check's verdict (tried 2026-12-07) loaded the machinery anyway,
inline on the loop, through that parse. Only loading it before the first JobSet (at start, 13
MiB on an idle controller) takes the wait off a fresh controller's first pass.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jobset_infra.api.errors import FieldError
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core import (
    MalformedJobSetError,
    Observed,
    Plan,
    reconcile_malformed,
)
from jobset_infra.controller.core.admission import spec_problems
from jobset_infra.controller.core.types import CoreConfig

__all__ = ["SpecCache", "spec_version"]

log = logging.getLogger(__name__)

Observe = Callable[[bool], Observed[JobSet]]
"""Parse the JobSet and its Jobs; the argument says whether to run the full parse check."""
Reconcile = Callable[[Observed[JobSet]], Plan]


def spec_version(jobset: Mapping[str, Any]) -> tuple[str, str | None]:
    """(uid, version of the spec): the generation, else the resourceVersion of a JobSet that
    bypassed the API server's bookkeeping; None when it has neither (nothing is remembered)."""
    meta = jobset.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    generation, resource_version = meta.get("generation"), meta.get("resourceVersion")
    version = (
        f"g{generation}" if generation is not None
        else f"rv{resource_version}" if resource_version is not None
        else None
    )
    return str(meta.get("uid", "")), version


@dataclass(slots=True)
class _Known:
    """What is known about one version of one JobSet's spec."""

    version: str | None
    parsed: bool = False
    """Its full parse check passed."""
    settled: bool = False
    """It was reported malformed and the report is on the object."""
    problems: tuple[FieldError, ...] | None = None
    """The spec check's verdict."""


class SpecCache:
    """`decide(...)`: a pass's plan, running each check of a spec version at most once."""

    def __init__(self, config: CoreConfig, capacity: int = 4096) -> None:
        self._config = config
        self._capacity = capacity
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self.checks = 0
        self._loading: asyncio.Future[None] | None = None
        self._loaded = False

    async def loaded(self) -> None:
        """Return once the check's machinery is loaded; the first call loads it in a thread."""
        if self._loaded:
            return
        if self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(_load, self._config))
        await asyncio.shield(self._loading)
        self._loaded = True
        """How many times the spec check itself ran (tests count them)."""

    def forget(self, uid: str) -> None:
        """Drop what is known about a deleted JobSet."""
        self._known.pop(uid, None)

    def __len__(self) -> int:
        return len(self._known)

    def decide(
        self,
        jobset: Mapping[str, Any],
        observe_with: Observe,
        reconcile_with: Reconcile,
        now: datetime.datetime,
    ) -> Plan:
        """The pass's plan: empty for a settled malformed JobSet, the malformed plan for a
        newly malformed one, else the reconcile with the spec check's verdict."""
        known = self._known_of(*spec_version(jobset))
        if known.settled:
            return Plan()
        try:
            observed = observe_with(not known.parsed)
            known.parsed = True
            found = dataclasses.replace(observed, spec_problems=self._problems(known, observed))
            return reconcile_with(found)
        except MalformedJobSetError as err:
            return self._report(jobset, err, known, now)
        except Exception as err:  # a shape nothing above foresaw: report it, never loop on it
            log.exception("reconcile of JobSet %s failed; reporting it as InvalidSpec",
                          spec_version(jobset)[0])
            problem = RuntimeError(
                f"the controller cannot reconcile this JobSet ({type(err).__name__}: {err}); "
                "fix its spec (`jobset-infra validate` checks a JobSet file); the controller "
                "does nothing else with it until then"
            )
            return self._report(jobset, problem, known, now)

    def _known_of(self, uid: str, version: str | None) -> _Known:
        known = self._known.get(uid) if uid and version is not None else None
        if known is not None and known.version == version:
            self._known.move_to_end(uid)
            return known
        known = _Known(version)
        if uid and version is not None:
            self._known[uid] = known
            self._known.move_to_end(uid)
            while len(self._known) > self._capacity:
                self._known.popitem(last=False)
        return known

    def _problems(self, known: _Known, observed: Observed[JobSet]) -> tuple[FieldError, ...]:
        if known.problems is None:
            self.checks += 1
            known.problems = tuple(spec_problems(observed.jobset, self._config))
        return known.problems

    def _report(
        self, jobset: Mapping[str, Any], err: Exception, known: _Known, now: datetime.datetime
    ) -> Plan:
        plan = reconcile_malformed(jobset, err, now, self._config)
        if plan.is_empty:  # the report is on the object already: nothing more until it changes
            known.settled = True
        return plan


# The smallest JobSet the check accepts: checking it once loads what every check needs.
_SAMPLE: dict[str, Any] = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "warm-up", "namespace": "default"},
    "spec": {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}]},
}


def _load(config: CoreConfig) -> None:
    spec_problems(JobSet.model_validate(_SAMPLE), config)
