"""Elastic JobSets (upstream TestSyncJobScaling, gate ElasticJobSet)."""

from __future__ import annotations

import pytest

from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.types import CoreConfig, UpdateJob
from jobset_infra.testing.jobs import make_job
from jobset_infra.testing.jobsets import make_jobset
from tests.controller.core.cluster import T0


@pytest.mark.parametrize(
    ("template", "job", "gate", "want_patch"),
    [
        pytest.param((2, 2), (2, 2), True, None, id="in sync"),
        pytest.param(
            (4, 4),
            (2, 2),
            True,
            {"spec": {"parallelism": 4, "completions": 4}},
            id="out of sync (patched)",
        ),
        pytest.param((4, 2), (2, 2), True, None, id="P changed only (no patch)"),
        pytest.param((2, 4), (2, 2), True, None, id="C changed only (no patch)"),
        pytest.param((4, 4), (2, 2), False, None, id="gate disabled (no patch)"),
    ],
)
def test_sync_job_scaling(
    template: tuple[int, int],
    job: tuple[int, int],
    gate: bool,
    want_patch: dict[str, object] | None,
) -> None:
    raw = (
        make_jobset("js", "ns")
        .uid("u")
        .replicated_job("w", 1, template[0], template[1])
        .success_policy("All")
        .obj()
    )
    raw["metadata"]["resourceVersion"] = "1"
    view = make_job("js", "ns", rjob="w", jobset_uid="u").parallelism(*job).ready().view()
    config = CoreConfig(FeatureGates.of({Feature.ELASTIC_JOBSET: gate}))
    plan = reconcile(observe(raw, [view], False), T0, config)
    patches = [u.patch for u in plan.of_type(UpdateJob)]
    assert patches == ([want_patch] if want_patch else [])
