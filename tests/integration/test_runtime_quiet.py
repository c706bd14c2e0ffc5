"""No hot loops: a converged JobSet costs zero writes, and a burst of child status changes is
coalesced into far fewer reconciles."""

from __future__ import annotations

import asyncio

import pytest

from jobset_infra.controller.runtime.kube import MERGE_PATCH
from jobset_infra.controller.runtime.manager import RunningController
from jobset_infra.controller.runtime.resources import JOBS
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import Cluster, quiescent, reconciled
from tests.waiting import until

WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


def client_writes(ctl: RunningController) -> int:
    return sum(
        int(sample.value)
        for metric in ctl.metrics.registry.collect()
        if metric.name == "rest_client_requests"
        for sample in metric.samples
        if sample.name.endswith("_total") and sample.labels["method"] in WRITE_METHODS
    )


async def converged(cluster: Cluster, jobs: int) -> bool:
    js = await cluster.jobset("js") or {}
    status = js.get("status") or {}
    return len(await cluster.jobs()) == jobs and bool(status.get("replicatedJobsStatus"))


async def test_converged_jobset_makes_no_writes(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(make_jobset("js").replicated_job("a", replicas=3))
    await until(lambda: converged(cluster, 3), "convergence")
    # Our own status write comes back once as a watch event: wait until the caches show it.
    await until(lambda: quiescent(cluster, controller), "the controller caught up")
    before = client_writes(controller)
    server_before = cluster.sim.stats.writes if cluster.sim is not None else None
    # Forced resyncs: reconcile the same state again and again, each one finished.
    await reconciled(controller, f"{cluster.namespace}/js", times=5)
    # Whatever those passes set in motion has run: nothing queued, delayed or in progress, the
    # caches current, every event sent. A write from them would be counted by now.
    await until(lambda: quiescent(cluster, controller), "the passes were worked off")
    await controller.recorder.flush()
    assert client_writes(controller) == before, "a converged JobSet must not be written"
    if server_before is not None:
        assert cluster.sim.stats.writes == server_before, "the sim saw writes"


@pytest.mark.slow
async def test_a_burst_of_job_status_changes_is_coalesced(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(make_jobset("js").replicated_job("a", replicas=10))
    await until(lambda: converged(cluster, 10), "convergence")
    await until(lambda: quiescent(cluster, controller), "the controller caught up")
    names = [j["metadata"]["name"] for j in await cluster.jobs()]
    reconciles_before = controller.controller.reconciles
    changes = [(name, round_) for round_ in range(100) for name in names]

    async def change(name: str, round_: int) -> None:
        status = {"status": {"active": 1 + round_ % 2}}
        await cluster.api.patch(
            JOBS,
            name,
            status,
            namespace=cluster.namespace,
            content_type=MERGE_PATCH,
            subresource="status",
        )

    for start in range(0, len(changes), 25):
        await asyncio.gather(*(change(n, r) for n, r in changes[start : start + 25]))
    # Count once every change has reached the cache and every queued reconcile has run.
    await until(lambda: quiescent(cluster, controller), "the burst was handled")
    reconciles = controller.controller.reconciles - reconciles_before
    assert len(changes) == 1000
    assert 1 <= reconciles < 200, f"{reconciles} reconciles for 1,000 Job status changes"


async def test_jobs_not_owned_by_a_jobset_are_cached_as_a_name_only(
    cluster: Cluster, controller: RunningController
) -> None:
    from jobset_infra.controller.runtime.caches import CachedJob, ForeignJob
    from jobset_infra.controller.runtime.resources import JOBS as JOB_RESOURCE
    from jobset_infra.testing.jobsets import job_template

    plain = {"metadata": {"name": "plain", "namespace": cluster.namespace}, **job_template()}
    plain["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    await cluster.api.create(JOB_RESOURCE, plain, cluster.namespace)
    await cluster.create_jobset(make_jobset("js").replicated_job("a"))
    await until(lambda: converged(cluster, 2), "the JobSet's Job next to the plain one")
    store = controller.controller.jobs.store
    assert isinstance(store[f"{cluster.namespace}/js-a-0"], CachedJob)
    assert store[f"{cluster.namespace}/plain"] == ForeignJob(cluster.namespace, "plain", "", False)
