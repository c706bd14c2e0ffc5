"""Whether the controller can see the cluster: the probes' and the leader's verdicts, decided
from each cache's state (pure; the manager asks, the informers report).

A cache is *in sync* once its LIST succeeded and while its list and watch are not failing; a
failure streak (a 403 after a binding was removed, an API server restarting) takes it out of
sync until a LIST or a WATCH succeeds again. The JobSet, Job and Service caches are required:
without any of them a reconcile decides from a view that may be wrong. The PVC and Node caches
are optional: refused, they degrade one feature each (PVCs are created without knowing which
exist; placement falls back to pod affinity), which the informer logs.

- /readyz fails at once while a required cache is out of sync (and says which, and why):
  the replica cannot do its work, and `kubectl get pods` shows it (0/1, Deployment unavailable).
- /healthz fails only when the process itself is broken: a cache's task or the leadership loop
  ended. A cache out of sync because of RBAC or the API server is not made "dead": a restart
  would not fix either, and would add the kubelet's crash-loop delay to the recovery once the
  cause is gone. This is controller-runtime's split (its healthz is a ping; a manager whose
  caches never sync at start exits after cacheSyncTimeout, which `jobset-controller` does too).
- The leader gives up its Lease when a required cache has been out of sync for
  `renewDeadline` (the time a leader may fail to renew before it stops), and no replica runs for
  the Lease while a required cache is out of sync: a standby that can see the cluster takes over.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CacheState:
    """One informer's state as the probes and the leader judge it."""

    resource: str
    required: bool
    listed: bool  # a LIST has succeeded at least once
    failing_since: float | None = None  # start of the current failure streak
    error: str = ""  # the streak's latest error
    forbidden: bool = False  # that error is a 403
    running: bool = True  # the informer's task has not ended

    def in_sync(self) -> bool:
        return self.listed and self.failing_since is None

    def out_of_sync_for(self, now: float) -> float:
        """Seconds this cache has been out of sync (0 when in sync; since forever if never
        listed and not failing: it is still listing)."""
        if self.in_sync():
            return 0.0
        return now - self.failing_since if self.failing_since is not None else 0.0

    def describe(self) -> str:
        if not self.running:
            return f"{self.resource}: the cache's task ended"
        if self.in_sync():
            return f"{self.resource}: in sync"
        state = "not listed yet" if not self.listed else "out of sync"
        return f"{self.resource}: {state}" + (f" ({self.error})" if self.error else "")


@dataclass(frozen=True, slots=True)
class Verdict:
    ok: bool
    reasons: tuple[str, ...] = ()

    def text(self) -> str:
        return "ok" if self.ok else "\n".join(self.reasons)


API_NOT_SERVED = ("jobsets: the API server does not take a JobSet create yet (a new CRD is "
                  "served to lists first, to creates seconds later)")


def readiness(caches: Iterable[CacheState], api_served: bool = True) -> Verdict:
    """Ready while every required cache is in sync (standbys too: they are warm), once the API
    server has taken a JobSet create: then a JobSet a user creates on seeing the Deployment
    Available (`JobSetSystem.ready`) is not refused (runtime/served.py)."""
    bad = [c.describe() for c in caches if c.required and not (c.running and c.in_sync())]
    if not api_served:
        bad.append(API_NOT_SERVED)
    return Verdict(not bad, tuple(bad))


def liveness(caches: Iterable[CacheState], leadership_running: bool = True) -> Verdict:
    """Alive while every cache's task and the leadership loop still run."""
    bad = [c.describe() for c in caches if not c.running]
    if not leadership_running:
        bad.append("leadership: the loop that runs the workers ended")
    return Verdict(not bad, tuple(bad))


def may_lead(caches: Iterable[CacheState]) -> bool:
    """Run for (or keep) the Lease only while every required cache is in sync."""
    return all(c.in_sync() for c in caches if c.required)


def must_give_up(caches: Iterable[CacheState], now: float, grace: float) -> tuple[str, ...]:
    """The required caches that have been out of sync for `grace` or longer (a leader with
    any gives up its Lease)."""
    return tuple(
        c.describe() for c in caches
        if c.required and c.listed and c.out_of_sync_for(now) >= grace
    )


def settled(state: CacheState) -> bool:
    """Start-up may go on: a required cache has listed; an optional one has listed or been
    refused (its feature runs degraded; the informer keeps retrying)."""
    return state.listed or (not state.required and state.forbidden)
