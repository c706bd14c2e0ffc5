"""Lease leader election (coordination.k8s.io/v1), with client-go's rules.

- A candidate takes the Lease when it is free, held by itself, or not renewed for
  `lease_duration` as observed on *our* clock (so clock skew between nodes does not matter).
- Writes are PUTs carrying the resourceVersion read, so two candidates cannot both win: the loser
  gets a 409 and retries after `retry_period`.
- The leader renews `retry_period` after its last renewal, trying again every `retry_period`;
  if a renewal has not succeeded `renew_deadline` after it began, it stops leading and the
  process exits: it never writes again on a stale belief. While its Lease is valid it renews
  with one PUT of the Lease it last wrote (client-go's optimistic renewal), reading it again
  only when that fails. The elector has a client of its own (`manager._elector`), as
  controller-runtime's leader election has: renewals never queue behind the reconciles'
  requests for the QPS budget or a connection.
- On a graceful stop the leader releases the Lease (empty holder), so a standby takes over at once.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobset_infra.controller.runtime.kube import (
    AlreadyExistsError,
    ApiError,
    KubeClient,
    NotFoundError,
)
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.ratelimit import Clock
from jobset_infra.controller.runtime.resources import LEASES

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaseTimings:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def _micro(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        name: str,
        namespace: str,
        identity: str,
        *,
        timings: LeaseTimings = LeaseTimings(),
        metrics: Metrics | None = None,
        clock: Clock = time.monotonic,
        wall: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC),
    ) -> None:
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.timings = timings
        self.metrics = metrics
        self._clock = clock
        self._wall = wall
        # The Lease as we last read or wrote it (never the body of a write in flight), and when
        # it last changed: another holder's Lease unchanged for its duration may be taken.
        self._lease: dict[str, Any] | None = None
        self._observed_at = 0.0
        self.leading = asyncio.Event()
        self.lost = asyncio.Event()
        self.writes = 0  # Lease create/update requests sent (tests tell them from other writes)
        self.attempts = 0  # tries to acquire or renew (tests count them instead of sleeping)

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set() and not self.lost.is_set()

    def reset(self) -> None:
        """Forget a previous term (one that gave the Lease up) before running again."""
        self.leading.clear()
        self.lost.clear()

    async def run(self) -> None:
        """Acquire, then renew until the lease is lost (returns) or the task is cancelled."""
        self._report(False)
        try:
            await self._acquire()
            self.leading.set()
            self._report(True)
            log.info("became leader", extra={"lease": self.name, "identity": self.identity})
            await self._renew_until_lost()
        finally:
            if self.leading.is_set():
                self.lost.set()
            self._report(False)

    async def release(self) -> None:
        """Give the lease up (graceful shutdown) so a standby need not wait for it to expire."""
        if not self.leading.is_set():
            return  # never led: nothing to give up
        self.lost.set()
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            lease["spec"] = {**spec, "holderIdentity": None, "leaseDurationSeconds": 1}
            self.writes += 1
            await self.client.replace(LEASES, lease)
        except ApiError as err:
            log.info("could not release the lease: %s", err)

    async def _acquire(self) -> None:
        while True:
            if await self._try_acquire_or_renew():
                return
            await asyncio.sleep(self.timings.retry_period)

    async def _renew_until_lost(self) -> None:
        last_renew = self._clock()
        while True:
            asleep = self._clock()
            await asyncio.sleep(self.timings.retry_period)
            began = self._clock()
            renewed = await self._renew_within_deadline()
            done = self._clock()
            # Where a slow renewal's time went: this event loop late to wake (the process
            # starved of CPU, or its loop busy), or the renewal itself (the API server slow).
            timing = {"lease": self.name, "since_renewal": round(done - last_renew, 2),
                      "woke_late": round(began - asleep - self.timings.retry_period, 2),
                      "renewal": round(done - began, 2)}
            if not renewed:
                log.error("leader election lost", extra=timing)
                return
            if done - last_renew > 2 * self.timings.retry_period + 1:
                log.warning("lease renewed late", extra=timing)
            last_renew = done

    async def _renew_within_deadline(self) -> bool:
        """Try to renew, again every `retry_period`, until it succeeds or `renew_deadline`
        has passed since the first try (client-go's PollImmediateUntil with that timeout).
        asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation that
        arrives as the renewal completes, and the elector then renewed forever after stop()."""
        try:
            async with asyncio.timeout(self.timings.renew_deadline):
                while not await self._try_acquire_or_renew():
                    await asyncio.sleep(self.timings.retry_period)
                return True
        except TimeoutError:
            return False

    async def _try_acquire_or_renew(self) -> bool:
        self.attempts += 1
        now_wall = _micro(self._wall())
        if await self._renew_optimistically(now_wall):
            return True
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
        except NotFoundError:
            return await self._create(now_wall)
        except ApiError as err:
            log.warning("reading lease failed: %s", err)
            return False
        if _version(lease) != _version(self._lease):
            self._lease, self._observed_at = _copy(lease), self._clock()
        spec = dict(lease.get("spec") or {})
        holder = spec.get("holderIdentity") or ""
        duration = float(spec.get("leaseDurationSeconds") or self.timings.lease_duration)
        if holder and holder != self.identity and self._clock() - self._observed_at < duration:
            return False  # someone else holds a lease we have seen renewed recently
        taking_over = holder != self.identity
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=max(1, round(self.timings.lease_duration)),
            renewTime=now_wall,
        )
        if taking_over:
            spec["acquireTime"] = now_wall
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        lease["spec"] = spec
        self.writes += 1
        try:
            updated = await self.client.replace(LEASES, lease)
        except ApiError as err:  # 409: someone else wrote first
            log.debug("lease update failed: %s", err)
            return False
        self._remember(updated)
        return True

    async def _create(self, now_wall: str) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": max(1, round(self.timings.lease_duration)),
                "acquireTime": now_wall,
                "renewTime": now_wall,
                "leaseTransitions": 0,
            },
        }
        self.writes += 1
        try:
            created = await self.client.create(LEASES, body, self.namespace)
        except AlreadyExistsError as err:  # another candidate was faster
            log.debug("lease create failed: %s", err)
            return False
        except ApiError as err:  # e.g. no such namespace, or RBAC: we would never lead, say so
            log.warning(
                "cannot create Lease %s/%s: %s; the namespace must exist "
                "(--leader-election-namespace) and RBAC must allow creating leases there",
                self.namespace, self.name, err,
            )
            return False
        self._remember(created)
        return True

    async def _renew_optimistically(self, now_wall: str) -> bool:
        """While leading and our Lease is still valid by our clock: one PUT of the Lease we
        last wrote, with its resourceVersion, so a write by anyone since makes it fail."""
        lease = self._lease
        if lease is None or not self.leading.is_set() or self.lost.is_set():
            return False
        spec = dict(lease.get("spec") or {})
        duration = float(spec.get("leaseDurationSeconds") or self.timings.lease_duration)
        if spec.get("holderIdentity") != self.identity or \
                self._clock() - self._observed_at >= duration:
            return False
        spec["renewTime"] = now_wall
        self.writes += 1
        try:
            updated = await self.client.replace(LEASES, {**lease, "spec": spec})
        except ApiError as err:  # 409 (written since) or any failure: read it again
            log.info("optimistic lease renewal failed, reading the Lease: %s", err)
            return False
        self._remember(updated)
        return True

    def _remember(self, lease: dict[str, Any]) -> None:
        self._lease, self._observed_at = _copy(lease), self._clock()

    def _report(self, leading: bool) -> None:
        if self.metrics:
            self.metrics.leader_status.labels(name=self.name).set(1 if leading else 0)


def _version(lease: dict[str, Any] | None) -> tuple[dict[str, Any], str]:
    """What tells two reads of a Lease apart: its spec and resourceVersion."""
    if lease is None:
        return {}, ""
    return dict(lease.get("spec") or {}), str(
        (lease.get("metadata") or {}).get("resourceVersion", ""))


def _copy(lease: dict[str, Any]) -> dict[str, Any]:
    """A Lease to keep: its spec copied, as a renewal edits the spec of the one it read."""
    return {**lease, "spec": dict(lease.get("spec") or {})}

