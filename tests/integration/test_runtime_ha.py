"""Two controller replicas against one API server: only the leader writes; a killed leader is
replaced within the lease time; a graceful stop hands over at once; nothing is created twice."""

from __future__ import annotations

import asyncio
import time

import pytest

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.controller.runtime.manager import RunningController
from jobset_infra.sim.apiserver.faults import Fault, FaultInjector, FaultRule
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import Cluster, fast_config, quiescent
from tests.waiting import until

LEASE = 1.0  # seconds; short so the failover test is quick (production: 15 s / 10 s / 2 s)
RETRY = 0.2


def ha_config(cluster: Cluster) -> ControllerConfig:
    return fast_config(
        controller={"watchNamespace": cluster.namespace},
        leaderElection={
            "leaderElect": True,
            "resourceName": "jobset-ha-test",
            "resourceNamespace": cluster.namespace,
            "leaseDuration": f"{LEASE}s",
            "renewDeadline": "800ms",
            "retryPeriod": f"{RETRY * 1000:g}ms",
        },
    )


def writes_by(ctl: RunningController) -> int:
    """Write requests this replica sent, Lease writes excluded (counted at its own client), and
    its readiness probes' dry-run JobSet creates too (POSTs that store nothing)."""
    total = 0
    for metric in ctl.metrics.registry.collect():
        if metric.name != "rest_client_requests":
            continue
        for sample in metric.samples:
            if sample.name.endswith("_total") and sample.labels["method"] in (
                "POST",
                "PUT",
                "PATCH",
                "DELETE",
            ):
                total += int(sample.value)
    return total - lease_writes(ctl) - ctl.served_probes  # one POST each: the API is served


def lease_writes(ctl: RunningController) -> int:
    # The elector's PUT/POSTs: one per acquire/renew while leading.
    return ctl.elector.writes if ctl.elector is not None else 0


async def jobs_at(cluster: Cluster, n: int) -> bool:
    return len(await cluster.jobs()) == n


async def test_only_the_leader_writes_and_a_killed_leader_is_replaced(cluster: Cluster) -> None:
    first = await cluster.start_controller(ha_config(cluster), identity="replica-a")
    await first.wait_leader(5)
    second = await cluster.start_controller(ha_config(cluster), identity="replica-b")
    assert second.controller.synced(), "the standby's caches are warm"
    assert not second.is_leader

    creates_at_start = cluster_creates(cluster)
    await cluster.create_jobset(
        make_jobset("js").replicated_job("w", replicas=3).failure_policy(max_restarts=2)
    )
    await until(lambda: jobs_at(cluster, 3), "3 jobs from the leader")
    await until(lambda: quiescent(cluster, first), "the leader caught up")
    assert writes_by(first) >= 3
    assert writes_by(second) == 0, "a standby never writes"
    assert first.metrics.sample("leader_election_master_status", {"name": "jobset-ha-test"}) == 1
    assert second.metrics.sample("leader_election_master_status", {"name": "jobset-ha-test"}) == 0

    killed_at = time.monotonic()
    first.kill()
    await second.wait_leader(LEASE * 4)
    handover = time.monotonic() - killed_at
    # Never before the lease could have expired (the last renewal was at most one retry period
    # before the kill); at most lease expiry as the standby observes it, one retry period and a
    # re-list later, plus slack for a loaded CI machine (measured 1.0-1.25 s).
    assert handover >= LEASE - RETRY, f"a live lease was taken after {handover:.2f}s"
    assert handover <= LEASE + RETRY + 1.0, f"handover took {handover:.2f}s"
    await until(lambda: quiescent(cluster, second), "the new leader caught up")

    creates_before = cluster_creates(cluster)
    if creates_at_start is not None and creates_before is not None:
        assert creates_before - creates_at_start == 3, "the new leader re-created nothing"
    await cluster.set_job_status("js-w-1", "failed")

    async def restarted() -> bool:
        jobs = await cluster.jobs()
        return len(jobs) == 3 and all(
            j["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1" for j in jobs
        )

    await until(restarted, "the new leader restarts the JobSet")
    if creates_before is not None:
        assert cluster_creates(cluster) - creates_before == 3, "each Job is created exactly once"


async def test_graceful_stop_releases_the_lease(cluster: Cluster) -> None:
    first = await cluster.start_controller(ha_config(cluster), identity="replica-a")
    await first.wait_leader(5)
    second = await cluster.start_controller(ha_config(cluster), identity="replica-b")
    stopped_at = time.monotonic()
    await first.stop()
    await second.wait_leader(LEASE * 4)
    assert time.monotonic() - stopped_at < LEASE, "a released lease is taken without waiting"


def cluster_creates(cluster: Cluster) -> int | None:
    """Job creates the API server answered with 201 (sim only: counted at the server)."""
    if cluster.sim is None:
        return None
    created: int = cluster.sim.stats.count("create", "jobs")
    return created


@pytest.mark.sim_only("needs the sim's fault injection")
async def test_a_leader_that_cannot_renew_stops_working(cluster: Cluster) -> None:
    leader = await cluster.start_controller(ha_config(cluster), identity="replica-a")
    await leader.wait_leader(5)
    broken = FaultInjector(
        rules=(FaultRule(Fault.ERROR, code=503, resources=frozenset({"leases"})),)
    )
    cluster.sim.sim.add_hook(broken)
    try:
        lost_at = time.monotonic()
        await asyncio.wait_for(leader.lost.wait(), 5)
        assert time.monotonic() - lost_at <= 0.8 + 0.4 + 0.5, "gave up after renewDeadline"
        assert not leader.is_leader
        assert (
            leader.metrics.sample("leader_election_master_status", {"name": "jobset-ha-test"}) == 0
        )
        writes = writes_by(leader)
        await cluster.create_jobset(make_jobset("js").replicated_job("w"))

        async def seen() -> bool:  # its caches still run: it knows the JobSet, and does nothing
            return leader.controller.jobsets.get(f"{cluster.namespace}/js") is not None

        await until(seen, "the JobSet in the old leader's cache")
        await asyncio.sleep(0.3)  # a window in which a still-working replica would create Jobs
        assert await cluster.jobs() == [], "a replica that lost its lease makes no writes"
        assert writes_by(leader) == writes
    finally:
        cluster.sim.sim.remove_hook(broken)
