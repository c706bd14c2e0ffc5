"""Who may read /metrics: as controller-runtime's `filters.WithAuthenticationAndAuthorization`.

The bearer token is authenticated by the API server (a TokenReview) and the user it names
authorized for `get` on the non-resource URL `/metrics` (a SubjectAccessReview); Prometheus'
ServiceAccount gets that through a ClusterRole like upstream's `metrics-reader`. 401 without a
valid token, 403 when not authorized, 503 when the API server cannot be asked.

The port must not become a lever on the controller, so:

- verdicts are cached by a hash of the token, allowed ones for `allow_ttl` (10 s, the delegating
  authorizer's default in kube-rbac-proxy and controller-runtime), refused ones for `deny_ttl`
  (5 s); so a binding revoked stops working within `allow_ttl` (measured on the real cluster:
  docs/reliability.md), and a scraper retrying a bad token costs one review per `deny_ttl`;
- reviews spend a budget of their own (`review_qps` verdicts a second, `review_burst` at once,
  two API calls each) on a client of their own: a flood of new tokens is answered 429 without
  asking the API server once the budget is spent, and never draws on the reconciles' QPS;
- the cache is bounded (least recently used first out), so a flood of tokens cannot grow it.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from jobset_infra.controller.runtime.kube import ApiError, KubeClient
from jobset_infra.controller.runtime.ratelimit import TokenBucket
from jobset_infra.controller.runtime.resources import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS

__all__ = ["TOO_MANY_REVIEWS", "MetricsAuth"]

METRICS_PATH = "/metrics"
TOO_MANY_REVIEWS = 429


class MetricsAuth:
    def __init__(
        self,
        client: KubeClient,
        *,
        allow_ttl: float = 10.0,
        deny_ttl: float = 5.0,
        review_qps: float = 5.0,
        review_burst: int = 10,
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client  # its own: reviews never wait behind (or delay) reconciles
        self.allow_ttl = allow_ttl
        self.deny_ttl = deny_ttl
        self.max_entries = max_entries
        self.budget = TokenBucket(review_qps, review_burst, clock=clock)
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self.reviews = 0  # verdicts asked of the API server (tests count them)
        self.refused_for_budget = 0

    async def close(self) -> None:
        await self.client.close()

    async def verdict(self, authorization: str) -> int:
        """200 to serve the scrape, else the HTTP status to refuse it with."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return 401
        key = hashlib.sha256(token.encode()).hexdigest()
        now = self._clock()
        cached = self._cache.get(key)
        if cached is not None and now < cached[0]:
            self._cache.move_to_end(key)
            return cached[1]
        if not self.budget.try_take():
            self.refused_for_budget += 1
            return TOO_MANY_REVIEWS  # not cached: the next scrape may find budget
        self.reviews += 1
        try:
            status = await self._review(token)
        except ApiError:
            return 503  # not cached: the next scrape asks again
        ttl = self.allow_ttl if status == 200 else self.deny_ttl
        self._cache[key] = (now + ttl, status)
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_entries:
            self._cache.popitem(last=False)
        return status

    async def _review(self, token: str) -> int:
        review = await self.client.create(TOKEN_REVIEWS, {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        })
        result = review.get("status") or {}
        if not result.get("authenticated"):
            return 401
        user: dict[str, Any] = result.get("user") or {}
        access = await self.client.create(SUBJECT_ACCESS_REVIEWS, {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user.get("username", ""),
                "uid": user.get("uid", ""),
                "groups": user.get("groups") or [],
                "extra": user.get("extra") or {},
                "nonResourceAttributes": {"path": METRICS_PATH, "verb": "get"},
            },
        })
        return 200 if (access.get("status") or {}).get("allowed") is True else 403
