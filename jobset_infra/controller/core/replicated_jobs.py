"""Steps 15 and 16 of reconcile: create missing Jobs and resume suspended ones, replicated job by
replicated job, honouring DependsOn, StartupPolicy InOrder, BlockingRecreate and exclusive
placement (upstream `reconcileReplicatedJobs` l.684-729 and `resumeJobsIfNecessary` l.562-640).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.models import ReplicatedJob, RestartStrategy
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.child_jobs import construct_jobs
from jobset_infra.controller.core.classify import ChildJobs
from jobset_infra.controller.core.depends_on import dependencies_reached
from jobset_infra.controller.core.draft import Draft
from jobset_infra.controller.core.exclusive_placement import (
    PlacementDecision,
    place_new_jobs,
    place_resumed_jobs,
)
from jobset_infra.controller.core.replicated_jobs_status import RJobCounts
from jobset_infra.controller.core.startup_policy import all_replicas_started, in_order
from jobset_infra.controller.core.suspend_resume import resume_job
from jobset_infra.controller.core.types import ChildJob, CreateJob, Manifest

__all__ = ["create_jobs", "needs_placement", "resume_jobs"]


def needs_placement(annotations: Mapping[str, str]) -> bool:
    """Return whether a Job needs an exclusive domain assigned by the controller.

    Upstream's node-selector strategy (both annotations) pins Jobs by name instead.
    """
    return c.EXCLUSIVE_KEY in annotations and c.NODE_SELECTOR_STRATEGY_KEY not in annotations


def _blocked_by_previous_attempt(draft: Draft, jobs: ChildJobs) -> bool:
    """BlockingRecreate: nothing is created while any previous-attempt Job still exists."""
    policy = draft.js.spec.failure_policy
    blocking = policy is not None and policy.restart_strategy is RestartStrategy.BLOCKING_RECREATE
    return blocking and bool(jobs.previous)


def _job_restarts(draft: Draft, rjob: ReplicatedJob) -> Sequence[int] | None:
    if not draft.config.restart_job_enabled:
        return None
    return draft.counters.job_restarts.get(rjob.name, ())


def create_jobs(draft: Draft, jobs: ChildJobs, counts: Mapping[str, RJobCounts]) -> None:
    """Create every missing Job of every replicated job whose turn it is (step 15)."""
    js = draft.js
    replicas = {rjob.name: rjob.replicas for rjob in js.spec.replicated_jobs}
    existing = {job.name for job in jobs.all()}
    blocked = _blocked_by_previous_attempt(draft, jobs)
    ordered = in_order(js) and not draft.suspended
    restarts = draft.counters.restarts
    pending: list[Manifest] = []
    for rjob in js.spec.replicated_jobs:
        if not dependencies_reached(rjob, counts, replicas):
            continue
        if ordered and all_replicas_started(rjob.replicas, counts.get(rjob.name)):
            continue
        if not blocked:
            pending += construct_jobs(js, rjob, existing, restarts, _job_restarts(draft, rjob))
        if ordered:
            # wait for this replicated job to start before the next one
            draft.set_condition(cond.in_order_in_progress())
            _create(draft, tuple(pending))
            return
    if ordered:
        draft.set_condition(cond.in_order_completed())
    _create(draft, tuple(pending))


def _apply_placement(draft: Draft, decision: PlacementDecision) -> None:
    for spec in decision.conditions:
        draft.set_condition(spec)
    if decision.requeue_after is not None:
        draft.requeue_after(decision.requeue_after)


def _create(draft: Draft, jobs: tuple[Manifest, ...]) -> None:
    if draft.config.exclusive_placement and any(
        needs_placement(job["metadata"]["annotations"]) for job in jobs
    ):
        decision = place_new_jobs(jobs, draft.observed, draft.config)
        _apply_placement(draft, decision)
        jobs = decision.create
    draft.add(*(CreateJob(job) for job in jobs))


def resume_jobs(draft: Draft, jobs: ChildJobs, counts: Mapping[str, RJobCounts]) -> None:
    """Resume suspended Jobs of every replicated job whose turn it is (step 16)."""
    js = draft.js
    replicas = {rjob.name: rjob.replicas for rjob in js.spec.replicated_jobs}
    by_rjob: dict[str, list[ChildJob]] = {}
    for job in jobs.active:
        if job.suspend:
            by_rjob.setdefault(job.rjob, []).append(job)
    ordered = in_order(js)
    resuming: list[tuple[ChildJob, dict[str, Any]]] = []
    for rjob in js.spec.replicated_jobs:
        if ordered and all_replicas_started(rjob.replicas, counts.get(rjob.name)):
            continue
        if not dependencies_reached(rjob, counts, replicas):
            continue
        resuming += [(job, rjob.template) for job in by_rjob.get(rjob.name, ())]
        if ordered:
            draft.set_condition(cond.in_order_in_progress())
            _resume(draft, resuming)
            return
    _resume(draft, resuming)
    draft.set_condition(cond.resumed())


def _resume(draft: Draft, resuming: list[tuple[ChildJob, dict[str, Any]]]) -> None:
    placed: Mapping[str, Mapping[str, str]] = {}
    held: set[str] = set()
    if draft.config.exclusive_placement and any(
        needs_placement(job.annotations) for job, _ in resuming
    ):
        decision = place_resumed_jobs(
            tuple(job for job, _ in resuming), draft.observed, draft.config
        )
        _apply_placement(draft, decision)
        placed, held = decision.node_selectors, set(decision.hold)
    for job, template in resuming:
        if job.name not in held:
            draft.add(resume_job(job, template, placed.get(job.name)))
