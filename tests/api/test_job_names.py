"""The names of a JobSet's children, as upstream and Kubernetes give them."""

from __future__ import annotations

import pytest

from jobset_infra.api.job_names import child_job_name, indexed_pod_name


@pytest.mark.parametrize(
    ("jobset", "rjob", "index", "want"),
    [
        pytest.param("js", "workers", 0, "js-workers-0", id="the first Job of a replicated job"),
        pytest.param("train", "slice", 15, "train-slice-15", id="the index is in decimal"),
    ],
)
def test_child_job_name(jobset: str, rjob: str, index: int, want: str) -> None:
    assert child_job_name(jobset, rjob, index) == want


def test_indexed_pod_name() -> None:
    assert indexed_pod_name("js-workers-0", 3, "bcdfg") == "js-workers-0-3-bcdfg"
