"""In-place restart (KEP-467): upstream's TestReconcileInPlaceRestart and its helpers' tables,
as the pure decision and as a reconcile step."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.in_place_restart import AttemptsDecision, in_place_restart
from jobset_infra.controller.core.pod_view import INVALID_ATTEMPT, PodView, pod_view_from_manifest
from jobset_infra.controller.core.types import CoreConfig, Plan, UpdateStatus
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset

NOW = datetime(2026, 6, 1, tzinfo=UTC)
GATED = CoreConfig(gates=FeatureGates.of({Feature.IN_PLACE_RESTART.value: True}))


def jobset(max_restarts: int = 3, pods: int = 2) -> JobSetBuilder:
    """One replicated job of `pods` pods (parallelism == completions), InPlaceRestart."""
    return (
        make_jobset("js")
        .uid("uid")
        .replicated_job("workers", replicas=1, parallelism=pods, completions=pods)
        .failure_policy(max_restarts=max_restarts, restart_strategy="InPlaceRestart")
    )


def pod(i: int, attempt: int | None = None, restarts: int = 0, failed: bool = False) -> PodView:
    return PodView(f"js-workers-0-{i}", "default", "js", failed, attempt, restarts)


@pytest.mark.parametrize(
    ("js", "pods", "want"),
    [
        pytest.param(jobset(max_restarts=1), [pod(0, 0, restarts=2), pod(1, 0)],
                     AttemptsDecision(fail=True),
                     id="JobSet failed because a container exceeded max restarts"),
        pytest.param(jobset(max_restarts=1), [pod(0, 2), pod(1, 2)], AttemptsDecision(fail=True),
                     id="JobSet failed because a Pod in-place restart attempt exceeded max "
                        "restarts"),
        pytest.param(jobset(max_restarts=1).restarts(2, counting=0), [pod(0, 3), pod(1, 3)],
                     AttemptsDecision(current=3),
                     id="restarts that did not count towards the max are not held against the "
                        "attempts"),
        pytest.param(jobset(), [pod(0, 0), pod(1, 0)], AttemptsDecision(current=0),
                     id="Current in-place restart attempt was updated because all Pods are in "
                        "sync (Pod synced for the first time ever)"),
        pytest.param(jobset().in_place_restart_attempts(current=0, previous=0),
                     [pod(0, 1), pod(1, 1)], AttemptsDecision(current=1),
                     id="Current in-place restart attempt was updated because all Pods are in "
                        "sync (Pod just finished syncing after the first restart)"),
        pytest.param(jobset().in_place_restart_attempts(current=1), [pod(0, 1), pod(1, 1)],
                     AttemptsDecision(), id="all Pods in sync and already current: no change"),
        pytest.param(jobset(), [], AttemptsDecision(),
                     id="No need to fail JobSet or update status (JobSet just got created, no "
                        "Pods yet)"),
        pytest.param(jobset(), [pod(0), pod(1)], AttemptsDecision(),
                     id="No need to fail JobSet or update status (no Pod annotated yet)"),
        pytest.param(jobset(), [pod(0, 0), pod(1)], AttemptsDecision(),
                     id="No need to fail JobSet or update status (one Pod annotated at 0)"),
        pytest.param(jobset().in_place_restart_attempts(current=0), [pod(0, 1), pod(1, 0)],
                     AttemptsDecision(previous=0),
                     id="Updated previous in-place restart attempt because all Pods were in "
                        "sync but one of them just restarted"),
        pytest.param(jobset().in_place_restart_attempts(current=0, previous=0),
                     [pod(0, 1), pod(1, 0)], AttemptsDecision(),
                     id="previous already marks the lagging attempt: no change"),
        pytest.param(jobset().in_place_restart_attempts(current=1, previous=1),
                     [pod(0, 1), pod(1, 2, failed=False), pod(2, 5, failed=True)],
                     AttemptsDecision(),
                     id="previous never goes down and a Failed Pod's attempt does not count"),
        pytest.param(jobset().in_place_restart_attempts(current=0),
                     [pod(0, 1), pod(1, INVALID_ATTEMPT)], AttemptsDecision(previous=0),
                     id="a Pod with an unreadable attempt is skipped, not a wedge"),
        pytest.param(jobset().in_place_restart_attempts(current=0).restarts(0),
                     [pod(0, 1)], AttemptsDecision(previous=0),
                     id="a Pod still missing (being replaced) keeps the attempts apart"),
    ],
)
def test_in_place_restart_decision(
    js: JobSetBuilder, pods: list[PodView], want: AttemptsDecision
) -> None:
    assert in_place_restart(js.model(), pods) == want


def test_a_template_without_completions_equal_to_parallelism_moves_nothing() -> None:
    js = (make_jobset("js").replicated_job("w", parallelism=2, completions=3)
          .failure_policy(max_restarts=3, restart_strategy="InPlaceRestart"))
    assert in_place_restart(js.model(), [pod(0, 1), pod(1, 0)]) == AttemptsDecision()


@pytest.mark.parametrize(
    ("manifest", "want"),
    [
        pytest.param(
            {"metadata": {"name": "p", "namespace": "ns",
                          "labels": {c.JOBSET_NAME_KEY: "js"},
                          "annotations": {c.IN_PLACE_RESTART_ATTEMPT_KEY: "3"}},
             "status": {"phase": "Running",
                        "initContainerStatuses": [{"name": "agent", "restartCount": 4}],
                        "containerStatuses": [{"name": "w", "restartCount": 1}]}},
            PodView("p", "ns", "js", False, 3, 4, started=True),
            id="the attempt and the largest restart count, init containers included"),
        pytest.param({"metadata": {"name": "p", "annotations":
                                   {c.IN_PLACE_RESTART_ATTEMPT_KEY: "-1"}},
                      "status": {"phase": "Failed"}},
                     PodView("p", "", "", True, INVALID_ATTEMPT, 0, started=True),
                     id="a negative attempt is unreadable and a Failed phase is failed"),
        pytest.param({"metadata": {"annotations": {c.IN_PLACE_RESTART_ATTEMPT_KEY: "x"}},
                      "status": {"containerStatuses": [{"restartCount": "many"}]}},
                     PodView("", "", "", False, INVALID_ATTEMPT, 0),
                     id="odd shapes never raise"),
    ],
)
def test_pod_view(manifest: dict[str, object], want: PodView) -> None:
    assert pod_view_from_manifest(manifest) == want


def _status(plan: Plan) -> dict[str, Any]:
    updates = plan.of_type(UpdateStatus)
    return dict(updates[0].status) if updates else {}


def test_reconcile_writes_the_current_attempt_once_every_pod_is_in_sync() -> None:
    seen = observe(jobset().obj(), pods=(pod(0, 0), pod(1, 0)))
    assert _status(reconcile(seen, NOW, GATED))["currentInPlaceRestartAttempt"] == 0


def test_reconcile_fails_the_jobset_past_max_restarts_without_the_first_failed_job_suffix() -> None:
    seen = observe(jobset(max_restarts=0).obj(), pods=(pod(0, 0, restarts=1), pod(1, 0)))
    status = _status(reconcile(seen, NOW, GATED))
    failed = [x for x in status["conditions"] if x["type"] == c.CONDITION_FAILED]
    assert (failed[0]["reason"], failed[0]["message"]) == (
        c.REACHED_MAX_RESTARTS_REASON, c.REACHED_MAX_RESTARTS_MESSAGE)
    assert status["terminalState"] == c.CONDITION_FAILED


@pytest.mark.parametrize(
    ("config", "pods"),
    [
        pytest.param(CoreConfig(), (pod(0, 0), pod(1, 0)), id="the gate is off"),
        pytest.param(GATED, None, id="the Pods are not watched"),
    ],
)
def test_reconcile_leaves_the_attempts_alone(
    config: CoreConfig, pods: tuple[PodView, ...] | None
) -> None:
    status = _status(reconcile(observe(jobset().obj(), pods=pods), NOW, config))
    assert "currentInPlaceRestartAttempt" not in status
