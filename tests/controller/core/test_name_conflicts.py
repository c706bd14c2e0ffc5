"""A Job that is not the JobSet's child holds a name a child needs (a "name squatter"): the core
holds that create back and says so with JobNameConflict and a Warning event, until it is gone."""

from __future__ import annotations

import dataclasses

import pytest

from jobset_infra.api import constants as c
from jobset_infra.controller.core import reconcile
from jobset_infra.controller.core.name_conflicts import free_to_create, name_conflict
from jobset_infra.controller.core.types import CreateJob, EmitEvent, NameHolder, Plan
from jobset_infra.testing.jobsets import make_jobset
from tests.controller.core.cluster import T0, State, apply_plan, start

CRON = NameHolder("CronJob/nightly")
BY_HAND = NameHolder("")
OLD_CHILD = NameHolder("JobSet/js", deleting=True)


def job(name: str) -> CreateJob:
    return CreateJob({"metadata": {"name": name}})


@pytest.mark.parametrize(
    ("taken", "free", "status", "says"),
    [
        pytest.param({}, ["js-w-0", "js-w-1"], "False", None, id="no holder: create all"),
        pytest.param({"js-w-1": CRON}, ["js-w-0"], "True",
                     "js-w-1 (controlled by CronJob/nightly)",
                     id="a Job of another controller holds one name: hold it back, say who"),
        pytest.param({"js-w-0": BY_HAND}, ["js-w-1"], "True", "js-w-0 (no controller)",
                     id="a Job made by hand holds one"),
        pytest.param({"js-w-0": OLD_CHILD}, ["js-w-1"], "False", None,
                     id="an earlier JobSet's child being deleted: wait without a word"),
        pytest.param({"other": CRON}, ["js-w-0", "js-w-1"], "False", None,
                     id="a name the JobSet does not want is none of its business"),
    ],
)
def test_names_held_by_others(taken: dict[str, NameHolder], free: list[str], status: str,
                              says: str | None) -> None:
    created, blocked = free_to_create([job("js-w-0"), job("js-w-1")], taken)
    assert [j.name for j in created] == free
    condition = name_conflict(blocked)
    assert (condition.type, condition.status) == (c.CONDITION_JOB_NAME_CONFLICT, status)
    if says is not None:
        assert says in condition.message and "deleted or renamed" in condition.message
        assert condition.event_type == "Warning"


def test_the_message_names_at_most_five_holders() -> None:
    blocked = [(f"js-w-{i}", CRON) for i in range(8)]
    assert "js-w-4 (controlled by CronJob/nightly) and 3 more" in name_conflict(blocked).message


def plan_with(state: State, taken: dict[str, NameHolder]) -> Plan:
    return reconcile(dataclasses.replace(state.observed(), taken_names=taken), T0)


def test_a_squatted_name_is_reported_once_and_the_child_made_when_it_is_free() -> None:
    state = start(make_jobset("js").replicated_job("w", replicas=2).obj())
    plan = plan_with(state, {"js-w-1": CRON})
    assert [a.manifest["metadata"]["name"] for a in plan.of_type(CreateJob)] == ["js-w-0"]
    warnings = [e for e in plan.of_type(EmitEvent) if e.reason == c.JOB_NAME_TAKEN_REASON]
    assert len(warnings) == 1 and warnings[0].type == "Warning"
    state = apply_plan(state, plan)
    assert state.is_true(c.CONDITION_JOB_NAME_CONFLICT)
    again = plan_with(state, {"js-w-1": CRON})
    assert not again.of_type(CreateJob) and not again.of_type(EmitEvent), "said once"
    freed = plan_with(state, {})
    assert [a.manifest["metadata"]["name"] for a in freed.of_type(CreateJob)] == ["js-w-1"]
    state = apply_plan(state, freed)
    assert state.condition(c.CONDITION_JOB_NAME_CONFLICT)["status"] == "False"


def test_a_jobset_without_conflicts_never_gets_the_condition() -> None:
    state = start(make_jobset("js").replicated_job("w", replicas=2).obj())
    state = apply_plan(state, plan_with(state, {}))
    assert state.condition(c.CONDITION_JOB_NAME_CONFLICT) is None
