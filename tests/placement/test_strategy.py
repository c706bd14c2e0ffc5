"""Strategy choice per mode, the affinity terms, and which JobSets need the placement lock."""

from __future__ import annotations

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import PlacementMode
from jobset_infra.placement import (
    Strategy,
    needs_exclusive_placement,
    strategy_for,
    with_exclusive_affinity,
)
from jobset_infra.placement.strategy import (
    _BY_MODE,
    child_job_annotations,
    exclusive_topology,
    node_selector_strategy,
    placed_by_controller,
)
from jobset_infra.testing.jobsets import make_jobset
from tests.placement.builders import POOL_KEY, make_job

EXCLUSIVE = {c.EXCLUSIVE_KEY: POOL_KEY}


@pytest.mark.parametrize(
    ("annotations", "mode", "domains_known", "want"),
    [
        pytest.param(
            {},
            PlacementMode.EXCLUSIVE,
            True,
            Strategy.NONE,
            id="a job without the annotation needs no placement",
        ),
        pytest.param(
            {**EXCLUSIVE, c.NODE_SELECTOR_STRATEGY_KEY: ""},
            PlacementMode.AUTO,
            True,
            Strategy.NODE_SELECTOR,
            id="the node-selector flag wins over the mode",
        ),
        pytest.param(
            EXCLUSIVE,
            PlacementMode.AUTO,
            True,
            Strategy.DOMAINS,
            id="auto with known domains assigns domains",
        ),
        pytest.param(
            EXCLUSIVE,
            PlacementMode.AUTO,
            False,
            Strategy.AFFINITY,
            id="auto without known domains uses affinity",
        ),
        pytest.param(
            EXCLUSIVE,
            PlacementMode.EXCLUSIVE,
            False,
            Strategy.DOMAINS,
            id="exclusive mode assigns domains even when none are known",
        ),
        pytest.param(
            EXCLUSIVE,
            PlacementMode.AFFINITY,
            True,
            Strategy.AFFINITY,
            id="affinity mode uses affinity",
        ),
        pytest.param(
            EXCLUSIVE, PlacementMode.OFF, True, Strategy.NONE, id="off ignores the annotation"
        ),
        pytest.param(EXCLUSIVE, "exclusive", True, Strategy.DOMAINS, id="mode given as a string"),
    ],
)
def test_strategy_for(
    annotations: dict[str, str], mode: PlacementMode | str, domains_known: bool, want: Strategy
) -> None:
    assert strategy_for(annotations, mode, domains_known) is want


@pytest.mark.parametrize("mode", list(PlacementMode))
def test_every_mode_has_a_table_entry(mode: PlacementMode) -> None:
    assert mode in _BY_MODE


def test_unknown_mode_names_the_field_and_the_choices() -> None:
    with pytest.raises(ValueError, match=r"placement.mode: unknown mode 'fast'; use one of auto"):
        strategy_for(EXCLUSIVE, "fast", True)


def test_affinity_is_appended_to_user_terms_and_idempotent() -> None:
    job = make_job("j").obj()
    user_term = {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "zone"}
    job["spec"]["template"]["spec"]["affinity"] = {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [user_term]}
    }
    job["spec"]["template"]["metadata"] = {"labels": {c.JOB_KEY: "abc"}}
    once = with_exclusive_affinity(job, POOL_KEY)
    twice = with_exclusive_affinity(once, POOL_KEY)
    assert once == twice
    terms = once["spec"]["template"]["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms[0] == user_term
    assert terms[1]["labelSelector"]["matchExpressions"][0]["values"] == ["abc"]
    assert "affinity" not in job["spec"]["template"]["spec"]["affinity"]["podAffinity"], "copy"


@pytest.mark.parametrize(
    ("jobset", "want"),
    [
        pytest.param(
            make_jobset("a").exclusive(POOL_KEY).replicated_job("w").obj(),
            True,
            id="annotation on the jobset",
        ),
        pytest.param(
            make_jobset("b").replicated_job("w").job_metadata("w", annotations=EXCLUSIVE).obj(),
            True,
            id="annotation on a replicated job template",
        ),
        pytest.param(make_jobset("c").replicated_job("w").obj(), False, id="no annotation"),
        pytest.param(
            {"metadata": None, "spec": {"replicatedJobs": [None]}}, False, id="malformed jobset"
        ),
    ],
)
def test_needs_exclusive_placement(jobset: dict[str, object], want: bool) -> None:
    assert needs_exclusive_placement(jobset) is want


NODE_SELECTOR = {c.NODE_SELECTOR_STRATEGY_KEY: "true"}


@pytest.mark.parametrize(
    ("jobset", "rjob", "want"),
    [
        pytest.param({}, {}, {}, id="no annotation at either level: none inherited"),
        pytest.param(EXCLUSIVE, {}, EXCLUSIVE, id="the JobSet's annotation reaches its Jobs"),
        pytest.param({c.EXCLUSIVE_KEY: "zone"}, EXCLUSIVE, EXCLUSIVE,
                     id="the replicated job's key wins over the JobSet's"),
        pytest.param({**EXCLUSIVE, **NODE_SELECTOR}, {c.EXCLUSIVE_KEY: "zone"},
                     {c.EXCLUSIVE_KEY: "zone", **NODE_SELECTOR},
                     id="the JobSet's node-selector strategy stays with an inherited key"),
        pytest.param(NODE_SELECTOR, EXCLUSIVE, EXCLUSIVE,
                     id="a node-selector annotation without its level's key is not inherited"),
        pytest.param({"other": "x"}, {"other": "y"}, {}, id="other annotations are not copied"),
    ],
)
def test_child_job_annotations(
    jobset: dict[str, str], rjob: dict[str, str], want: dict[str, str]
) -> None:
    assert child_job_annotations(jobset, rjob) == want


@pytest.mark.parametrize(
    ("annotations", "want_topology", "want_node_selector", "want_placed"),
    [
        pytest.param({}, None, False, False, id="no annotation: not exclusive"),
        pytest.param({c.EXCLUSIVE_KEY: ""}, None, False, False,
                     id="an empty topology key asks for nothing"),
        pytest.param(EXCLUSIVE, POOL_KEY, False, True,
                     id="exclusive alone: the controller places it"),
        pytest.param({**EXCLUSIVE, **NODE_SELECTOR}, POOL_KEY, True, False,
                     id="with the node-selector strategy an administrator placed it"),
        pytest.param(NODE_SELECTOR, None, False, False,
                     id="the node-selector annotation alone is not exclusive"),
    ],
)
def test_which_jobs_are_exclusive(
    annotations: dict[str, str], want_topology: str | None, want_node_selector: bool,
    want_placed: bool,
) -> None:
    assert exclusive_topology(annotations) == want_topology
    assert node_selector_strategy(annotations) is want_node_selector
    assert placed_by_controller(annotations) is want_placed
    strategy = strategy_for(annotations, PlacementMode.EXCLUSIVE, True)
    assert (strategy is not Strategy.NONE) is (want_topology is not None)
