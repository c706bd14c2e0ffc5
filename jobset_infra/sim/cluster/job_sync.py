"""What the simulated Job controller decides for one batch/v1 Job (pure; no I/O).

`sync_job(job, pods, counted=..., now=..., wait_for_binding=...)` looks at a Job and slim views of
its Pods and returns a `JobSync`: Pods to create (whole manifests), Pods to delete, Pods to start
(a Pending Pod becomes Running and Ready: the kubelet's part), and the Job's new status, or None
when the status would not change. The shell (`job_controller.py`) applies it and feeds the result
back, so running `sync_job` again on the applied state returns an empty `JobSync`.

It follows the Kubernetes Job controller as of 1.31+ for what JobSet observes:
- Indexed Jobs get one Pod per completion index, named `<job>-<index>-<5 chars>`, hostname
  `<job>-<index>`, the completion index as annotation, label and `JOB_COMPLETION_INDEX` env var.
- Counters `active`, `ready`, `succeeded`, `failed`, `terminating`, `completedIndexes`; `startTime`
  on first start and again on resume; `completionTime` on success.
- Terminal states go through `SuccessCriteriaMet` / `FailureTarget` first; `Complete` / `Failed`
  (same reason and message) follow once no Pod of the Job is running any more.
- `spec.suspend` deletes running Pods and sets `Suspended` (`JobSuspended`); resuming flips it to
  False (`JobResumed`) and resets `startTime`.
- `failed > backoffLimit` (or, under restartPolicy OnFailure, container restarts reaching it)
  fails the Job with `BackoffLimitExceeded`, `activeDeadlineSeconds`
  with `DeadlineExceeded`, a `podFailurePolicy` FailJob rule with `PodFailurePolicy` (Ignore
  rules keep a failure from counting; see `pod_failure_policy.py`). Not modelled: successPolicy,
  backoffLimitPerIndex, pod tracking finalizers (the shell's `counted` set does their job).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from jobset_infra.api.constants import (
    COMPLETION_MODE_INDEXED,
    JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
    JOB_REASON_DEADLINE_EXCEEDED,
    JOB_REASON_POD_FAILURE_POLICY,
)
from jobset_infra.sim.cluster import pod_failure_policy
from jobset_infra.sim.cluster.job_pods import (
    FAILED,
    PENDING,
    SUCCEEDED,
    PodView,
    copy_json,
    format_indexes,
    parse_indexes,
    parse_timestamp,
    pod_manifest,
    pod_name,
    timestamp,
)

JsonObj = dict[str, Any]
# format_indexes / parse_indexes live with the Pod helpers and are re-exported from here.
__all__ = [
    "BACKOFF_LIMIT_MESSAGE", "COMPLETIONS_REACHED_MESSAGE", "COMPLETIONS_REACHED_REASON",
    "DEADLINE_MESSAGE", "JOB_COMPLETE", "JOB_FAILED", "JOB_FAILURE_TARGET",
    "JOB_RESUMED_MESSAGE", "JOB_RESUMED_REASON", "JOB_SUCCESS_CRITERIA_MET", "JOB_SUSPENDED",
    "JOB_SUSPENDED_MESSAGE", "JOB_SUSPENDED_REASON", "JobSpecView", "JobSync", "condition",
    "failure_target_status", "format_indexes", "is_true", "parse_indexes", "set_condition",
    "sync_job",
]

# --- Kubernetes' own strings for Jobs (k8s.io/api/batch/v1, pkg/controller/job) ----------------

# Job condition types.
JOB_COMPLETE: Final = "Complete"
JOB_FAILED: Final = "Failed"
JOB_SUSPENDED: Final = "Suspended"
JOB_FAILURE_TARGET: Final = "FailureTarget"
JOB_SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"
# Reasons and messages the Job controller writes.
COMPLETIONS_REACHED_REASON: Final = "CompletionsReached"
COMPLETIONS_REACHED_MESSAGE: Final = "Reached expected number of succeeded pods"
BACKOFF_LIMIT_MESSAGE: Final = "Job has reached the specified backoff limit"
DEADLINE_MESSAGE: Final = "Job was active longer than specified deadline"
JOB_SUSPENDED_REASON: Final = "JobSuspended"
JOB_SUSPENDED_MESSAGE: Final = "Job suspended"
JOB_RESUMED_REASON: Final = "JobResumed"
JOB_RESUMED_MESSAGE: Final = "Job resumed"
_DEFAULT_BACKOFF_LIMIT: Final = 6


# --- Views -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobSpecView:
    """A Job's spec with the API server's defaults applied."""

    parallelism: int
    completions: int | None
    indexed: bool
    backoff_limit: int
    suspend: bool
    active_deadline: int | None
    restart_on_failure: bool = False

    @classmethod
    def of(cls, job: JsonObj) -> JobSpecView:
        spec = job.get("spec") or {}
        parallelism = spec.get("parallelism")
        completions = spec.get("completions")
        if parallelism is None and completions is None:
            parallelism, completions = 1, 1
        return cls(
            parallelism=1 if parallelism is None else int(parallelism),
            completions=None if completions is None else int(completions),
            indexed=spec.get("completionMode") == COMPLETION_MODE_INDEXED,
            backoff_limit=int(spec.get("backoffLimit", _DEFAULT_BACKOFF_LIMIT)),
            suspend=bool(spec.get("suspend")),
            active_deadline=spec.get("activeDeadlineSeconds"),
            restart_on_failure=((spec.get("template") or {}).get("spec") or {}).get(
                "restartPolicy") == "OnFailure",
        )


@dataclass(frozen=True, slots=True)
class JobSync:
    """The plan for one Job. `start_created`: start the created Pods at once (no scheduler)."""

    create: tuple[JsonObj, ...] = ()
    delete: tuple[str, ...] = ()
    start: tuple[str, ...] = ()
    start_created: bool = False
    status: JsonObj | None = None
    counted: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.create or self.delete or self.start or self.status is not None)


# --- Conditions ------------------------------------------------------------------------------


def condition(conditions: Sequence[JsonObj], kind: str) -> JsonObj | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def is_true(conditions: Sequence[JsonObj], kind: str) -> bool:
    found = condition(conditions, kind)
    return found is not None and found.get("status") == "True"


def set_condition(
    conditions: Sequence[JsonObj], kind: str, status: str, reason: str, message: str, *, now: str
) -> list[JsonObj]:
    """Like the Job controller: a False condition is only recorded over an existing one."""
    new = {
        "type": kind, "status": status, "lastProbeTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message,
    }
    out = [dict(c) for c in conditions]
    for i, c in enumerate(out):
        if c.get("type") == kind:
            same = (c.get("status"), c.get("reason"), c.get("message")) == (status, reason, message)
            if not same:
                out[i] = new
            return out
    if status == "True":
        out.append(new)
    return out


def failure_target_status(job: JsonObj, reason: str, message: str, now: datetime) -> JsonObj:
    """The Job's status with FailureTarget=True added: how a test fails a Job on purpose."""
    status = copy_json(job.get("status") or {})
    at = timestamp(now)
    status["conditions"] = set_condition(
        status.get("conditions") or [], JOB_FAILURE_TARGET, "True", reason, message, now=at
    )
    return dict(status)


# --- The decision ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tally:
    succeeded: int
    failed: int
    completed: frozenset[int]
    fresh: tuple[str, ...]
    fail_job: str | None = None


@dataclass(frozen=True, slots=True)
class _Verdict:
    target: str
    final: str
    reason: str
    message: str


_SUCCESS: Final = _Verdict(
    JOB_SUCCESS_CRITERIA_MET, JOB_COMPLETE, COMPLETIONS_REACHED_REASON, COMPLETIONS_REACHED_MESSAGE
)


@dataclass(frozen=True, slots=True)
class _Pass:
    """One sync pass over one Job: its parts, read once."""

    job: JsonObj
    spec: JobSpecView
    status: JsonObj
    conditions: list[JsonObj]
    pods: Sequence[PodView]
    now: datetime

    @property
    def at(self) -> str:
        return timestamp(self.now)

    @property
    def live(self) -> list[PodView]:
        return [p for p in self.pods if p.live]

    @property
    def stopping(self) -> int:
        """Pods still on their way out: being deleted, or about to be."""
        return sum(p.deleting and not p.terminal for p in self.pods)


def sync_job(
    job: JsonObj,
    pods: Sequence[PodView],
    *,
    counted: frozenset[str] | set[str],
    now: datetime,
    wait_for_binding: bool,
) -> JobSync:
    """Everything the Job controller does for `job` in one pass; `counted`: Pod uids accounted."""
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return JobSync()  # the garbage collector removes its Pods
    status = job.get("status") or {}
    conditions = list(status.get("conditions") or [])
    if is_true(conditions, JOB_COMPLETE) or is_true(conditions, JOB_FAILED):
        return JobSync(delete=tuple(p.name for p in pods if p.live))
    run = _Pass(job, JobSpecView.of(job), status, conditions, pods, now)
    # 1. Account for the Pods that finished since the last pass.
    tally = _tally(run, counted)
    # 2. A terminal state: stop every Pod, then record the final condition.
    verdict = _verdict(run, tally)
    if verdict is not None:
        return _finish(run, tally, verdict)
    # 3. A suspended Job runs no Pods.
    if run.spec.suspend:
        return _suspend(run, tally)
    # 4. Otherwise resume if needed, create the missing Pods and start the bound ones.
    return _run(run, tally, wait_for_binding)


def _tally(run: _Pass, counted: frozenset[str] | set[str]) -> _Tally:
    fresh = sorted((p for p in run.pods if p.terminal and p.uid not in counted),
                   key=lambda p: p.name)
    failed, fail_job = pod_failure_policy.failures(run.job, [p for p in fresh if p.phase == FAILED])
    failed += int(run.status.get("failed", 0))
    uids = tuple(p.uid for p in fresh)
    if not run.spec.indexed:
        succeeded = int(run.status.get("succeeded", 0)) + sum(p.phase == SUCCEEDED for p in fresh)
        return _Tally(succeeded, failed, frozenset(), uids, fail_job)
    limit = run.spec.completions or 0
    completed = parse_indexes(run.status.get("completedIndexes")) | {
        p.index for p in run.pods
        if p.phase == SUCCEEDED and p.index is not None and p.index < limit
    }
    return _Tally(len(completed), failed, frozenset(completed), uids, fail_job)


def _verdict(run: _Pass, tally: _Tally) -> _Verdict | None:
    spec = run.spec
    target = condition(run.conditions, JOB_FAILURE_TARGET)
    if target is not None and target.get("status") == "True":
        return _failure(target.get("reason", ""), target.get("message", ""))
    if is_true(run.conditions, JOB_SUCCESS_CRITERIA_MET):
        return _SUCCESS
    if tally.fail_job is not None:
        return _failure(JOB_REASON_POD_FAILURE_POLICY, tally.fail_job)
    if tally.failed > spec.backoff_limit or _past_backoff_limit_on_failure(run):
        return _failure(JOB_REASON_BACKOFF_LIMIT_EXCEEDED, BACKOFF_LIMIT_MESSAGE)
    if _past_deadline(run):
        return _failure(JOB_REASON_DEADLINE_EXCEEDED, DEADLINE_MESSAGE)
    if spec.completions is not None and tally.succeeded >= spec.completions:
        return _SUCCESS
    if spec.completions is None and tally.succeeded > 0 and not run.live:
        return _SUCCESS
    return None


def _failure(reason: str, message: str) -> _Verdict:
    return _Verdict(JOB_FAILURE_TARGET, JOB_FAILED, reason, message)


def _past_backoff_limit_on_failure(run: _Pass) -> bool:
    """restartPolicy OnFailure: container restarts of running Pods count against the limit."""
    if not run.spec.restart_on_failure:
        return False
    restarts = sum(p.restarts for p in run.live)
    return restarts > 0 if run.spec.backoff_limit == 0 else restarts >= run.spec.backoff_limit


def _past_deadline(run: _Pass) -> bool:
    started = run.status.get("startTime")
    if run.spec.active_deadline is None or not started or run.spec.suspend:
        return False
    return (run.now - parse_timestamp(started)).total_seconds() >= run.spec.active_deadline


def _finish(run: _Pass, tally: _Tally, verdict: _Verdict) -> JobSync:
    live = [p.name for p in run.live]
    stopping = len(live) + run.stopping
    at = run.at
    conds = set_condition(
        run.conditions, verdict.target, "True", verdict.reason, verdict.message, now=at
    )
    if stopping == 0:
        conds = set_condition(conds, verdict.final, "True", verdict.reason, verdict.message, now=at)
    done = stopping == 0 and verdict.final == JOB_COMPLETE
    new = _compose(
        run, conds, run.status.get("startTime"), at if done else run.status.get("completionTime"),
        active=0, ready=0, terminating=stopping, tally=tally,
    )
    return JobSync(delete=tuple(live), status=_changed(run.status, new), counted=tally.fresh)


def _suspend(run: _Pass, tally: _Tally) -> JobSync:
    live = [p.name for p in run.live]
    conds = set_condition(
        run.conditions, JOB_SUSPENDED, "True", JOB_SUSPENDED_REASON, JOB_SUSPENDED_MESSAGE,
        now=run.at,
    )
    new = _compose(
        run, conds, run.status.get("startTime"), None,
        active=0, ready=0, terminating=len(live) + run.stopping, tally=tally,
    )
    return JobSync(delete=tuple(live), status=_changed(run.status, new), counted=tally.fresh)


def _run(run: _Pass, tally: _Tally, wait_for_binding: bool) -> JobSync:
    conds = run.conditions
    started = run.status.get("startTime")
    if is_true(conds, JOB_SUSPENDED):
        conds = set_condition(
            conds, JOB_SUSPENDED, "False", JOB_RESUMED_REASON, JOB_RESUMED_MESSAGE, now=run.at
        )
        started = run.at  # resuming restarts the clock activeDeadlineSeconds counts from
    live = run.live
    create = _missing_pods(run, tally, live)
    start = tuple(
        p.name for p in live if p.phase == PENDING and (p.node_name or not wait_for_binding)
    )
    ready = sum(p.ready for p in live) + len(start) + (0 if wait_for_binding else len(create))
    new = _compose(
        run, conds, started or run.at, None,
        active=len(live) + len(create), ready=ready, terminating=run.stopping, tally=tally,
    )
    return JobSync(
        create=create, start=start, start_created=not wait_for_binding,
        status=_changed(run.status, new), counted=tally.fresh,
    )


def _missing_pods(run: _Pass, tally: _Tally, live: Sequence[PodView]) -> tuple[JsonObj, ...]:
    spec, job = run.spec, run.job
    room = spec.parallelism - len(live)
    if room <= 0:
        return ()
    if spec.indexed:
        busy = {p.index for p in live}
        wanted = [
            i for i in range(spec.completions or 0) if i not in tally.completed and i not in busy
        ][:room]
        attempts: dict[int | None, int] = {}
        for p in run.pods:
            attempts[p.index] = attempts.get(p.index, 0) + 1
        return tuple(pod_manifest(job, i, pod_name(job, i, attempts.get(i, 0))) for i in wanted)
    if spec.completions is None:
        count = 0 if tally.succeeded > 0 else room
    else:
        count = min(room, spec.completions - tally.succeeded - len(live))
    first = len(run.pods)
    return tuple(
        pod_manifest(job, None, pod_name(job, None, first + k)) for k in range(max(count, 0))
    )


def _compose(
    run: _Pass, conditions: list[JsonObj], start_time: str | None, completion_time: str | None,
    *, active: int, ready: int, terminating: int, tally: _Tally,
) -> JsonObj:
    """A Job status in the API's field order; zero counters omitted as the API omits them."""
    optional = {
        "conditions": conditions, "startTime": start_time, "completionTime": completion_time,
        "active": active, "succeeded": tally.succeeded, "failed": tally.failed,
    }
    out: JsonObj = {key: value for key, value in optional.items() if value}
    out["terminating"] = terminating
    if run.spec.indexed and tally.completed:
        out["completedIndexes"] = format_indexes(tally.completed)
    out["uncountedTerminatedPods"] = {}
    out["ready"] = ready
    return out


def _changed(old: JsonObj, new: JsonObj) -> JsonObj | None:
    return None if new == old else new
