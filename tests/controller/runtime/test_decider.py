"""The bridge to the core: feature gates reach CoreConfig; malformed objects get a plan."""

from __future__ import annotations

from datetime import UTC, datetime

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.features import Feature
from jobset_infra.controller.core.types import Observed, UpdateStatus
from jobset_infra.controller.runtime.decider import core_config, core_decider

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_feature_gates_and_placement_mode_reach_the_core() -> None:
    config = ControllerConfig.from_dict(
        {"featureGates": {"RestartJob": True}, "placement": {"mode": "off"}}
    )
    core = core_config(config)
    assert core.enabled(Feature.RESTART_JOB) is True
    assert core.enabled(Feature.ELASTIC_JOBSET) is False
    assert core.exclusive_placement is False


def test_a_malformed_jobset_gets_an_invalid_spec_status_not_a_crash() -> None:
    decide = core_decider(core_config(ControllerConfig()))
    raw = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": "js", "namespace": "ns", "uid": "u", "resourceVersion": "3"},
        "spec": {"replicatedJobs": "not-a-list"},
    }
    plan = decide(Observed(raw), NOW)
    status = plan.status_update
    assert isinstance(status, UpdateStatus)
    conditions = {x["type"]: x for x in status.status.get("conditions", [])}
    assert conditions[c.CONDITION_INVALID_SPEC]["reason"] == c.INVALID_SPEC_REASON
    assert "replicatedJobs" in conditions[c.CONDITION_INVALID_SPEC]["message"]
