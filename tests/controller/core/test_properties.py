"""Hypothesis properties of reconcile over random JobSets and random child Job outcomes.

* Settling: with Job statuses fixed, reconcile + apply reaches a fixpoint within 3 writing passes
  (a plan applied and reconciled again yields only what upstream defers to the next pass), and at
  the fixpoint reconcile returns an empty plan at any later time (no churn, no timestamp-only
  status writes).
* No repeated work: a plan never repeats a create, delete or identical update of the plan before.
* Termination: for any sequence of outcomes, once every remaining Job completes the JobSet ends in
  exactly one of Completed / Failed, and stays there.
* Accounting: restarts that count towards maxRestarts never exceed maxRestarts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.models import FailurePolicyAction
from jobset_infra.controller.core import reconcile
from jobset_infra.controller.core.types import (
    CoreConfig,
    CreateJob,
    DeleteJob,
    Plan,
    UpdateJob,
)
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset
from tests.controller.core.cluster import (
    T0,
    State,
    apply_plan,
    collect_garbage,
    run_job_controller,
    start,
)

MAX_WRITING_PASSES = 3
REASONS = [c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED, c.JOB_REASON_DEADLINE_EXCEEDED]


@dataclass(frozen=True)
class Scenario:
    jobset: dict[str, Any]
    config: CoreConfig
    outcomes: tuple[tuple[str, int, int], ...]
    max_restarts: int | None


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    n = draw(st.integers(1, 3))
    names = [f"r{i}" for i in range(n)]
    builder: JobSetBuilder = make_jobset("js", "ns")
    ordering = draw(st.sampled_from(["none", "in-order", "depends-on"]))
    for i, name in enumerate(names):
        deps = None
        if ordering == "depends-on" and i > 0:
            deps = [(names[i - 1], draw(st.sampled_from(["Ready", "Complete"])))]
        builder.replicated_job(
            name,
            replicas=draw(st.integers(1, 3)),
            parallelism=draw(st.integers(1, 2)),
            depends_on=deps,
        )
    if ordering == "in-order":
        builder.startup_policy("InOrder")
    builder.network(enable_dns_hostnames=draw(st.booleans()))
    builder.success_policy(
        draw(st.sampled_from(["All", "Any"])), draw(st.lists(st.sampled_from(names), unique=True))
    )
    max_restarts = None
    if draw(st.sampled_from([True, True, True, False])):
        max_restarts = draw(st.sampled_from([0, 1, 2, 2, 3, 3]))
        builder.failure_policy(
            max_restarts, draw(st.sampled_from(["Recreate", "BlockingRecreate"]))
        )
        for i in range(draw(st.integers(0, 2))):
            builder.rule(
                draw(st.sampled_from(list(FailurePolicyAction))).value,
                f"rule{i}",
                reasons=draw(st.lists(st.sampled_from(REASONS), unique=True, max_size=1)),
                targets=draw(st.lists(st.sampled_from(names), unique=True, max_size=1)),
            )
    if draw(st.sampled_from([True, False, False, False])):
        builder.suspend()
    outcomes = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        "ready",
                        "ready",
                        "succeed",
                        "fail",
                        "fail",
                        "failure-target",
                        "toggle-suspend",
                    ]
                ),
                st.integers(0, 8),
                st.integers(0, 1),
            ),
            max_size=8,
        )
    )
    config = CoreConfig(FeatureGates.of({Feature.RESTART_JOB: draw(st.booleans())}))
    return Scenario(builder.obj(), config, tuple(outcomes), max_restarts)


class Run:
    """Drives one scenario and checks the invariants after every pass."""

    def __init__(self, scenario: Scenario) -> None:
        self.s = scenario
        self.state = start(scenario.jobset)
        self.clock = 0
        self.terminal: str | None = None

    def now(self) -> Any:
        self.clock += 1
        return T0 + timedelta(seconds=self.clock)

    def settle(self) -> None:
        """Reconcile until the plan is empty: at most 3 writing passes with no outside change
        (upstream defers some effects by one pass: deletions after a restart or a finish, and
        status counts of what the previous pass created, suspended or resumed)."""
        previous = Plan()
        for _ in range(MAX_WRITING_PASSES + 1):
            self.state = run_job_controller(collect_garbage(self.state))
            plan = reconcile(self.state.observed(), self.now(), self.s.config)
            if plan.is_empty:
                self.check_fixpoint()
                return
            check_plan_shape(plan)
            check_no_repeated_work(previous, plan)
            self.state = apply_plan(self.state, plan, T0 + timedelta(seconds=self.clock))
            self.check_invariants()
            previous = plan
        raise AssertionError(f"did not settle: {plan}")

    def check_fixpoint(self) -> None:
        for later in (timedelta(seconds=1), timedelta(hours=3)):
            plan = reconcile(
                self.state.observed(), T0 + timedelta(seconds=self.clock) + later, self.s.config
            )
            assert plan.is_empty, plan

    def check_invariants(self) -> None:
        state = self.state
        done = [t for t in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) if state.is_true(t)]
        assert len(done) <= 1, state.status
        if self.terminal is not None:
            assert done == [self.terminal], "a finished JobSet must stay finished"
            assert state.status["terminalState"] == self.terminal
        elif done:
            self.terminal = done[0]
            assert state.status["terminalState"] == self.terminal
        if self.s.max_restarts is not None:
            towards = state.status.get("restartsCountTowardsMax", 0)
            if self.s.config.enabled(Feature.RESTART_JOB):
                towards += sum(
                    sum(e.get("jobRestartsCountTowardsMax", []))
                    for e in state.status["replicatedJobsStatus"]
                )
            assert towards <= self.s.max_restarts
        restarts = state.status.get("restarts", 0)
        for job in state.jobs.values():
            assert int(job["metadata"]["labels"][c.RESTARTS_KEY]) <= restarts

    def unfinished_jobs(self) -> list[str]:
        names = []
        for job in self.state.live_jobs():
            conds = {x["type"] for x in job.get("status", {}).get("conditions", [])}
            if not conds & {"Complete", "Failed", "FailureTarget"} and not job["spec"].get(
                "suspend"
            ):
                names.append(job["metadata"]["name"])
        return names

    def apply_outcome(self, kind: str, pick: int, reason: int) -> None:
        if kind == "toggle-suspend":
            suspended = self.state.jobset["spec"].get("suspend") is True
            self.state = self.state.with_spec(suspend=not suspended)
            return
        names = self.unfinished_jobs()
        if not names:
            return
        name = names[pick % len(names)]
        at = T0 + timedelta(seconds=self.clock)
        change = {
            "ready": lambda j: j.ready(),
            "succeed": lambda j: j.completed(at=at),
            "fail": lambda j: j.failed(at=at, reason=REASONS[reason]),
            "failure-target": lambda j: j.failure_target(at=at, reason=REASONS[reason]),
        }[kind]
        self.state = self.state.with_job(name, change)

    def finish(self) -> State:
        self.state = self.state.with_spec(suspend=False)
        for _ in range(30):
            self.settle()
            if self.terminal is not None:
                return self.state
            for name in self.unfinished_jobs():
                at = T0 + timedelta(seconds=self.clock)
                self.state = self.state.with_job(name, lambda j, at=at: j.completed(at=at))
        raise AssertionError(f"never finished: {self.state.status}")


def check_plan_shape(plan: Plan) -> None:
    """At most one status write; events and metric increments only after it."""
    kinds = [type(a).__name__ for a in plan.actions]
    assert kinds.count("UpdateStatus") <= 1
    after_status = {"EmitEvent", "IncrementMetric"}
    if "UpdateStatus" not in kinds:
        assert not after_status & set(kinds)
        return
    write = kinds.index("UpdateStatus")
    assert not after_status & set(kinds[:write])
    assert set(kinds[write + 1 :]) <= after_status | {"DeleteJobSet", "RequeueAfter"}


def check_no_repeated_work(before: Plan, after: Plan) -> None:
    created = {a.name for a in before.of_type(CreateJob)}
    assert not created & {a.name for a in after.of_type(CreateJob)}
    deleted = {a.uid for a in before.of_type(DeleteJob)}
    assert not deleted & {a.uid for a in after.of_type(DeleteJob)}
    updated = {(a.name, repr(a.patch)) for a in before.of_type(UpdateJob)}
    assert not updated & {(a.name, repr(a.patch)) for a in after.of_type(UpdateJob)}
    if before.status_update and after.status_update:
        assert before.status_update.status != after.status_update.status


@given(scenarios())
def test_any_outcome_sequence_settles_and_ends_completed_or_failed(scenario: Scenario) -> None:
    run = Run(scenario)
    run.settle()
    for kind, pick, reason in scenario.outcomes:
        run.apply_outcome(kind, pick, reason)
        run.settle()
    state = run.finish()
    done = [t for t in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) if state.is_true(t)]
    assert len(done) == 1
    # finished: nothing active is left running, and later passes change nothing
    assert not run.unfinished_jobs()
    assert reconcile(state.observed(), T0 + timedelta(days=1), scenario.config).is_empty


@given(scenarios())
def test_metrics_count_each_finish_exactly_once(scenario: Scenario) -> None:
    run = Run(scenario)
    run.settle()
    for kind, pick, reason in scenario.outcomes:
        run.apply_outcome(kind, pick, reason)
        run.settle()
    state = run.finish()
    names = [m.name for m in state.metrics]
    assert len(names) == 1
    want = "jobset_completed_total" if run.terminal == "Completed" else "jobset_failed_total"
    assert names == [want]
