"""Failure policy (upstream failure_policy_test.go: TestFindFirstFailedJob,
TestFailurePolicyRuleIsApplicable, TestFindFirstFailedPolicyRuleAndJob,
TestApplyFailurePolicyRuleAction)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.models import FailurePolicyAction, FailurePolicyRule
from jobset_infra.controller.core.failure_policy import (
    ACTIONS,
    FailureOutcome,
    RestartCounters,
    execute_failure_policy,
    first_failed_job,
    first_matching_rule_and_job,
    rule_applies,
)
from jobset_infra.controller.core.types import ChildJob, CoreConfig
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import make_jobset

T = datetime(2026, 2, 1, tzinfo=UTC)
LATER = T + timedelta(minutes=1)
BACKOFF = c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED
DEADLINE = c.JOB_REASON_DEADLINE_EXCEEDED


def failed(
    name: str = "a",
    index: int = 0,
    at: datetime = T,
    reason: str = BACKOFF,
    message: str = "some critical error with a message",
) -> ChildJob:
    return (
        make_job("js", rjob=name, index=index).failed(at=at, reason=reason, message=message).view()
    )


def rule(
    action: FailurePolicyAction = FailurePolicyAction.FAIL_JOBSET,
    *,
    name: str = "r",
    reasons: tuple[str, ...] = (),
    patterns: tuple[str, ...] = (),
    targets: tuple[str, ...] = (),
) -> FailurePolicyRule:
    return FailurePolicyRule(
        name=name,
        action=action,
        on_job_failure_reasons=list(reasons),
        on_job_failure_message_patterns=list(patterns),
        target_replicated_jobs=list(targets),
    )


# --------------------------------------------------------------------------- first failed job


@pytest.mark.parametrize(
    ("jobs", "want"),
    [
        pytest.param([], None, id="No failed jobs"),
        pytest.param([failed("a")], "js-a-0", id="Single failed job"),
        pytest.param(
            [failed("a", at=LATER), failed("b", at=T), failed("c", at=LATER)],
            "js-b-0",
            id="Multiple failed jobs, earliest first",
        ),
        pytest.param(
            [make_job("js", rjob="a").ready().view(), failed("b")],
            "js-b-0",
            id="Jobs without failed condition",
        ),
        pytest.param(
            [failed("a", at=LATER), make_job("js", rjob="b").failure_target(at=T).view()],
            "js-b-0",
            id="a FailureTarget job counts as failed since its FailureTarget time (upstream 979)",
        ),
    ],
)
def test_first_failed_job(jobs: list[ChildJob], want: str | None) -> None:
    got = first_failed_job(jobs)
    assert (got.name if got else None) == want


# --------------------------------------------------------------------------- rule applicability

_TARGETS = {
    "matches all replicated jobs": (),
    "matches parent replicated job": ("a",),
    "does not match parent replicated job": ("other",),
}
_REASONS = {
    "all reasons": (),
    "matching reason": (BACKOFF,),
    "non-matching reason": (DEADLINE,),
}


@pytest.mark.parametrize(
    ("targets", "reasons", "want"),
    [
        pytest.param(
            t,
            r,
            t_name != "does not match parent replicated job" and r_name != "non-matching reason",
            id=f"failure policy rule {t_name} and {r_name}",
        )
        for t_name, t in _TARGETS.items()
        for r_name, r in _REASONS.items()
    ],
)
def test_rule_applicability_by_target_and_reason(
    targets: tuple[str, ...], reasons: tuple[str, ...], want: bool
) -> None:
    assert rule_applies(rule(targets=targets, reasons=reasons), failed("a")) is want


@pytest.mark.parametrize(
    ("reasons", "patterns", "message", "want"),
    [
        pytest.param(
            (),
            ("critical error",),
            "some critical error with a message",
            True,
            id="failure policy rule matches the job failure message pattern",
        ),
        pytest.param(
            (),
            ("^fatal",),
            "some critical error with a message",
            False,
            id="failure policy rule does not match the job failure message pattern",
        ),
        pytest.param(
            (BACKOFF,),
            ("crit.*msg|critical",),
            "some critical error",
            True,
            id="failure policy rule matches both the job failure reason and message pattern",
        ),
        pytest.param(
            (BACKOFF,),
            ("some message",),
            "some critical error with a message",
            False,
            id="failure policy rule matches the job failure reason but not the message pattern",
        ),
        pytest.param(
            (),
            ("[unclosed", "critical"),
            "critical",
            True,
            id="an invalid pattern is skipped and the valid one still matches",
        ),
        pytest.param((), ("[unclosed",), "[unclosed", False, id="an invalid pattern never matches"),
    ],
)
def test_rule_applicability_by_message(
    reasons: tuple[str, ...], patterns: tuple[str, ...], message: str, want: bool
) -> None:
    job = failed("a", message=message)
    assert rule_applies(rule(reasons=reasons, patterns=patterns), job) is want


def test_rule_never_matches_a_job_without_replicated_job_label() -> None:
    view = make_job("js").failed(at=T).view()
    labels = {k: v for k, v in view.labels.items() if k != c.REPLICATED_JOB_NAME_KEY}
    from dataclasses import replace

    assert rule_applies(rule(), replace(view, labels=labels)) is False


# --------------------------------------------------------------------------- first rule and job

FAIL_B = rule(targets=("b",))
ANY = rule()
ONLY_DEADLINE = rule(reasons=(DEADLINE,))


@pytest.mark.parametrize(
    ("rules", "jobs", "want"),
    [
        pytest.param([], [], None, id="0 jobs, 0 rules"),
        pytest.param([], [failed("a")], None, id="1 job, 0 rules"),
        pytest.param([ONLY_DEADLINE], [failed("a")], None, id="1 job, 1 rule that does not match"),
        pytest.param(
            [ANY, ONLY_DEADLINE, FAIL_B],
            [failed("a")],
            (0, "js-a-0"),
            id="1 job, 3 rules, the first matches",
        ),
        pytest.param(
            [ONLY_DEADLINE, ANY, FAIL_B],
            [failed("a")],
            (1, "js-a-0"),
            id="1 job, 3 rules, the second matches",
        ),
        pytest.param(
            [ONLY_DEADLINE, FAIL_B, ANY],
            [failed("a")],
            (2, "js-a-0"),
            id="1 job, 3 rules, the third matches",
        ),
        pytest.param([], [failed("a"), failed("b")], None, id="2 jobs, 0 rules"),
        pytest.param(
            [ONLY_DEADLINE],
            [failed("a", at=LATER), failed("b", at=T)],
            None,
            id="2 jobs (second failed earlier), 1 rule matching none",
        ),
        pytest.param(
            [ANY],
            [failed("a", at=LATER), failed("b", at=T)],
            (0, "js-b-0"),
            id="2 jobs (second failed earlier), 1 rule matching both returns the earlier job",
        ),
        pytest.param(
            [ONLY_DEADLINE, ANY],
            [failed("a", at=LATER), failed("b", at=T)],
            (1, "js-b-0"),
            id="2 jobs, 2 rules where only the second matches both",
        ),
        pytest.param(
            [FAIL_B],
            [failed("a", at=T), failed("b", at=LATER)],
            (0, "js-b-0"),
            id="the earliest job the rule applies to, not the earliest job",
        ),
    ],
)
def test_first_matching_rule_and_job(
    rules: list[FailurePolicyRule], jobs: list[ChildJob], want: tuple[int, str] | None
) -> None:
    got = first_matching_rule_and_job(rules, jobs)
    assert (None if got is None else (got[0], got[1].name)) == want


# --------------------------------------------------------------------------- actions


def test_every_action_has_an_applier() -> None:
    assert set(ACTIONS) == set(FailurePolicyAction)


NO_RESTARTS = RestartCounters()


def _outcome(
    action: FailurePolicyAction | None,
    *,
    max_restarts: int = 3,
    counters: RestartCounters = NO_RESTARTS,
    restart_job: bool = True,
    no_policy: bool = False,
) -> FailureOutcome:
    builder = make_jobset("js").replicated_job("a", replicas=2)
    if not no_policy:
        builder.failure_policy(max_restarts=max_restarts)
        if action is not None:
            builder.rule(action.value, "rule1")
    js = builder.model()
    job = make_job("js", rjob="a", index=1).failed(at=T).view()
    config = CoreConfig(FeatureGates.of({Feature.RESTART_JOB: restart_job}))
    out = execute_failure_policy(js, [job], counters, config)
    assert out is not None
    return out


A = FailurePolicyAction
SUFFIX = " (first failed job: js-a-1)"


@pytest.mark.parametrize(
    ("action", "kw", "want_failed", "want_restarting", "want_counters", "want_events"),
    [
        pytest.param(
            None,
            {"no_policy": True},
            (c.FAILED_JOBS_REASON, "jobset failed due to one or more job failures" + SUFFIX),
            None,
            RestartCounters(),
            (),
            id="no failure policy fails the jobset with FailedJobs",
        ),
        pytest.param(
            A.FAIL_JOBSET,
            {},
            (c.FAIL_JOBSET_ACTION_REASON, "applying FailJobSet failure policy action" + SUFFIX),
            None,
            RestartCounters(),
            (),
            id="FailJobSet action",
        ),
        pytest.param(
            None,
            {"counters": RestartCounters(1, 1)},
            None,
            (
                c.DEFAULT_FAILURE_POLICY_REASON,
                "applying RestartJobSet failure policy action" + SUFFIX,
            ),
            RestartCounters(2, 2),
            (
                (
                    c.RESTART_JOBSET_ACTION_EVENT,
                    "applying RestartJobSet failure policy action" + SUFFIX,
                ),
            ),
            id=(
                "RestartJobSet when restarts < maxRestarts increments restarts count and counts "
                "towards max"
            ),
        ),
        pytest.param(
            A.RESTART_JOBSET,
            {},
            None,
            ("FailurePolicy_rule1", "applying RestartJobSet failure policy action" + SUFFIX),
            RestartCounters(1, 1),
            (
                (
                    c.RESTART_JOBSET_ACTION_EVENT,
                    "applying RestartJobSet failure policy action" + SUFFIX,
                ),
            ),
            id=(
                "RestartJobSet when restarts < maxRestarts with matching rule sets "
                "FailurePolicy_{RuleName} reason"
            ),
        ),
        pytest.param(
            A.RESTART_JOBSET,
            {"counters": RestartCounters(5, 3)},
            (
                c.REACHED_MAX_RESTARTS_REASON,
                "jobset failed due to reaching max number of restarts" + SUFFIX,
            ),
            None,
            RestartCounters(5, 3),
            (),
            id="RestartJobSet action when restarts >= maxRestarts fails the jobset",
        ),
        pytest.param(
            A.RESTART_JOBSET,
            {"max_restarts": 0},
            (
                c.REACHED_MAX_RESTARTS_REASON,
                "jobset failed due to reaching max number of restarts" + SUFFIX,
            ),
            None,
            RestartCounters(),
            (),
            id="an empty failure policy (maxRestarts 0) fails with ReachedMaxRestarts",
        ),
        pytest.param(
            A.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS,
            {"counters": RestartCounters(7, 3)},
            None,
            (
                "FailurePolicy_rule1",
                "applying RestartJobSetAndIgnoreMaxRestarts failure policy action" + SUFFIX,
            ),
            RestartCounters(8, 3),
            (
                (
                    c.RESTART_JOBSET_IGNORE_MAX_ACTION_EVENT,
                    "applying RestartJobSetAndIgnoreMaxRestarts failure policy action" + SUFFIX,
                ),
            ),
            id="RestartJobSetAndIgnoreMaxRestarts action does not count toward max restarts",
        ),
        pytest.param(
            A.RESTART_JOB,
            {"counters": RestartCounters(1, 1)},
            None,
            None,
            RestartCounters(1, 1, {"a": (0, 1)}, {"a": (0, 1)}),
            ((c.RESTART_JOB_ACTION_EVENT, "applying RestartJob failure policy action" + SUFFIX),),
            id=(
                "RestartJob action when combined restarts < maxRestarts increments jobRestart "
                "count and counts towards max"
            ),
        ),
        pytest.param(
            A.RESTART_JOB,
            {"counters": RestartCounters(2, 2, {"a": (1, 0)}, {"a": (1, 0)})},
            (
                c.REACHED_MAX_RESTARTS_REASON,
                "jobset failed due to reaching max number of restarts" + SUFFIX,
            ),
            None,
            RestartCounters(2, 2, {"a": (1, 0)}, {"a": (1, 0)}),
            (),
            id="RestartJob action when combined restarts >= maxRestarts fails the jobset",
        ),
        pytest.param(
            A.RESTART_JOBSET,
            {"counters": RestartCounters(2, 2, {"a": (1, 0)}, {"a": (1, 0)})},
            (
                c.REACHED_MAX_RESTARTS_REASON,
                "jobset failed due to reaching max number of restarts" + SUFFIX,
            ),
            None,
            RestartCounters(2, 2, {"a": (1, 0)}, {"a": (1, 0)}),
            (),
            id=(
                "RestartJobSet action when combined restarts >= maxRestarts and a previous "
                "individual restart fails the jobset"
            ),
        ),
        pytest.param(
            A.RESTART_JOB_AND_IGNORE_MAX_RESTARTS,
            {"counters": RestartCounters(3, 3)},
            None,
            None,
            RestartCounters(3, 3, {"a": (0, 1)}),
            (
                (
                    c.RESTART_JOB_IGNORE_MAX_ACTION_EVENT,
                    "applying RestartJobAndIgnoreMaxRestarts failure policy action" + SUFFIX,
                ),
            ),
            id="RestartJobAndIgnoreMaxRestarts action does not count toward max restarts",
        ),
        pytest.param(
            A.RESTART_JOB,
            {"restart_job": False},
            None,
            ("FailurePolicy_rule1", "applying RestartJobSet failure policy action" + SUFFIX),
            RestartCounters(1, 1),
            (
                (
                    c.RESTART_JOBSET_ACTION_EVENT,
                    "applying RestartJobSet failure policy action" + SUFFIX,
                ),
                (c.RESTART_JOB_GATE_DISABLED_EVENT, c.RESTART_JOB_GATE_DISABLED_MESSAGE),
            ),
            id="RestartJob with the gate off restarts the jobset and says why",
        ),
    ],
)
def test_apply_failure_policy_action(
    *,
    action: FailurePolicyAction | None,
    kw: dict[str, object],
    want_failed: tuple[str, str] | None,
    want_restarting: tuple[str, str] | None,
    want_counters: RestartCounters,
    want_events: tuple[tuple[str, str], ...],
) -> None:
    out = _outcome(action, **kw)  # type: ignore[arg-type]
    got_failed = (out.failed.reason, out.failed.message) if out.failed else None
    got_restarting = (out.restarting.reason, out.restarting.message) if out.restarting else None
    assert got_failed == want_failed
    assert got_restarting == want_restarting
    assert out.counters == want_counters
    assert out.events == want_events


def test_unnamed_rule_reason_uses_the_name_the_webhook_would_default() -> None:
    js = (
        make_jobset("js")
        .replicated_job("a")
        .failure_policy(max_restarts=2)
        .rule("FailJobSet", reasons=[DEADLINE])
        .rule("RestartJobSet")
        .model()
    )
    out = execute_failure_policy(js, [failed("a")], RestartCounters(), CoreConfig())
    assert out is not None and out.restarting is not None
    assert out.restarting.reason == "FailurePolicy_failurePolicyRule1"


def test_no_failed_job_means_no_outcome() -> None:
    js = make_jobset("js").replicated_job("a").model()
    assert execute_failure_policy(js, [], RestartCounters(), CoreConfig()) is None


@pytest.mark.parametrize(
    "index_label",
    [
        pytest.param("99999999", id="a job index beyond the replicas restarts the jobset"),
        pytest.param("-1", id="a negative job index restarts the jobset"),
        pytest.param("x", id="a non-numeric job index restarts the jobset"),
    ],
)
def test_restart_job_on_a_job_with_a_bad_index_restarts_the_jobset(index_label: str) -> None:
    js = make_jobset("js").replicated_job("a", replicas=2).failure_policy(max_restarts=3)
    js.rule("RestartJob", "r")
    job = make_job("js", rjob="a").label(c.JOB_INDEX_KEY, index_label).failed(at=T).view()
    config = CoreConfig(FeatureGates.of({Feature.RESTART_JOB: True}))
    out = execute_failure_policy(js.model(), [job], RestartCounters(), config)
    assert out is not None
    assert out.counters == RestartCounters(1, 1)
    assert out.restarting is not None and out.restarting.reason == "FailurePolicy_r"


def test_a_rule_matches_failed_reason_and_message_when_failure_target_has_no_reason() -> None:
    js = (
        make_jobset("js")
        .replicated_job("a")
        .failure_policy(max_restarts=2)
        .rule("FailJobSet", reasons=[c.JOB_REASON_POD_FAILURE_POLICY], patterns=["exit code 42"])
        .model()
    )
    job = (
        make_job("js", rjob="a")
        .condition(c.JOB_CONDITION_FAILURE_TARGET, at=T)
        .condition(c.JOB_CONDITION_FAILED, c.JOB_REASON_POD_FAILURE_POLICY, "exit code 42", LATER)
        .view()
    )
    out = execute_failure_policy(js, [job], RestartCounters(), CoreConfig())
    assert out is not None and out.failed is not None
    assert out.failed.reason == c.FAIL_JOBSET_ACTION_REASON
