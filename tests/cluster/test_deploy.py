"""The real path's pure parts: the JobSet progress line, the stack's cluster checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from jobset_infra.cluster.deploy import (
    DeployError,
    change_line,
    drain_line,
    find_project,
    progress_line,
    stack_config,
)

ROOT = Path(__file__).resolve().parents[2]
UID = "u-1"


def _jobset(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "hello-tpu", "uid": UID}, "spec": {"suspend": True},
            "status": status}


def _workload(cluster_queue: str | None) -> dict[str, Any]:
    status = {"admission": {"clusterQueue": cluster_queue}} if cluster_queue else {}
    return {"metadata": {"name": "jobset-hello-tpu-1", "ownerReferences": [{"uid": UID}]},
            "status": status}


@pytest.mark.parametrize(
    ("jobset", "workloads", "line", "end"),
    [
        pytest.param(_jobset(), [_workload(None)],
                     "suspended=True; workload jobset-hello-tpu-1 pending", "",
                     id="a suspended JobSet waits for Kueue"),
        pytest.param(
            _jobset(replicatedJobsStatus=[{"name": "slice", "active": 4, "ready": 4}]),
            [_workload("tpu-cluster-queue")],
            "suspended=True; workload jobset-hello-tpu-1 admitted by tpu-cluster-queue; "
            "jobs slice: 4 active/4 ready/0 succeeded", "",
            id="an admitted JobSet counts its child Jobs"),
        pytest.param(_jobset(conditions=[{"type": "Completed", "status": "True"}]), [],
                     "suspended=True; conditions Completed", "Completed",
                     id="a Completed condition ends the watch"),
        pytest.param(_jobset(conditions=[{"type": "Failed", "status": "True"}]), [],
                     "suspended=True; conditions Failed", "Failed", id="so does Failed"),
    ],
)
def test_progress_line(jobset: dict[str, Any], workloads: list[dict[str, Any]], line: str,
                       end: str) -> None:
    assert progress_line(jobset, workloads) == (line, end)


def test_the_local_stack_names_the_default_cluster_and_its_pools() -> None:
    config = stack_config(find_project(ROOT / "stacks"), "local")
    assert config["jobset-infra:kubeconfig"] == "~/.cache/jobset-infra/clusters/local/kubeconfig"
    assert config["jobset-infra:nodes"] == "v5e-2x4:4,cpu:2"


def test_a_missing_stack_or_project_is_named(tmp_path: Path) -> None:
    with pytest.raises(DeployError, match=r"no Pulumi\.yaml"):
        find_project(tmp_path)
    with pytest.raises(DeployError, match="no stack file"):
        stack_config(ROOT, "nope")


@pytest.mark.parametrize(
    ("ops", "want_line"),
    [
        pytest.param({}, "no changes", id="nothing changed"),
        pytest.param({"a": "create", "b": "create", "c": "replace"}, "2 create, 1 replace",
                     id="counts per operation in name order"),
    ],
)
def test_change_line(ops: dict[str, str], want_line: str) -> None:
    assert change_line(ops) == want_line


@pytest.mark.parametrize(
    ("outputs", "want_line"),
    [
        pytest.param({"jobsetName": "hello"}, "", id="a stack without the pool guard says nothing"),
        pytest.param({"drainedJobSets": [], "resumedJobSets": []}, "",
                     id="an update that drained nothing says nothing"),
        pytest.param({"drainedJobSets": ["default/train"], "resumedJobSets": ["default/train"]},
                     "pool change: drained default/train; resumed on the new pools default/train",
                     id="a drain and its resume are named"),
        pytest.param({"drainedJobSets": [], "resumedJobSets": ["team/a"]},
                     "pool change: drained none; resumed on the new pools team/a",
                     id="a resume left from a failed update is named too"),
    ],
)
def test_drain_line(outputs: dict[str, Any], want_line: str) -> None:
    assert drain_line(outputs) == want_line
