"""Steps 15 and 16 of reconcile: create missing Jobs and resume suspended ones, replicated job by
replicated job, honouring DependsOn, StartupPolicy InOrder, BlockingRecreate and exclusive
placement (upstream `reconcileReplicatedJobs` l.684-729 and `resumeJobsIfNecessary` l.562-640).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature
from jobset_infra.api.models import ReplicatedJob, RestartStrategy
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.child_jobs import exclusive_annotations, pending_jobs
from jobset_infra.controller.core.child_tally import kept_tally
from jobset_infra.controller.core.classify import ChildJobs
from jobset_infra.controller.core.depends_on import dependencies_reached
from jobset_infra.controller.core.draft import Draft
from jobset_infra.controller.core.exclusive_placement import (
    PlacementDecision,
    place_new_jobs,
    place_resumed_jobs,
)
from jobset_infra.controller.core.name_conflicts import free_to_create, name_conflict
from jobset_infra.controller.core.replicated_jobs_status import RJobCounts
from jobset_infra.controller.core.startup_policy import all_replicas_started, in_order
from jobset_infra.controller.core.suspend_resume import ResumeCarries, resume_job
from jobset_infra.controller.core.types import ChildJob, CreateJob
from jobset_infra.placement.strategy import placed_by_controller

__all__ = ["Resumes", "create_jobs", "resume_jobs", "select_resumes"]


def _blocked_by_previous_attempt(draft: Draft, jobs: ChildJobs) -> bool:
    """BlockingRecreate: nothing is created while any previous-attempt Job still exists."""
    policy = draft.js.spec.failure_policy
    blocking = policy is not None and policy.restart_strategy is RestartStrategy.BLOCKING_RECREATE
    return blocking and bool(jobs.previous)


def _job_restarts(draft: Draft, rjob: ReplicatedJob) -> Sequence[int] | None:
    if not draft.config.enabled(Feature.RESTART_JOB):
        return None
    return draft.counters.job_restarts.get(rjob.name, ())


def create_jobs(
    draft: Draft,
    jobs: ChildJobs,
    counts: Mapping[str, RJobCounts],
    resumes: Resumes | None = None,
) -> bool:
    """Create every missing Job of every replicated job whose turn it is (step 15).

    `resumes`: the resumes decided for this pass, so exclusive placement never hands a domain
    to a new Job that a resumed Job of the same pass gets. Returns whether exclusive placement
    held new Jobs back (then the Jobs resumed in this pass wait too: all or nothing).
    """
    earlier = resumes.placement if resumes is not None else None
    js = draft.js
    replicas = {rjob.name: rjob.replicas for rjob in js.spec.replicated_jobs}
    tally = kept_tally(draft)  # when kept, its names are `jobs`' and it knows who is missing
    existing = tally.names() if tally is not None else {job.name for job in jobs.all()}
    blocked = _blocked_by_previous_attempt(draft, jobs)
    ordered = in_order(js) and not draft.suspended
    restarts = draft.counters.restarts
    pending: list[CreateJob] = []
    placed = False  # a Job to create is placed by this controller (exclusive topology)
    for rjob in js.spec.replicated_jobs:
        if not dependencies_reached(rjob, counts, replicas):
            continue
        if ordered and all_replicas_started(rjob.replicas, counts.get(rjob.name)):
            continue
        if not blocked and not (tally is not None and tally.covers(rjob.name, rjob.replicas)):
            creates = pending_jobs(js, rjob, existing, restarts, _job_restarts(draft, rjob),
                                   execution_attempt=draft.execution_attempt)
            pending += creates
            placed = placed or (bool(creates) and placed_by_controller(
                exclusive_annotations(js, rjob)))
        if ordered:
            # wait for this replicated job to start before the next one
            draft.set_condition(cond.in_order_in_progress())
            return _create(draft, tuple(pending), earlier, placed)
    if ordered:
        draft.set_condition(cond.in_order_completed())
    return _create(draft, tuple(pending), earlier, placed)


def _apply_placement(draft: Draft, decision: PlacementDecision) -> None:
    for spec in decision.conditions:
        draft.set_condition(spec)
    if decision.requeue_after is not None:
        draft.requeue_after(decision.requeue_after)


def _create(
    draft: Draft, creates: tuple[CreateJob, ...], earlier: PlacementDecision | None, placed: bool
) -> bool:
    """Plan the creates whose names are free. Placement reads and pins whole manifests, so only
    a JobSet the controller places has its manifests built here (as many as it has domains);
    any other's are built by the executor as it sends them."""
    creates, blocked = free_to_create(creates, draft.observed.taken_names)
    draft.set_condition(name_conflict(blocked))
    held = False
    if draft.config.exclusive_placement and placed:
        manifests = tuple(create.manifest for create in creates)
        decision = place_new_jobs(manifests, draft.observed, draft.config, earlier)
        _apply_placement(draft, decision)
        creates, held = tuple(CreateJob(job) for job in decision.create), bool(decision.hold)
    draft.add(*creates)
    return held


@dataclass(frozen=True, slots=True)
class Resumes:
    """Which suspended Jobs this pass resumes, and what exclusive placement gave them."""

    jobs: tuple[tuple[ChildJob, dict[str, Any]], ...] = ()
    """(Job, its replicated job's current Job template) in spec order."""
    in_progress: bool = False
    """InOrder stopped at a replicated job that has not started yet."""
    placement: PlacementDecision | None = None


def select_resumes(draft: Draft, jobs: ChildJobs, counts: Mapping[str, RJobCounts]) -> Resumes:
    """Return the suspended Jobs whose turn it is to resume (upstream resumeJobsIfNecessary).

    Exclusive placement for them is decided here, before step 15 creates new Jobs.
    """
    js = draft.js
    replicas = {rjob.name: rjob.replicas for rjob in js.spec.replicated_jobs}
    by_rjob: dict[str, list[ChildJob]] = {}
    # the counts say whether any active Job of the spec's replicated jobs is suspended: most
    # passes then walk no Job
    if any(n.suspended for n in counts.values()):
        for job in jobs.active:
            if job.suspend:
                by_rjob.setdefault(job.rjob, []).append(job)
    ordered = in_order(js)
    chosen: list[tuple[ChildJob, dict[str, Any]]] = []
    in_progress = False
    for rjob in js.spec.replicated_jobs:
        if ordered and all_replicas_started(rjob.replicas, counts.get(rjob.name)):
            continue
        if not dependencies_reached(rjob, counts, replicas):
            continue
        chosen += [(job, rjob.template) for job in by_rjob.get(rjob.name, ())]
        if ordered:
            in_progress = True  # wait for this replicated job to start before the next one
            break
    placement = None
    placed = any(placed_by_controller(j.annotations) for j, _ in chosen)
    if draft.config.exclusive_placement and placed:
        placement = place_resumed_jobs(tuple(j for j, _ in chosen), draft.observed, draft.config)
    return Resumes(tuple(chosen), in_progress, placement)


def resume_jobs(draft: Draft, resumes: Resumes, creates_held: bool = False) -> None:
    """Resume the selected Jobs (step 16); Suspended=False once every replicated job resumed.

    Jobs exclusive placement holds stay suspended, and the JobSet then stays Suspended. With
    `creates_held` (new Jobs of this pass wait for domains), the Jobs placement would resume
    wait with them, so no part of the JobSet starts alone.
    """
    placed: Mapping[str, Mapping[str, str]] = {}
    held: set[str] = set()
    placement = resumes.placement
    if placement is not None and creates_held and not placement.hold:
        # room for these, not for the new Jobs (whose decision set the condition): all wait
        held = set(placement.node_selectors)
    elif placement is not None:
        _apply_placement(draft, placement)
        placed, held = placement.node_selectors, set(placement.hold)
    refused = draft.warning(
        c.FAILED_RESOURCE_PROPAGATION_EVENT, c.FAILED_RESOURCE_PROPAGATION_MESSAGE
    )
    carried = ResumeCarries(
        execution_attempt=draft.execution_attempt,
        resources=draft.config.enabled(Feature.MUTABLE_POD_RESOURCES),
        on_refusal=refused,
    )
    for job, template in resumes.jobs:
        if job.name not in held:
            draft.add(resume_job(job, template, placed.get(job.name), carried))
    if resumes.in_progress:
        draft.set_condition(cond.in_order_in_progress())
    elif not held:
        draft.set_condition(cond.resumed())
