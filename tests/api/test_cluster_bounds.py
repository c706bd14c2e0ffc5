"""validate refuses a JobSet no cluster could run, naming the replicated job that tips it over."""

from __future__ import annotations

import pytest

from jobset_infra.api.check import check_jobset
from jobset_infra.api.cluster_bounds import MAX_JOBSET_PODS
from jobset_infra.testing.jobsets import make_jobset


@pytest.mark.parametrize(
    ("replicas", "parallelism", "refused"),
    [
        pytest.param((MAX_JOBSET_PODS,), 1, False, id="exactly the bound passes"),
        pytest.param((2_000_000_000,), 1, True, id="two billion Jobs are refused"),
        pytest.param((100, 2_001), 1000, True, id="the second replicated job tips it over"),
    ],
)
def test_validate_refuses_more_pods_than_a_cluster_holds(
    replicas: tuple[int, ...], parallelism: int, refused: bool
) -> None:
    builder = make_jobset("js", "ns")
    for i, n in enumerate(replicas):
        builder.replicated_job(f"r{i}", replicas=n).job_spec(f"r{i}", parallelism=parallelism,
                                                             completions=parallelism)
        builder.pod_spec(f"r{i}", restartPolicy="Never")
    errors = [e for e in check_jobset(builder.obj()).errors if "pods" in e.message]
    assert bool(errors) == refused
    if refused:
        assert errors[0].path == f"spec.replicatedJobs[{len(replicas) - 1}].replicas"
