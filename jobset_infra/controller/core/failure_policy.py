"""Failure policy: what a failed child Job does to its JobSet (upstream `failure_policy.go`).

1. No failure policy: the JobSet fails (`FailedJobs`) naming the earliest-failed Job.
2. Otherwise the rules are tried in order; for each, the earliest-failed Job it applies to is
   looked for (reason in onJobFailureReasons, a pattern of onJobFailureMessagePatterns found in the
   failure message, replicated job in targetReplicatedJobs; an empty list matches anything). The
   first rule with a match wins.
3. No rule matched: the default action RestartJobSet applies to the earliest-failed Job.
4. The action is applied through `ACTIONS`, a table keyed by every FailurePolicyAction.

Pure: returns a `FailureOutcome`; reconcile applies it to the status.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature
from jobset_infra.api.models import FailurePolicy, FailurePolicyAction, FailurePolicyRule, JobSet
from jobset_infra.controller.core import conditions as cond
from jobset_infra.controller.core.classify import job_failure
from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.types import ChildJob, CoreConfig

__all__ = [
    "ACTIONS",
    "FailureOutcome",
    "RestartCounters",
    "execute_failure_policy",
    "first_failed_job",
    "first_matching_rule_and_job",
    "rule_applies",
]

_LATEST = datetime.max.replace(tzinfo=None)


@dataclass(frozen=True, slots=True)
class RestartCounters:
    """The restart accounting in status (per-Job arrays only with the RestartJob gate)."""

    restarts: int = 0
    counts_towards_max: int = 0
    job_restarts: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    job_restarts_towards_max: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    def total_towards_max(self, include_jobs: bool) -> int:
        """Restarts that count towards maxRestarts (per-Job ones only with the gate on)."""
        per_job = sum(sum(v) for v in self.job_restarts_towards_max.values())
        return self.counts_towards_max + (per_job if include_jobs else 0)


@dataclass(frozen=True, slots=True)
class FailureOutcome:
    """What the failure policy decided: fail, or restart (counters), plus events to emit."""

    counters: RestartCounters
    failed: ConditionSpec | None = None
    restarting: ConditionSpec | None = None
    events: tuple[tuple[str, str], ...] = ()
    """(reason, message) Warning events queued with the status write."""


def _failure_key(job: ChildJob) -> tuple[bool, datetime, str]:
    failure = job_failure(job)
    since = failure.since if failure is not None else None
    if since is None:
        return (True, _LATEST, job.name)
    return (False, since.replace(tzinfo=None), job.name)


def first_failed_job(jobs: Sequence[ChildJob]) -> ChildJob | None:
    """Return the Job that failed earliest (ties broken by name), or None."""
    failing = [job for job in jobs if job_failure(job) is not None]
    return min(failing, key=_failure_key) if failing else None


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None  # upstream logs and skips an invalid pattern


def rule_applies(rule: FailurePolicyRule, job: ChildJob) -> bool:
    """Return whether `rule` matches the failed `job` (reasons, message patterns, targets)."""
    failure = job_failure(job)
    if failure is None:
        return False
    rjob = job.rjob
    if not rjob:
        return False
    if rule.target_replicated_jobs and rjob not in rule.target_replicated_jobs:
        return False
    if rule.on_job_failure_reasons and failure.reason not in rule.on_job_failure_reasons:
        return False
    if not rule.on_job_failure_message_patterns:
        return True
    # Go regexp.MatchString is an unanchored search, hence `search`
    patterns = (_compiled(p) for p in rule.on_job_failure_message_patterns)
    return any(p is not None and p.search(failure.message) for p in patterns)


def first_matching_rule_and_job(
    rules: Sequence[FailurePolicyRule], failed: Sequence[ChildJob]
) -> tuple[int, ChildJob] | None:
    """Return (rule index, earliest-failed Job it applies to) for the first rule with a match."""
    for i, rule in enumerate(rules):
        job = first_failed_job([j for j in failed if rule_applies(rule, j)])
        if job is not None:
            return i, job
    return None


# --------------------------------------------------------------------------- actions


@dataclass(frozen=True, slots=True)
class _Context:
    policy: FailurePolicy
    job: ChildJob
    rule_reason: str
    counters: RestartCounters
    config: CoreConfig
    replicas: Mapping[str, int]


def _message(action: str, job: ChildJob) -> str:
    return c.FAILURE_POLICY_ACTION_MESSAGE.format(action=action) + _suffix(job)


def _suffix(job: ChildJob) -> str:
    return c.FIRST_FAILED_JOB_SUFFIX.format(job=job.name)


def _fail(ctx: _Context, reason: str, message: str) -> FailureOutcome:
    return FailureOutcome(ctx.counters, failed=cond.failed(reason, message))


def _reached_max(ctx: _Context) -> bool:
    towards = ctx.counters.total_towards_max(ctx.config.enabled(Feature.RESTART_JOB))
    return towards >= ctx.policy.max_restarts


def _max_reached(ctx: _Context) -> FailureOutcome:
    message = c.REACHED_MAX_RESTARTS_MESSAGE + _suffix(ctx.job)
    return _fail(ctx, c.REACHED_MAX_RESTARTS_REASON, message)


def _fail_jobset(ctx: _Context) -> FailureOutcome:
    action = FailurePolicyAction.FAIL_JOBSET
    return _fail(ctx, c.FAIL_JOBSET_ACTION_REASON, _message(action, ctx.job))


def _restart_jobset(ctx: _Context, *, counted: bool) -> FailureOutcome:
    if counted and _reached_max(ctx):
        return _max_reached(ctx)
    action = (
        FailurePolicyAction.RESTART_JOBSET
        if counted
        else FailurePolicyAction.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS
    )
    event = c.RESTART_JOBSET_ACTION_EVENT if counted else c.RESTART_JOBSET_IGNORE_MAX_ACTION_EVENT
    counters = replace(
        ctx.counters,
        restarts=ctx.counters.restarts + 1,
        counts_towards_max=ctx.counters.counts_towards_max + counted,
    )
    message = _message(action, ctx.job)
    return FailureOutcome(
        counters, restarting=cond.restarting(ctx.rule_reason, message), events=((event, message),)
    )


def _bumped(
    arrays: Mapping[str, tuple[int, ...]], rjob: str, index: int, size: int
) -> dict[str, tuple[int, ...]]:
    values = list(arrays.get(rjob, ()))[:size]  # sized to the replicas, as upstream
    values += [0] * (size - len(values))
    values[index] += 1
    return {**arrays, rjob: tuple(values)}


def _restart_job(ctx: _Context, *, counted: bool) -> FailureOutcome:
    if not ctx.config.enabled(Feature.RESTART_JOB):
        # The CRD cannot know the controller's gates; restart the JobSet instead of wedging.
        fallback = _restart_jobset(ctx, counted=True)
        warning = (c.RESTART_JOB_GATE_DISABLED_EVENT, c.RESTART_JOB_GATE_DISABLED_MESSAGE)
        return replace(fallback, events=(*fallback.events, warning))
    rjob, index = ctx.job.rjob, ctx.job.job_index
    size = ctx.replicas.get(rjob, 0)
    if index is None or not 0 <= index < size:
        # labels edited by hand: this Job cannot be restarted on its own (upstream errors)
        return _restart_jobset(ctx, counted=True)
    if counted and _reached_max(ctx):
        return _max_reached(ctx)
    counters = replace(
        ctx.counters, job_restarts=_bumped(ctx.counters.job_restarts, rjob, index, size)
    )
    if counted:
        towards = _bumped(ctx.counters.job_restarts_towards_max, rjob, index, size)
        counters = replace(counters, job_restarts_towards_max=towards)
    action = (
        FailurePolicyAction.RESTART_JOB
        if counted
        else FailurePolicyAction.RESTART_JOB_AND_IGNORE_MAX_RESTARTS
    )
    event = c.RESTART_JOB_ACTION_EVENT if counted else c.RESTART_JOB_IGNORE_MAX_ACTION_EVENT
    return FailureOutcome(counters, events=((event, _message(action, ctx.job)),))


ACTIONS: Mapping[FailurePolicyAction, Callable[[_Context], FailureOutcome]] = {
    FailurePolicyAction.FAIL_JOBSET: _fail_jobset,
    FailurePolicyAction.RESTART_JOBSET: lambda ctx: _restart_jobset(ctx, counted=True),
    FailurePolicyAction.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS: lambda ctx: _restart_jobset(
        ctx, counted=False
    ),
    FailurePolicyAction.RESTART_JOB: lambda ctx: _restart_job(ctx, counted=True),
    FailurePolicyAction.RESTART_JOB_AND_IGNORE_MAX_RESTARTS: lambda ctx: _restart_job(
        ctx, counted=False
    ),
}
"""Every failure-policy action and how it is applied (tested to cover the whole enum)."""


def _rule_reason(rule: FailurePolicyRule, index: int) -> str:
    # an undefaulted (webhook-less) rule gets the name upstream's webhook would give it
    name = rule.name or f"{c.DEFAULT_RULE_NAME_PREFIX}{index}"
    return c.FAILURE_POLICY_RULE_REASON_PREFIX + name


def execute_failure_policy(
    js: JobSet, failed: Sequence[ChildJob], counters: RestartCounters, config: CoreConfig
) -> FailureOutcome | None:
    """Return what the failed Jobs do to the JobSet; None when no Job is failing. Pure."""
    first = first_failed_job(failed)
    if first is None:
        return None
    policy = js.spec.failure_policy
    if policy is None:
        message = c.FAILED_JOBS_MESSAGE + _suffix(first)
        return FailureOutcome(counters, failed=cond.failed(c.FAILED_JOBS_REASON, message))
    replicas = {rjob.name: rjob.replicas for rjob in js.spec.replicated_jobs}
    match = first_matching_rule_and_job(policy.rules, failed)
    if match is None:
        ctx = _Context(policy, first, c.DEFAULT_FAILURE_POLICY_REASON, counters, config, replicas)
        return ACTIONS[FailurePolicyAction.RESTART_JOBSET](ctx)
    index, job = match
    rule = policy.rules[index]
    ctx = _Context(policy, job, _rule_reason(rule, index), counters, config, replicas)
    return ACTIONS[rule.action](ctx)
