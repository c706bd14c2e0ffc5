"""A replica stopped while it was a standby (or crashed) must stop competing for the Lease.

The fault suite found runs where no replica worked for many seconds: a replica stopped as a
standby left its Lease elector running (the client reopens its session on demand), and that
zombie took the Lease when it expired and renewed it forever, while the live replicas waited.
"""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.controller.runtime.manager import start_controller
from jobset_infra.sim.apiserver.resources import GVR, ResourceInfo
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.apiserver.store import Store
from tests.reliability.chaos import LEASE, controller_config
from tests.waiting import until

LEASES = GVR("coordination.k8s.io", "v1", "leases")

pytestmark = [pytest.mark.timeout(30), pytest.mark.slow]


class Holders:
    """Every holderIdentity the Lease ever had, in order (a store observer)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, store: Store, kind: str, info: ResourceInfo, obj: dict[str, Any]) -> None:
        if info.gvr == LEASES and obj["metadata"]["name"] == LEASE and kind != "DELETED":
            holder = (obj.get("spec") or {}).get("holderIdentity") or ""
            if not self.seen or self.seen[-1] != holder:
                self.seen.append(holder)


@pytest.mark.parametrize(
    "how",
    [
        pytest.param("stop", id="a standby stopped gracefully never takes the Lease again"),
        pytest.param("kill", id="a standby killed never takes the Lease again"),
    ],
)
async def test_a_stopped_standby_never_takes_the_lease(sim: Sim, how: str) -> None:
    holders = Holders()
    sim.store.observers.append(holders)
    config = controller_config()
    leader = await start_controller(config, url=sim.url, identity="a")
    await leader.wait_leader(5)
    standby = await start_controller(config, url=sim.url, identity="b")
    assert standby.elector is not None
    await until(lambda: standby.elector.attempts >= 2, "b competed for the Lease twice")
    assert not standby.is_leader
    if how == "kill":
        standby.kill()
    await standby.stop(release=False)
    stopped_at = standby.elector.attempts
    leader.kill()  # the Lease expires after 1 s
    await leader.stop(release=False)
    successor = await start_controller(config, url=sim.url, identity="c")
    assert successor.elector is not None
    try:
        await successor.wait_leader(5)
        # A zombie would renew or steal the Lease while c holds it: wait for 8 renewals by c
        # (8 x retryPeriod 200 ms, longer than the 1 s leaseDuration), then count b's tries.
        renewed_from = successor.elector.writes
        await until(lambda: successor.elector.writes >= renewed_from + 8, "c renewed 8 times")
        assert successor.is_leader
    finally:
        await successor.stop()
    assert standby.elector.attempts == stopped_at, "the stopped standby still competes"
    assert "b" not in holders.seen, f"Lease holders over time: {holders.seen}"


