"""Exclusive placement across a leader failover while the Job watch is down.

The API server stops serving Job watches and lists (an outage of that one resource's watch
cache) and the leader crashes after placing JobSet `x` (or after giving the Lease up: its Job
cache is out of sync too). The standby's Job cache has not seen `x`'s Jobs. It must not take the
Lease while it cannot see Jobs, and once it can, it must not place `y` on the pools `x` holds: a
new leader re-lists its caches before its first reconcile.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from jobset_infra.controller.runtime.manager import RunningController, start_controller
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.hooks import ApiRequest, Intercept
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.cluster.job_controller import JobController
from jobset_infra.sim.cluster.scheduler import Scheduler
from tests.reliability.chaos import controller_config, started_sim
from tests.reliability.invariants import Invariants
from tests.reliability.scenario import JOBS, JOBSETS, NS, tpu_jobset
from tests.waiting import until

pytestmark = [pytest.mark.timeout(60), pytest.mark.slow]


class JobWatchOutage:
    """While `on`, Job lists and watches answer 500 (every other request is served)."""

    def __init__(self) -> None:
        self.on = False
        self.refused = 0

    def __call__(self, request: ApiRequest) -> Intercept | None:
        if self.on and request.resource == "jobs" and request.verb in ("list", "watch"):
            self.refused += 1
            return Intercept(error=StatusError(500, "InternalError", "watch cache unavailable"))
        return None


@pytest.fixture
async def sim() -> AsyncIterator[Sim]:
    server = Sim(port=0)
    server.add_component(JobController(server.store, wait_for_binding=True))
    server.add_component(Scheduler(server.store))
    await started_sim(server, tpu_nodes="v5e-2x4:4")
    try:
        yield server
    finally:
        await server.stop()


def jobs_of(sim: Sim, name: str) -> list[dict[str, Any]]:
    return [
        j
        for j in sim.store.iter_objects(JOBS, NS)
        if j["metadata"]["labels"].get("jobset.sigs.k8s.io/jobset-name") == name
    ]


async def test_a_new_leader_with_a_stale_job_cache_does_not_double_book(sim: Sim) -> None:
    invariants = Invariants()
    sim.store.observers.append(invariants.observe)
    outage = JobWatchOutage()
    sim.add_hook(outage)
    config = controller_config()
    replicas: list[RunningController] = []
    try:
        first = await start_controller(config, url=sim.url, identity="a")
        replicas.append(first)
        await first.wait_leader(5)
        second = await start_controller(config, url=sim.url, identity="b")
        replicas.append(second)

        outage.on = True
        for stream in sim.store.watches(JOBS):
            stream.close()  # both replicas' Job watches end; re-watching now fails
        sim.store.create(JOBSETS, tpu_jobset("x", 1), NS)
        # The leader places x unless it gives the Lease up first (its Job cache is out of sync
        # for the renew deadline); either way x's Jobs, if any, are unseen by the standby.
        await until(lambda: len(jobs_of(sim, "x")) == 2 or first.gave_up,
                    "x placed, or the first leader giving up", timeout=10)
        first.kill()
        sim.store.create(JOBSETS, tpu_jobset("y", 1), NS)
        refused = outage.refused
        await until(lambda: outage.refused >= refused + 2,
                    "the standby retrying its Job list and watch twice", timeout=15)
        assert second.elector is not None and not second.elector.leading.is_set(), (
            "a standby that cannot see Jobs must not take the Lease")
        outage.on = False
        await second.wait_leader(30)
        await until(lambda: len(jobs_of(sim, "x")) == len(jobs_of(sim, "y")) == 2,
                    "x and y placed, each on pools of its own", timeout=15)
    finally:
        for ctl in replicas:
            await ctl.stop(release=False)
    assert outage.refused > 0, "the outage was real"
    assert not invariants.violations, "\n".join(invariants.violations)
