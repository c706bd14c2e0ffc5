"""LeaderElector against a scripted Lease client: cancellation always ends the renew loop."""

from __future__ import annotations

import asyncio
from typing import Any

from jobset_infra.controller.runtime.leader import LeaderElector, LeaseTimings


class GatedLeases:
    """Answers GET with our own Lease once `gate` opens; PUT returns the body (no suspension)."""

    def __init__(self, identity: str) -> None:
        self.lease: dict[str, Any] = {
            "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "1"},
            "spec": {"holderIdentity": identity, "leaseDurationSeconds": 15},
        }
        self.waiting = asyncio.Event()
        self.gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def get(self, *_: Any) -> dict[str, Any]:
        self.waiting.set()
        await self.gate
        return dict(self.lease)

    async def replace(self, _: Any, body: dict[str, Any]) -> dict[str, Any]:
        return body


async def test_stopping_a_leader_while_a_renewal_completes_ends_its_renew_loop() -> None:
    # The renewal finishes in the very loop iteration in which the elector is cancelled (stop()
    # during a renew). Python 3.11's asyncio.wait_for returned the renewal's result and dropped
    # the cancellation there, so the elector renewed the Lease forever and stop() hung.
    leases = GatedLeases("me")
    timings = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=0.001)
    elector = LeaderElector(leases, "l", "ns", "me", timings=timings)  # type: ignore[arg-type]
    renewing = asyncio.create_task(elector._renew_until_lost())
    await asyncio.wait_for(leases.waiting.wait(), 5)
    leases.gate.set_result(None)
    await asyncio.sleep(0)  # the renewal runs to its end; its waiter is not yet woken
    renewing.cancel()
    done, _ = await asyncio.wait({renewing}, timeout=1)
    if not done:
        renewing.cancel()  # do not leak a looping task into other tests
    assert renewing in done and renewing.cancelled(), "the cancellation was swallowed"
