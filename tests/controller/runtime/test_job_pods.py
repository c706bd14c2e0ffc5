"""JobPods: without the Pod cache, the Pods of Jobs that may be stranded on a lost pool are
looked up once per pass that needs them (controller/core/stranded_jobs.py), and never else."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from jobset_infra.controller.core.types import CoreConfig, Observed
from jobset_infra.controller.runtime.kube import ForbiddenError
from jobset_infra.controller.runtime.pod_watch import JobPods
from tests.controller.core.test_slice_health import _jobset
from tests.controller.core.test_stranded_jobs import _jobs, _nodes, _observed

pytestmark = pytest.mark.asyncio


class FakePods:
    def __init__(self, pods: list[dict[str, Any]], fail: bool = False) -> None:
        self.pods, self.fail, self.calls = pods, fail, []  # type: ignore[var-annotated]

    async def list(self, res: Any, namespace: str, label_selector: str) -> dict[str, Any]:
        self.calls.append((res.plural, namespace, label_selector))
        if self.fail:
            raise ForbiddenError(403, "Forbidden", "pods is forbidden")
        return {"items": self.pods}


def _pod(job: str, node: str | None) -> dict[str, Any]:
    spec = {"nodeName": node} if node else {}
    return {"metadata": {"name": f"{job}-0", "namespace": "default",
                         "labels": {"batch.kubernetes.io/job-name": job}}, "spec": spec,
            "status": {"phase": "Pending"}}


def _stranded() -> Observed[Any]:
    js = _jobset()
    return replace(_observed(js, _jobs(js, ["pool-0", "pool-1"]),
                             _nodes(3, not_ready=("pool-1",))), pods=None)


async def test_the_pods_of_the_candidates_alone_are_listed_by_job_uid() -> None:
    client = FakePods([_pod("js-slice-1", "pool-1-node-0")])  # bound, never started
    found = await JobPods(client, CoreConfig()).add_to(_stranded())  # type: ignore[arg-type]
    assert client.calls == [("pods", "default",
                             "batch.kubernetes.io/controller-uid in (uid-js-slice-1)")]
    assert found.pods is not None and [(p.job, p.started) for p in found.pods] == [
        ("js-slice-1", False)]


async def test_a_pass_with_no_job_on_a_lost_pool_lists_nothing() -> None:
    js = _jobset()
    observed = replace(_observed(js, _jobs(js, ["pool-0", "pool-1"]), _nodes(3)), pods=None)
    client = FakePods([])
    assert await JobPods(client, CoreConfig()).add_to(observed) is observed  # type: ignore[arg-type]
    assert client.calls == []


async def test_pods_that_cannot_be_listed_leave_the_pass_without_evidence() -> None:
    observed = _stranded()
    client = FakePods([], fail=True)
    found = await JobPods(client, CoreConfig()).add_to(observed)  # type: ignore[arg-type]
    assert found.pods is None  # so stranded_jobs moves nothing
