"""The controller against a misbehaving API server (sim fault injection): 409s on status writes,
429s and 500s on creates, expired and dropped watches. It still converges, never creates a Job
twice, and counts a restart exactly once."""

from __future__ import annotations

import asyncio

import pytest

from jobset_infra.api import constants as c
from jobset_infra.sim.apiserver.faults import Fault, FaultInjector, FaultRule
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import Cluster, reconciled
from tests.waiting import until

JOBS = 12


def rules() -> tuple[FaultRule, ...]:
    jobs, jobsets = frozenset({"jobs"}), frozenset({"jobsets"})
    return (
        FaultRule(Fault.ERROR, code=409, rate=0.5, verbs=frozenset({"update"}),
                  resources=jobsets, max_count=6),
        FaultRule(Fault.ERROR, code=429, retry_after=0, rate=0.2, verbs=frozenset({"create"}),
                  resources=jobs, max_count=6),
        FaultRule(Fault.ERROR, code=500, rate=0.1, verbs=frozenset({"create"}), resources=jobs,
                  max_count=4),
        FaultRule(Fault.EXPIRE_WATCH, rate=0.5, verbs=frozenset({"watch"}), resources=jobs,
                  max_count=2),
        FaultRule(Fault.DROP_WATCH, delay=0.3, rate=0.5, verbs=frozenset({"watch"}),
                  resources=jobsets, max_count=2),
    )  # fmt: skip


@pytest.mark.sim_only("fault injection is a sim feature")
async def test_converges_through_conflicts_throttling_and_watch_expiry(cluster: Cluster) -> None:
    faults = FaultInjector(rules=rules(), seed=7)
    cluster.sim.stats.reset()
    cluster.sim.sim.add_hook(faults)
    try:
        controller = await cluster.start_controller()  # its first watches meet the faults
        await controller.wait_leader(5)
        builder = (
            make_jobset("js").replicated_job("w", replicas=JOBS).failure_policy(max_restarts=3)
        )
        await cluster.create_jobset(builder)

        async def attempt(n: str) -> bool:
            jobs = await cluster.jobs()
            return len(jobs) == JOBS and all(
                j["metadata"]["labels"][c.RESTARTS_KEY] == n for j in jobs
            )

        await until(lambda: attempt("0"), "all jobs created", timeout=10)
        await cluster.set_job_status("js-w-3", "failed")
        await until(lambda: attempt("1"), "all jobs recreated", timeout=10)
        js = await cluster.jobset("js") or {}
        assert js["status"]["restarts"] == 1, "a restart is counted once despite 409s"
    finally:
        cluster.sim.sim.remove_hook(faults)
    create_faults = faults.injected.get(1, 0) + faults.injected.get(2, 0)
    assert len(faults.injected) == len(rules()), f"every kind of fault fired: {faults.injected}"
    assert controller.controller.jobs.relists >= 2, "an expired watch made the Job cache relist"
    creates = cluster.sim.stats.count("create", "jobs")
    assert creates == 2 * JOBS + create_faults, "every Job created once (retries only after faults)"


@pytest.mark.sim_only("counts requests at the sim")
async def test_a_stale_job_cache_never_repeats_creates(cluster: Cluster) -> None:
    ctl = await cluster.start_controller()
    await ctl.wait_leader(5)
    job_informer = ctl.tasks[ctl.controller.informers.index(ctl.controller.jobs)]
    job_informer.cancel()  # from here on the Job cache never learns about new Jobs
    cluster.sim.stats.reset()
    await cluster.create_jobset(make_jobset("js").replicated_job("w", replicas=5))

    async def created() -> bool:
        return len(await cluster.jobs()) == 5

    await until(created, "5 jobs at the API server")
    await reconciled(ctl, f"{cluster.namespace}/js", times=5)  # again and again, stale cache
    assert cluster.sim.stats.count("create", "jobs") == 5, "no create was repeated"
    assert ctl.controller.expectations.pending_count(f"{cluster.namespace}/js") == (5, 0)


async def test_healthz_fails_when_a_cache_stops_being_kept(cluster: Cluster) -> None:
    ctl = await cluster.start_controller()
    await ctl.wait_leader(5)
    assert ctl.healthy()
    job_informer = ctl.tasks[ctl.controller.informers.index(ctl.controller.jobs)]
    job_informer.cancel()
    await asyncio.gather(job_informer, return_exceptions=True)
    assert not ctl.healthy(), "a dead Job informer makes /healthz fail (the kubelet restarts us)"
