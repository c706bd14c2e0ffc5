"""LeaderElector against scripted Lease clients: cancellation always ends the renew loop; a
leader renews with one PUT and survives a failed renewal within its deadline."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from jobset_infra.controller.runtime.kube import ApiError, ConflictError, NotFoundError
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


class CountingLeases:
    """An in-memory Lease with resourceVersions: counts GETs and PUTs, refuses a stale PUT
    (409, as the API server does) and fails the next `failing` PUTs with 500."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.gets = 0
        self.puts = 0
        self.failing = 0
        self.renewed = asyncio.Event()

    async def get(self, *_: Any) -> dict[str, Any]:
        self.gets += 1
        if self.lease is None:
            raise NotFoundError(404, "NotFound", "not found")
        return copy.deepcopy(self.lease)

    async def create(self, _: Any, body: dict[str, Any], *__: Any) -> dict[str, Any]:
        self.lease = {**copy.deepcopy(body),
                      "metadata": {**body["metadata"], "resourceVersion": "1"}}
        return copy.deepcopy(self.lease)

    async def replace(self, _: Any, body: dict[str, Any]) -> dict[str, Any]:
        self.puts += 1
        assert self.lease is not None
        if self.failing:
            self.failing -= 1
            raise ApiError(500, "InternalError", "etcdserver: request timed out")
        if body["metadata"]["resourceVersion"] != self.lease["metadata"]["resourceVersion"]:
            raise ConflictError(409, "Conflict", "the object has been modified")
        version = str(int(self.lease["metadata"]["resourceVersion"]) + 1)
        self.lease = {**copy.deepcopy(body),
                      "metadata": {**body["metadata"], "resourceVersion": version}}
        self.renewed.set()
        return copy.deepcopy(self.lease)


async def test_a_leader_renews_with_one_put_and_survives_a_failed_renewal_within_its_deadline(
) -> None:
    # client-go's optimistic renewal: while its Lease is valid, the leader PUTs the Lease it
    # last wrote, no GET. A renewal that fails is tried again every retry period; the leader
    # stays leader as long as one succeeds within renew_deadline of the first try.
    leases = CountingLeases()
    timings = LeaseTimings(lease_duration=15, renew_deadline=1, retry_period=0.05)
    elector = LeaderElector(leases, "l", "ns", "me", timings=timings)  # type: ignore[arg-type]
    running = asyncio.create_task(elector.run())
    try:
        await asyncio.wait_for(elector.leading.wait(), 5)
        gets = leases.gets
        for _ in range(3):
            leases.renewed.clear()
            await asyncio.wait_for(leases.renewed.wait(), 5)
        assert leases.gets == gets, "a valid Lease is renewed without reading it first"
        leases.failing = 3  # three PUTs fail: 500, then read again, ...
        leases.renewed.clear()
        await asyncio.wait_for(leases.renewed.wait(), 5)
        assert elector.is_leader and not running.done()
        assert leases.gets > gets, "after a failed optimistic PUT the Lease is read again"
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def test_an_expired_lease_is_taken_at_once_after_a_failed_takeover() -> None:
    # Another holder's Lease unchanged for longer than its duration may be taken. A takeover
    # whose PUT fails must not count as a change of the Lease: the next read of the same Lease
    # takes it at once instead of waiting a whole duration again.
    leases = CountingLeases()
    leases.lease = {"metadata": {"name": "l", "namespace": "ns", "resourceVersion": "7"},
                    "spec": {"holderIdentity": "other", "leaseDurationSeconds": 15}}
    now = [0.0]
    timings = LeaseTimings(lease_duration=15, renew_deadline=10, retry_period=0.01)
    elector = LeaderElector(leases, "l", "ns", "me", timings=timings,  # type: ignore[arg-type]
                            clock=lambda: now[0])
    assert not await elector._try_acquire_or_renew()  # first seen now, held by other
    now[0] = 14.0
    assert not await elector._try_acquire_or_renew()  # unchanged, but not yet for 15 s
    now[0] = 20.0
    leases.failing = 1
    assert not await elector._try_acquire_or_renew()  # expired: the takeover's PUT fails
    assert leases.lease["spec"]["holderIdentity"] == "other"
    assert await elector._try_acquire_or_renew()  # read again, unchanged: taken at once
    assert leases.lease["spec"]["holderIdentity"] == "me"
