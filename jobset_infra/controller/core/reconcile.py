"""`reconcile(observed, now, config) -> Plan`: one JobSet pass, in upstream's order (§2.2 of the
reference; upstream `Reconcile`/`reconcile`, jobset_controller.go l.110-264).

Pure: no I/O, no clock, no randomness. Each numbered step is one named function; the policies
live in their own modules. Steps returning early end the pass as upstream does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.admission import spec_condition
from jobset_infra.controller.core.child_tally import kept_tally
from jobset_infra.controller.core.classify import ChildJobs, classify_child_jobs
from jobset_infra.controller.core.draft import Draft
from jobset_infra.controller.core.elastic import scaling_updates
from jobset_infra.controller.core.exclusive_placement import placement_stopped
from jobset_infra.controller.core.execution_attempts import after_restart, execution_attempts
from jobset_infra.controller.core.failure_policy import execute_failure_policy
from jobset_infra.controller.core.headless_service import service_to_create
from jobset_infra.controller.core.in_place_restart import in_place_restart, uses_in_place_restart
from jobset_infra.controller.core.previous_attempts import previous_attempt_deletes
from jobset_infra.controller.core.replicated_jobs import create_jobs, resume_jobs, select_resumes
from jobset_infra.controller.core.replicated_jobs_status import (
    RJobCounts,
    count_replicated_jobs,
    replicated_jobs_status,
)
from jobset_infra.controller.core.slice_health import domain_failures
from jobset_infra.controller.core.stranded_jobs import stranded_jobs
from jobset_infra.controller.core.success_policy import success_policy_met
from jobset_infra.controller.core.suspend_resume import suspend_jobs
from jobset_infra.controller.core.ttl_after_finished import ttl_after_finished
from jobset_infra.controller.core.types import (
    ChildJob,
    CoreConfig,
    CreatePVC,
    CreateService,
    DeleteJob,
    DeleteJobSet,
    Observed,
    Plan,
    RecordDomainFailure,
)
from jobset_infra.controller.core.volume_claim_policy import pvcs_to_create

__all__ = [
    "apply_failure_policy",
    "apply_ttl_after_finished",
    "children_deferred",
    "classify",
    "create_headless_service",
    "create_volume_claims",
    "delete_jobs",
    "delete_previous_attempts",
    "is_managed_here",
    "kept_tally",
    "mark_jobs_ready",
    "move_stranded_jobs",
    "reconcile",
    "record_domain_failures",
    "restart_in_place",
    "suspend",
    "sync_job_scaling",
    "track_execution_attempts",
    "update_replicated_jobs_status",
]


def reconcile(observed: Observed[JobSet], now: datetime, config: CoreConfig | None = None) -> Plan:
    """Return the plan that moves the JobSet towards its spec. Pure; `now` is aware UTC."""
    config = config or CoreConfig()
    # 2-3. a JobSet being deleted, or managed by another controller, is left alone
    if not is_managed_here(observed, config):
        return Plan()
    draft = Draft.begin(observed, now, config)
    # what upstream's admission webhook would have rejected is reported, not enforced
    draft.set_condition(spec_condition(draft.js, config, observed.spec_problems))
    # 5. previous attempt / active / successful / failed
    jobs = classify(draft)
    # 6. status.replicatedJobsStatus
    counts = update_replicated_jobs_status(draft, jobs)
    # 7. finished: delete active Jobs, then apply the TTL
    if draft.finished:
        delete_jobs(draft, jobs.active, why="jobset finished")
        apply_ttl_after_finished(draft)
        return draft.plan()
    # 8. foreground-delete Jobs of previous attempts (a large JobSet's in one request)
    delete_previous_attempts(draft, jobs)
    # 9. RestartingJobSet=False once every Job is ready again
    mark_jobs_ready(draft, counts)
    # 10. failed Jobs: each is recorded against the pool it held (slice health), the failure
    #     policy decides, and nothing else happens this pass
    if jobs.failed:
        record_domain_failures(draft, jobs)
        apply_failure_policy(draft, jobs)
        return draft.plan()
    # 11. successful Jobs: the success policy may complete the JobSet
    if jobs.successful and success_policy_met(draft.js, jobs.successful):
        draft.complete()
        return draft.plan()
    # a JobSet created suspended gets no Jobs and no Service until it is first resumed
    deferred = children_deferred(draft, jobs)
    # 12. headless Service for pod DNS hostnames
    if not deferred:
        create_headless_service(draft)
    # 13. PVCs of VolumeClaimPolicies
    create_volume_claims(draft)
    # 14. elastic JobSets: propagate parallelism/completions (gate ElasticJobSet)
    sync_job_scaling(draft, jobs)
    # Jobs stranded on a pool lost before their pods started: deleted, placed again next pass
    move_stranded_jobs(draft, jobs)
    # count a first run or a resume before new and resumed Jobs carry the count
    track_execution_attempts(draft, jobs)
    # 15. create missing Jobs (DependsOn, InOrder, BlockingRecreate, exclusive placement);
    #     the Jobs to resume are chosen first so placement sees both in one pass
    resumes = None if draft.suspended else select_resumes(draft, jobs, counts)
    creates_held = False if deferred else create_jobs(draft, jobs, counts, resumes)
    # 16. suspend or resume
    if resumes is None:
        suspend(draft, jobs)
    else:
        resume_jobs(draft, resumes, creates_held)
    # 17. in-place restart: move the attempts the Pods' agents wait on (gate InPlaceRestart)
    restart_in_place(draft)
    return draft.plan()


def is_managed_here(observed: Observed[JobSet], config: CoreConfig) -> bool:
    """Return whether this controller acts on the JobSet (not deleting, managedBy is us)."""
    js = observed.jobset
    if js.metadata.deletion_timestamp:
        return False
    return js.spec.managed_by in (None, config.controller_name)


def classify(draft: Draft) -> ChildJobs:
    """Step 5: classify the JobSet's own Jobs by attempt and outcome (from the runtime's tally
    of their events when it was kept for this pass's basis)."""
    tally = kept_tally(draft)
    if tally is not None:
        return tally.child_jobs()
    counters = draft.counters
    restart_job = draft.config.enabled(Feature.RESTART_JOB)
    job_restarts = dict(counters.job_restarts) if restart_job else None
    return classify_child_jobs(
        draft.observed.jobs, draft.js.metadata.uid or "", counters.restarts, job_restarts
    )


def update_replicated_jobs_status(draft: Draft, jobs: ChildJobs) -> dict[str, RJobCounts]:
    """Step 6: recompute status.replicatedJobsStatus (per-Job restarts carried forward)."""
    tally = kept_tally(draft)
    rjobs = draft.js.spec.replicated_jobs
    counts = count_replicated_jobs(rjobs, jobs) if tally is None else tally.counts(rjobs)
    carried = None
    if draft.config.enabled(Feature.RESTART_JOB):
        carried = {entry.name: entry for entry in draft.status.replicated_jobs_status}
    draft.set_replicated_jobs_status(replicated_jobs_status(counts, carried))
    return counts


def delete_jobs(draft: Draft, jobs: Sequence[ChildJob], why: str) -> None:
    """Step 7: foreground-delete the Jobs of a finished JobSet not already being deleted."""
    for job in jobs:
        if job.deletion_timestamp is None:
            draft.add(DeleteJob(job.namespace, job.name, job.uid, why=why))


def delete_previous_attempts(draft: Draft, jobs: ChildJobs) -> None:
    """Step 8: foreground-delete the Jobs of previous attempts (`previous_attempts.py`)."""
    uid = draft.js.metadata.uid or ""
    draft.add(*previous_attempt_deletes(jobs.previous, uid, draft.counters.restarts))


def apply_ttl_after_finished(draft: Draft) -> None:
    """Step 7: delete the finished JobSet after ttlSecondsAfterFinished, or requeue until then."""
    decision = ttl_after_finished(
        draft.js.spec.ttl_seconds_after_finished, draft.conditions, draft.now
    )
    if decision.delete:
        meta = draft.js.metadata
        draft.add_last(DeleteJobSet(draft.js.namespace, draft.js.name, meta.uid or ""))
    elif decision.requeue_after is not None:
        draft.requeue_after(decision.requeue_after)


def mark_jobs_ready(draft: Draft, counts: dict[str, RJobCounts]) -> None:
    """Step 9: RestartingJobSet=False/JobsReady when every Job is ready or succeeded."""
    if draft.suspended:
        return
    wanted = sum(rjob.replicas for rjob in draft.js.spec.replicated_jobs)
    done = sum(n.ready + n.succeeded for n in counts.values())
    if done == wanted:
        draft.set_condition(cond.restarting_stopped(c.JOBS_READY_REASON))


def record_domain_failures(draft: Draft, jobs: ChildJobs) -> None:
    """Step 10: record each failing Job that held a node pool against it, with its cause."""
    failures = domain_failures(jobs.failed, draft.observed.placement, draft.now,
                               draft.observed.pods)
    draft.add(*(RecordDomainFailure(failure) for failure in failures))


def move_stranded_jobs(draft: Draft, jobs: ChildJobs) -> None:
    """Delete the Jobs whose pool was lost before their pods started, when there is room for
    them elsewhere (`stranded_jobs`); reconcile creates them again, and placement places them."""
    for job in stranded_jobs(jobs.active, draft.observed, draft.config):
        draft.add(DeleteJob(job.namespace, job.name, job.uid,
                            why="its pool was lost before its pods started; placed again"))


def apply_failure_policy(draft: Draft, jobs: ChildJobs) -> None:
    """Step 10: fail the JobSet or count a restart, as the failure policy says."""
    before = draft.counters.restarts
    outcome = execute_failure_policy(draft.js, jobs.failed, draft.counters, draft.config)
    if outcome is None:
        return
    draft.set_counters(outcome.counters)
    if outcome.counters.restarts > before and draft.config.enabled(Feature.EXECUTION_ATTEMPTS):
        draft.set_execution_attempts(after_restart(draft.status.execution_attempts, before))
    if outcome.failed is not None:
        draft.fail(outcome.failed)
    if outcome.restarting is not None:
        draft.set_condition(outcome.restarting)
    for reason, message in outcome.events:
        draft.event("Warning", reason, message)


def children_deferred(draft: Draft, jobs: ChildJobs) -> bool:
    """Gate CreateChildrenOnFirstResume: a suspended JobSet that never ran (no Job of any
    attempt, no restart, never resumed) gets no Jobs and no headless Service yet."""
    if not draft.config.enabled(Feature.CREATE_CHILDREN_ON_FIRST_RESUME) or not draft.suspended:
        return False
    ran = any(True for _ in jobs.all()) or draft.counters.restarts > 0
    resumed = any(
        x.type == c.CONDITION_SUSPENDED and x.status == "False" for x in draft.conditions
    )
    return not (ran or resumed)


def track_execution_attempts(draft: Draft, jobs: ChildJobs) -> None:
    """Gate ExecutionAttemptsTracking: start counting, or count the resume starting now."""
    if draft.config.enabled(Feature.EXECUTION_ATTEMPTS):
        draft.set_execution_attempts(
            execution_attempts(
                draft.status.execution_attempts,
                restarts=draft.counters.restarts,
                suspended=draft.suspended,
                jobs=jobs,
                conditions=draft.conditions,
            )
        )


def create_headless_service(draft: Draft) -> None:
    """Step 12: create the headless Service when DNS hostnames are on and it is missing."""
    service = service_to_create(draft.js, draft.observed.service_exists)
    if service is not None:
        draft.add(CreateService(service))


def create_volume_claims(draft: Draft) -> None:
    """Step 13: create the VolumeClaimPolicies' PVCs that do not exist yet."""
    pvcs = pvcs_to_create(draft.js, draft.observed.pvc_names)
    draft.add(*(CreatePVC(pvc) for pvc in pvcs))


def sync_job_scaling(draft: Draft, jobs: ChildJobs) -> None:
    """Step 14: patch parallelism/completions of live Jobs (ElasticJobSet gate only); with a
    kept tally only the Jobs of another size are looked at."""
    if draft.config.enabled(Feature.ELASTIC_JOBSET):
        tally = kept_tally(draft)
        sized_otherwise = None if tally is None else tally.sized_otherwise
        draft.add(*scaling_updates(draft.js.spec.replicated_jobs, jobs.active, sized_otherwise))


def restart_in_place(draft: Draft) -> None:
    """Step 17: set current/previousInPlaceRestartAttempt from the Pods' attempts, or fail the
    JobSet past maxRestarts (restartStrategy InPlaceRestart, gate on, Pods watched)."""
    pods = draft.observed.pods
    if pods is None or not draft.config.enabled(Feature.IN_PLACE_RESTART):
        return
    if not uses_in_place_restart(draft.js):
        return
    decision = in_place_restart(draft.js, pods)
    if decision.fail:
        draft.fail(cond.failed(c.REACHED_MAX_RESTARTS_REASON, c.REACHED_MAX_RESTARTS_MESSAGE))
    else:
        draft.set_in_place_restart_attempts(decision.current, decision.previous)


def suspend(draft: Draft, jobs: ChildJobs) -> None:
    """Step 16: suspend active Jobs (only those not suspended yet, from the tally when kept:
    a settled suspended JobSet walks none); Suspended=True, RestartingJobSet=False/JobSetSuspended
    (and a pending exclusive placement is no longer pending)."""
    tally = kept_tally(draft)
    draft.add(*suspend_jobs(jobs.active if tally is None else tally.unsuspended()))
    draft.set_condition(cond.suspended())
    draft.set_condition(cond.restarting_stopped(c.JOBSET_SUSPENDED_REASON))
    draft.set_condition(placement_stopped(c.JOBSET_SUSPENDED_REASON))
