"""Preview-time check: could a JobSet's exclusive Jobs ever fit the declared pools?"""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import PlacementDomain
from jobset_infra.placement.feasibility import placement_problems
from jobset_infra.testing.jobsets import make_jobset
from tests.placement.builders import ACCEL_KEY, POOL_KEY, TOPO_KEY, TPU

POOLS = tuple(
    PlacementDomain(
        name=f"v5e-2x4-{i}",
        node_count=2,
        labels={ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: "2x4"},
        allocatable={TPU: "4"},
    )
    for i in range(4)
)


def _jobset(replicas: int, hosts: int = 2, topology: str = "2x4", chips: str = "4") -> Any:
    return (
        make_jobset("train")
        .exclusive(POOL_KEY)
        .replicated_job("slice", replicas=replicas, parallelism=hosts)
        .pod_spec(
            "slice",
            containers=[{"name": "m", "image": "x", "resources": {"limits": {TPU: chips}}}],
            nodeSelector={ACCEL_KEY: "tpu-v5-lite-podslice", TOPO_KEY: topology},
            tolerations=[{"key": TPU, "operator": "Exists"}],
        )
        .obj()
    )


@pytest.mark.parametrize(
    ("jobset", "want"),
    [
        pytest.param(_jobset(4), "", id="four slices on four pools fit"),
        pytest.param(
            _jobset(5),
            "5 Job(s) need a cloud.google.com/gke-nodepool domain each; 4 exist",
            id="five slices on four pools never fit",
        ),
        pytest.param(
            _jobset(1, topology="4x4"),
            "gke-tpu-topology=4x4 but its nodes have 2x4",
            id="a topology no pool has",
        ),
        pytest.param(
            _jobset(1, hosts=3), "room for 2 of the 3 pods", id="more hosts than a pool has"
        ),
        pytest.param(
            _jobset(1, chips="8"),
            "room for 0 of the 2 pods",
            id="more chips per host than a node has",
        ),
        pytest.param(
            _jobset(1, chips="four"),
            "spec.replicatedJobs[0]: job train-slice-0",
            id="an unreadable quantity names the replicated job",
        ),
        pytest.param(
            make_jobset("plain").replicated_job("w", replicas=9).obj(),
            "",
            id="no exclusive placement asked",
        ),
    ],
)
def test_placement_problems(jobset: dict[str, Any], want: str) -> None:
    problems = placement_problems(jobset, POOLS)
    if want:
        assert len(problems) == 1 and want in problems[0], problems
    else:
        assert problems == []


def test_nothing_declared_for_the_key_means_no_verdict() -> None:
    jobset = _jobset(9)
    jobset["metadata"]["annotations"][c.EXCLUSIVE_KEY] = "rack"
    assert placement_problems(jobset, POOLS) == []


def test_node_selector_strategy_is_not_checked() -> None:
    jobset = _jobset(9)
    jobset["metadata"]["annotations"][c.NODE_SELECTOR_STRATEGY_KEY] = "true"
    assert placement_problems(jobset, POOLS) == []


@pytest.mark.parametrize(
    "jobset",
    [
        pytest.param(
            {
                "metadata": {"annotations": {c.EXCLUSIVE_KEY: POOL_KEY}},
                "spec": {"replicatedJobs": [{"replicas": "x"}]},
            },
            id="replicas not a number",
        ),
        pytest.param(
            {
                "metadata": {"annotations": {c.EXCLUSIVE_KEY: POOL_KEY}},
                "spec": {"replicatedJobs": ["w"]},
            },
            id="replicated job not an object",
        ),
        pytest.param({"metadata": None, "spec": None}, id="empty sections"),
    ],
)
def test_garbage_never_raises(jobset: dict[str, Any]) -> None:
    assert placement_problems(jobset, POOLS) == []
