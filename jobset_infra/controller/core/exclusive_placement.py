"""Exclusive topology placement step of reconcile: which domain each new or resumed Job gets.

Pure; no I/O, no clock. Called by reconcile when it is about to create Jobs (`place_new_jobs`) or
resume suspended ones (`place_resumed_jobs`). Each Job is handled by its strategy (see
`placement/strategy.py`), dispatched through a table keyed by `Strategy`:

* DOMAINS: all Jobs of this pass that need a domain get a free, fitting one through
  `nodeSelector[<topology key>] = <domain>`, or none does. Then they are held (not created, or
  left suspended), the JobSet gets `ExclusivePlacementPending=True` with a message naming the
  domains that exist, which are busy and why none fits, and reconcile asks for a retry.
* AFFINITY: upstream v0.2's pod affinity + anti-affinity go on the pod template.
* NODE_SELECTOR and NONE: construction already did what upstream does; nothing to add.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from jobset_infra.api import constants as c
from jobset_infra.api import resilience as res
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.slice_health import allocate_healthy_first, unchanged_quiet
from jobset_infra.controller.core.suspend_resume import controller_node_selector
from jobset_infra.controller.core.types import ChildJob, CoreConfig, Manifest, Observed
from jobset_infra.placement import (
    Assignment,
    Domain,
    JobPlacementView,
    NoFit,
    Occupancy,
    PlacementRequest,
    QuantityError,
    job_view_from_manifest,
    placed_views,
    request_from_job_manifest,
)
from jobset_infra.placement.affinity import with_exclusive_affinity
from jobset_infra.placement.inputs import PlacementInputs
from jobset_infra.placement.strategy import Strategy, exclusive_topology, strategy_for

__all__ = [
    "PlacementDecision",
    "place_new_jobs",
    "place_resumed_jobs",
    "placement_stopped",
    "resume_request",
]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class PlacementDecision:
    """What the placement step decided for one reconcile pass."""

    create: tuple[Manifest, ...] = ()
    node_selectors: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    hold: tuple[str, ...] = ()
    conditions: tuple[ConditionSpec, ...] = ()
    requeue_after: float | None = None


_NewJobsStep = Callable[
    [tuple[Manifest, ...], PlacementInputs, PlacementDecision | None], PlacementDecision
]


def place_new_jobs(
    jobs: tuple[Manifest, ...],
    observed: Observed[JobSet],
    config: CoreConfig,
    earlier: PlacementDecision | None = None,
) -> PlacementDecision:
    """Return the Jobs to create now, with their domains assigned, and the Jobs held back.

    `earlier`: the decision of `place_resumed_jobs` in the same pass, if reconcile made one, so
    Jobs resumed and created in one pass never get the same domain.
    """
    inputs = _inputs(observed)
    groups = _by_strategy(jobs, inputs, config, _annotations)
    decisions = [_NEW_JOBS[s](tuple(group), inputs, earlier) for s, group in groups.items()]
    return _quiet(_merged(jobs, decisions), observed)


def place_resumed_jobs(
    jobs: tuple[ChildJob, ...],
    observed: Observed[JobSet],
    config: CoreConfig,
    earlier: PlacementDecision | None = None,
) -> PlacementDecision:
    """Return the nodeSelector entries to add to Jobs being resumed, or the Jobs held suspended.

    `earlier`: a decision already made in the same pass (e.g. Jobs being created), whose domains
    are taken.
    """
    inputs = _inputs(observed)
    groups = _by_strategy(jobs, inputs, config, lambda job: job.annotations)
    domain_jobs = tuple(groups.get(Strategy.DOMAINS, ()))
    if not domain_jobs:
        return PlacementDecision()
    try:
        requests = [resume_request(job, observed) for job in domain_jobs]
    except QuantityError as err:
        return _invalid(tuple(job.name for job in domain_jobs), err)
    occupancy = inputs.occupancy.with_views(_earlier_views(earlier, requests))
    result, health = _allocate(requests, inputs, occupancy)
    if isinstance(result, NoFit):
        return _quiet(_held(tuple(job.name for job in domain_jobs), result, inputs, health),
                      observed)
    selectors = {
        job.name: {req.topology_key: result.domains[req.key]}
        for job, req in zip(domain_jobs, requests, strict=True)
    }
    decision = PlacementDecision(node_selectors=selectors, conditions=(_assigned(), health))
    return _quiet(decision, observed)


# --------------------------------------------------------------------------- strategies


def _assign_domains(
    jobs: tuple[Manifest, ...], inputs: PlacementInputs, earlier: PlacementDecision | None
) -> PlacementDecision:
    # Jobs created suspended (the JobSet waits for Kueue) get their domain when resumed.
    waiting = tuple(j for j in jobs if (j.get("spec") or {}).get("suspend") is True)
    running = tuple(j for j in jobs if (j.get("spec") or {}).get("suspend") is not True)
    if not running:
        return PlacementDecision(create=jobs)
    if earlier is not None and earlier.hold:
        # Jobs resumed in this pass wait for domains (their decision says why): so do these
        return PlacementDecision(create=waiting, hold=_names(running))
    try:
        requests = [request_from_job_manifest(j, _topology(_annotations(j))) for j in running]
    except QuantityError as err:
        return replace(_invalid(_names(running), err), create=waiting)
    occupancy = inputs.occupancy.with_views(_earlier_views(earlier, requests))
    result, health = _allocate(requests, inputs, occupancy)
    if isinstance(result, NoFit):
        return replace(_held(_names(running), result, inputs, health), create=waiting)
    placed = tuple(_pinned(j, r, result) for j, r in zip(running, requests, strict=True))
    return PlacementDecision(create=waiting + placed, conditions=(_assigned(), health))


def _add_affinity(
    jobs: tuple[Manifest, ...], inputs: PlacementInputs, earlier: PlacementDecision | None
) -> PlacementDecision:
    del inputs, earlier
    return PlacementDecision(
        create=tuple(with_exclusive_affinity(j, _topology(_annotations(j))) for j in jobs)
    )


def _unchanged(
    jobs: tuple[Manifest, ...], inputs: PlacementInputs, earlier: PlacementDecision | None
) -> PlacementDecision:
    del inputs, earlier
    return PlacementDecision(create=jobs)


_NEW_JOBS: Mapping[Strategy, _NewJobsStep] = {
    Strategy.DOMAINS: _assign_domains,
    Strategy.AFFINITY: _add_affinity,
    Strategy.NODE_SELECTOR: _unchanged,  # construction added the namespaced-job selector
    Strategy.NONE: _unchanged,
}


# --------------------------------------------------------------------------- helpers


def _inputs(observed: Observed[JobSet]) -> PlacementInputs:
    # No inputs at all: the runtime knows no Nodes and no declared domains.
    placement = observed.placement
    return placement if isinstance(placement, PlacementInputs) else PlacementInputs()


def _annotations(job: Manifest) -> Mapping[str, str]:
    return (job.get("metadata") or {}).get("annotations") or {}


def _topology(annotations: Mapping[str, str]) -> str:
    key = exclusive_topology(annotations)
    assert key is not None, "only Jobs with a topology key get the DOMAINS or AFFINITY strategy"
    return key


def _names(jobs: Iterable[Manifest]) -> tuple[str, ...]:
    return tuple(str(j["metadata"]["name"]) for j in jobs)


def _by_strategy(
    jobs: Sequence[_T],
    inputs: PlacementInputs,
    config: CoreConfig,
    annotations_of: Callable[[_T], Mapping[str, str]],
) -> dict[Strategy, list[_T]]:
    groups: dict[Strategy, list[_T]] = {}
    for job in jobs:
        strategy = Strategy.NONE
        if config.exclusive_placement:
            strategy = strategy_for(annotations_of(job), inputs.mode, inputs.domains_known)
        groups.setdefault(strategy, []).append(job)
    return groups


def _allocate(
    requests: Sequence[PlacementRequest],
    inputs: PlacementInputs,
    occupancy: Occupancy,
) -> tuple[Assignment | NoFit, ConditionSpec]:
    return allocate_healthy_first(
        requests, _domains_for(requests, inputs), occupancy, inputs.kept_out
    )


def _quiet(decision: PlacementDecision, observed: Observed[JobSet]) -> PlacementDecision:
    status = observed.jobset.status
    shown = status is not None and cond.is_true(status.conditions, res.CONDITION_DOMAINS_KEPT_OUT)
    return replace(decision, conditions=unchanged_quiet(decision.conditions, shown))


def _domains_for(
    requests: Sequence[PlacementRequest], inputs: PlacementInputs
) -> tuple[Domain, ...]:
    keys = sorted({r.topology_key for r in requests})
    return tuple(d for key in keys for d in inputs.domains(key))


def _earlier_views(
    earlier: PlacementDecision | None, requests: Sequence[PlacementRequest]
) -> tuple[JobPlacementView, ...]:
    """Return views that make the domains of an earlier decision of this pass taken.

    One view per priority scope of `requests`: within one JobSet, Jobs never share a domain.
    """
    if earlier is None or not requests:
        return ()
    namespace, owner = requests[0].key.split("/")[0], requests[0].owner
    taken = [
        (str(job["metadata"]["name"]), view.topology_key, view.domain)
        for job in earlier.create
        if (view := job_view_from_manifest(job)) is not None and view.holds_domain and view.domain
    ]
    taken += [
        (name, key, domain)
        for name, selector in earlier.node_selectors.items()
        for key, domain in selector.items()
    ]
    views: list[JobPlacementView] = []
    for scope in sorted({r.scope for r in requests}):
        for name, key, domain in taken:
            request = PlacementRequest(f"{namespace}/{name}#{scope}", owner, key, 0, scope=scope)
            views.extend(placed_views([request], Assignment({request.key: domain})))
    return tuple(views)


def _pinned(job: Manifest, request: PlacementRequest, result: Assignment) -> Manifest:
    out = copy.deepcopy(job)
    pod = out.setdefault("spec", {}).setdefault("template", {}).setdefault("spec", {})
    pod.setdefault("nodeSelector", {})[request.topology_key] = result.domains[request.key]
    return out


def resume_request(job: ChildJob, observed: Observed[JobSet]) -> PlacementRequest:
    """Return the request of a suspended Job from its replicated job's current template (also
    what a Job asks for when it is placed again, `stranded_jobs`).

    Resume merges the template (where Kueue put the flavor's selectors and tolerations) into the
    Job, so the template is what the pods will look like; the Job's earlier domain is preferred.
    The nodeSelector is exactly the template's, as resume makes it: keys Kueue removed from the
    template (an earlier flavor's) are dropped from the Job, so they must not narrow the choice.
    """
    key = _topology(job.annotations)
    template = _rjob_template(observed, job.labels.get(c.REPLICATED_JOB_NAME_KEY, ""))
    pod = copy.deepcopy((template.get("spec") or {}).get("template", {}).get("spec") or {})
    pod["nodeSelector"] = {**(pod.get("nodeSelector") or {}), **controller_node_selector(job)}
    pinned = pod["nodeSelector"].get(key)
    pod["tolerations"] = [*job.tolerations, *(pod.get("tolerations") or [])]
    manifest = {
        "metadata": {"name": job.name, "namespace": job.namespace},
        "spec": {
            "parallelism": job.parallelism if job.parallelism is not None else 1,
            "completions": job.completions,
            "template": {"spec": pod},
        },
    }
    request = request_from_job_manifest(manifest, key, previous=job.node_selector.get(key))
    owner = f"{observed.jobset.namespace}/{observed.jobset.name}"
    return replace(request, owner=owner, pinned=pinned)


def _rjob_template(observed: Observed[JobSet], rjob_name: str) -> Mapping[str, Any]:
    for rjob in observed.jobset.spec.replicated_jobs:
        if rjob.name == rjob_name:
            return rjob.template
    return {}


def _assigned() -> ConditionSpec:
    return ConditionSpec(
        type=c.CONDITION_PLACEMENT_PENDING,
        status="False",
        reason=c.PLACEMENT_ASSIGNED_REASON,
        message=c.PLACEMENT_ASSIGNED_MESSAGE,
    )


def placement_stopped(reason: str) -> ConditionSpec:
    """ExclusivePlacementPending=False once the JobSet is suspended, failed or completed.

    `reason`: JobSetSuspended, JobSetFailed or JobSetCompleted (with RestartingJobSet's messages
    for them). Such a JobSet no longer waits for domains (a suspended one waits for Kueue, and
    its Jobs hold none); a True condition left from before would say the opposite. Like every
    False condition it only flips an existing one.
    """
    return replace(cond.restarting_stopped(reason), type=c.CONDITION_PLACEMENT_PENDING)


def _held(
    names: tuple[str, ...],
    result: NoFit,
    inputs: PlacementInputs,
    health: ConditionSpec,
) -> PlacementDecision:
    condition = ConditionSpec(
        type=c.CONDITION_PLACEMENT_PENDING,
        status="True",
        reason=c.PLACEMENT_NO_FIT_REASON,
        message=result.message,
        event_type="Warning",
    )
    return PlacementDecision(
        hold=names, conditions=(condition, health), requeue_after=inputs.retry_seconds
    )


def _invalid(names: tuple[str, ...], err: QuantityError) -> PlacementDecision:
    # A template the API server accepted but we cannot read; retrying will not help, so no requeue.
    condition = ConditionSpec(
        type=c.CONDITION_PLACEMENT_PENDING,
        status="True",
        reason=c.PLACEMENT_INVALID_REASON,
        message=f"{err}; fix the replicated job's pod template",
        event_type="Warning",
    )
    return PlacementDecision(hold=names, conditions=(condition,))


def _merged(jobs: Sequence[Manifest], decisions: Sequence[PlacementDecision]) -> PlacementDecision:
    """Return one decision; created Jobs keep the order reconcile gave them."""
    order = {name: i for i, name in enumerate(_names(jobs))}
    create = sorted(
        (j for d in decisions for j in d.create), key=lambda j: order[j["metadata"]["name"]]
    )
    waits = [d.requeue_after for d in decisions if d.requeue_after is not None]
    return PlacementDecision(
        create=tuple(create),
        node_selectors={k: v for d in decisions for k, v in d.node_selectors.items()},
        hold=tuple(n for d in decisions for n in d.hold),
        conditions=tuple(cond for d in decisions for cond in d.conditions),
        requeue_after=min(waits) if waits else None,
    )
