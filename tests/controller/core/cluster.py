"""A pure, in-memory stand-in for the API server and the kube Job controller, for core tests.

`apply_plan(state, plan) -> state'` does to the objects what the API server would do with each
action (create, foreground delete = deletionTimestamp until `collect_garbage`, merge patch,
status replace with a resourceVersion check), and records events and metric increments only when
the status write succeeded, as the runtime does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.types import (
    CoreConfig,
    CreateJob,
    CreatePVC,
    CreateService,
    DeleteJob,
    DeleteJobs,
    DeleteJobSet,
    EmitEvent,
    IncrementMetric,
    Observed,
    Plan,
    RequeueAfter,
    UpdateJob,
    UpdateStatus,
    child_job_from_manifest,
    format_time,
)
from jobset_infra.sim.apiserver.selectors import parse_label_selector
from jobset_infra.testing.jobs import JobBuilder, job_from

T0 = datetime(2026, 5, 1, 8, 0, 0, tzinfo=UTC)


class ConflictError(Exception):
    """A write based on a stale resourceVersion."""


@dataclass(frozen=True)
class State:
    """The objects of one JobSet as the API server holds them."""

    jobset: dict[str, Any]
    jobs: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    service: dict[str, Any] | None = None
    pvcs: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    jobset_deleted: bool = False
    events: tuple[EmitEvent, ...] = ()
    metrics: tuple[IncrementMetric, ...] = ()
    version: int = 1

    def observed(self) -> Observed:
        """The Observed the runtime would build from these objects."""
        views = [child_job_from_manifest(j) for j in self.jobs.values()]
        return observe(self.jobset, views, self.service is not None, None, frozenset(self.pvcs))

    @property
    def status(self) -> dict[str, Any]:
        """The JobSet's status."""
        status: dict[str, Any] = self.jobset.get("status") or {}
        return status

    def condition(self, type_: str) -> dict[str, Any] | None:
        """The JobSet condition of that type, or None."""
        for cond in self.status.get("conditions", []):
            if cond["type"] == type_:
                found: dict[str, Any] = cond
                return found
        return None

    def is_true(self, type_: str) -> bool:
        """Whether the JobSet condition of that type is True."""
        cond = self.condition(type_)
        return cond is not None and cond["status"] == "True"

    def rjob_status(self, name: str) -> dict[str, Any]:
        """status.replicatedJobsStatus entry of one replicated job."""
        for entry in self.status.get("replicatedJobsStatus", []):
            if entry["name"] == name:
                found: dict[str, Any] = entry
                return found
        raise KeyError(name)

    def live_jobs(self) -> list[dict[str, Any]]:
        """Jobs not being deleted, by name."""
        return [
            self.jobs[n]
            for n in sorted(self.jobs)
            if "deletionTimestamp" not in self.jobs[n]["metadata"]
        ]

    def with_job(self, name: str, change: Callable[[JobBuilder], JobBuilder]) -> State:
        """Change one Job through the fluent builder (as the kube Job controller would)."""
        jobs = dict(self.jobs)
        jobs[name] = change(job_from(jobs[name])).obj()
        return replace(self, jobs=jobs)

    def with_jobs(
        self, change: Callable[[JobBuilder], JobBuilder], rjob: str | None = None
    ) -> State:
        """Change every live Job (of one replicated job, if given)."""
        state = self
        for job in self.live_jobs():
            labels = job["metadata"].get("labels", {})
            if rjob is None or labels.get("jobset.sigs.k8s.io/replicatedjob-name") == rjob:
                state = state.with_job(job["metadata"]["name"], change)
        return state

    def without_jobs(self, *names: str) -> State:
        """Jobs gone from the API server (e.g. foreground-deletion finalizers removed)."""
        return replace(self, jobs={n: j for n, j in self.jobs.items() if n not in names})

    def attempts(self) -> dict[int, int]:
        """How many Jobs (deleting ones included) carry each restart-attempt label value."""
        out: dict[int, int] = {}
        for job in self.jobs.values():
            attempt = int(job["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"])
            out[attempt] = out.get(attempt, 0) + 1
        return out

    def deleting(self) -> list[str]:
        """Names of Jobs with a deletionTimestamp."""
        return sorted(n for n, j in self.jobs.items() if "deletionTimestamp" in j["metadata"])

    def with_spec(self, **fields: Any) -> State:
        """Change spec fields of the JobSet (camelCase)."""
        js = copy.deepcopy(self.jobset)
        js["spec"].update(fields)
        return replace(self, jobset=js)

    def with_jobset(self, change: Callable[[dict[str, Any]], None]) -> State:
        """Change the JobSet manifest in place on a copy."""
        js = copy.deepcopy(self.jobset)
        change(js)
        return replace(self, jobset=js)


def start(jobset: dict[str, Any], uid: str = "js-uid") -> State:
    """A freshly created JobSet (uid and resourceVersion set by the 'API server')."""
    js = copy.deepcopy(jobset)
    js["metadata"].setdefault("uid", uid)
    js["metadata"]["resourceVersion"] = "1"
    return State(js)


def _merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


def _bump(state: State) -> tuple[State, str]:
    return replace(state, version=state.version + 1), str(state.version + 1)


def _create_job(state: State, action: CreateJob, now: datetime) -> State:
    if action.name in state.jobs:
        return state  # AlreadyExists
    state, rv = _bump(state)
    job = copy.deepcopy(action.manifest)
    job["metadata"].update(
        uid=f"uid-{action.name}-{rv}", resourceVersion=rv, creationTimestamp=format_time(now)
    )
    return replace(state, jobs={**state.jobs, action.name: job})


def _delete_job(state: State, action: DeleteJob, now: datetime) -> State:
    job = state.jobs.get(action.name)
    if job is None or job["metadata"]["uid"] != action.uid:
        return state  # NotFound / precondition failed
    state, rv = _bump(state)
    job = copy.deepcopy(job)
    job["metadata"].setdefault("deletionTimestamp", format_time(now))
    job["metadata"]["finalizers"] = ["foregroundDeletion"]
    job["metadata"]["resourceVersion"] = rv
    return replace(state, jobs={**state.jobs, action.name: job})


def _delete_jobs(state: State, action: DeleteJobs, now: datetime) -> State:
    """deletecollection: each Job the selector picks, as a DeleteJob of its own."""
    picks = parse_label_selector(action.label_selector)
    for name, job in sorted(state.jobs.items()):
        if picks is None or picks(job):
            uid = job["metadata"]["uid"]
            state = _delete_job(state, DeleteJob(action.namespace, name, uid), now)
    return state


def _update_job(state: State, action: UpdateJob) -> State:
    job = state.jobs.get(action.name)
    if job is None:
        return state
    if job["metadata"].get("resourceVersion") != action.resource_version:
        raise ConflictError(action.name)
    job = copy.deepcopy(job)
    if action.clear_start_time:
        job.get("status", {}).pop("startTime", None)
    job = _merge_patch(job, action.patch)
    state, rv = _bump(state)
    job["metadata"]["resourceVersion"] = rv
    return replace(state, jobs={**state.jobs, action.name: job})


def _update_status(state: State, action: UpdateStatus) -> State:
    if state.jobset["metadata"]["resourceVersion"] != action.resource_version:
        raise ConflictError("status")
    state, rv = _bump(state)
    js = copy.deepcopy(state.jobset)
    js["status"] = copy.deepcopy(action.status)
    js["metadata"]["resourceVersion"] = rv
    return replace(state, jobset=js)


def apply_plan(state: State, plan: Plan, now: datetime = T0) -> State:
    """Return the state after the API server carried out `plan`. Pure."""
    for action in plan.actions:
        if isinstance(action, CreateJob):
            state = _create_job(state, action, now)
        elif isinstance(action, DeleteJob):
            state = _delete_job(state, action, now)
        elif isinstance(action, DeleteJobs):
            state = _delete_jobs(state, action, now)
        elif isinstance(action, UpdateJob):
            state = _update_job(state, action)
        elif isinstance(action, CreateService):
            state = state if state.service else replace(state, service=action.manifest)
        elif isinstance(action, CreatePVC):
            name = action.manifest["metadata"]["name"]
            if name not in state.pvcs:
                state = replace(state, pvcs={**state.pvcs, name: copy.deepcopy(action.manifest)})
        elif isinstance(action, UpdateStatus):
            state = _update_status(state, action)
        elif isinstance(action, EmitEvent):
            state = replace(state, events=(*state.events, action))
        elif isinstance(action, IncrementMetric):
            state = replace(state, metrics=(*state.metrics, action))
        elif isinstance(action, DeleteJobSet):
            state = replace(state, jobset_deleted=True)
        else:
            assert isinstance(action, RequeueAfter)
    return state


def collect_garbage(state: State) -> State:
    """Finish foreground deletions: Jobs with a deletionTimestamp disappear."""
    jobs = {n: j for n, j in state.jobs.items() if "deletionTimestamp" not in j["metadata"]}
    return replace(state, jobs=jobs)


def run_job_controller(state: State) -> State:
    """What the kube Job controller does on its own: a suspended Job's pods go away."""
    jobs = dict(state.jobs)
    for name, job in state.jobs.items():
        status = job.get("status") or {}
        if job["spec"].get("suspend") and (status.get("active") or status.get("ready")):
            jobs[name] = {**job, "status": {**status, "active": 0, "ready": 0}}
    return replace(state, jobs=jobs)


def step(state: State, now: datetime = T0, config: CoreConfig | None = None) -> tuple[State, Plan]:
    """One reconcile pass applied: (new state, the plan)."""
    plan = reconcile(state.observed(), now, config)
    return apply_plan(state, plan, now), plan


def settle(
    state: State,
    now: datetime = T0,
    config: CoreConfig | None = None,
    *,
    gc: bool = True,
    max_passes: int = 12,
) -> State:
    """Reconcile (and garbage-collect) until the plan is empty; fail if it never settles."""
    for i in range(max_passes):
        if gc:
            state = collect_garbage(state)
        state = run_job_controller(state)
        plan = reconcile(state.observed(), now + timedelta(seconds=i), config)
        if plan.is_empty:
            return state
        state = apply_plan(state, plan, now + timedelta(seconds=i))
    raise AssertionError(f"reconcile did not settle in {max_passes} passes; last plan: {plan}")
