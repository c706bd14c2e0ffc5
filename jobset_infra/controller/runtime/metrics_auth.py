"""Who may read /metrics: as controller-runtime's `filters.WithAuthenticationAndAuthorization`.

The bearer token is authenticated by the API server (a TokenReview) and the user it names
authorized for `get` on the non-resource URL `/metrics` (a SubjectAccessReview); Prometheus'
ServiceAccount gets that through a ClusterRole like upstream's `metrics-reader`. 401 without a
valid token, 403 when not authorized, 503 when the API server cannot be asked. Verdicts are
cached by a hash of the token for a minute (bounded), so a 30 s scrape interval costs two
reviews a minute at most per scraper and a flood of bad tokens cannot grow the cache.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from jobset_infra.controller.runtime.kube import ApiError, KubeClient
from jobset_infra.controller.runtime.resources import SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS

__all__ = ["MetricsAuth"]

METRICS_PATH = "/metrics"


class MetricsAuth:
    def __init__(
        self,
        client: KubeClient,
        *,
        ttl: float = 60.0,
        max_entries: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, int]] = OrderedDict()

    async def verdict(self, authorization: str) -> int:
        """200 to serve the scrape, else the HTTP status to refuse it with."""
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return 401
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        now = self._clock()
        if cached is not None and now - cached[0] < self.ttl:
            return cached[1]
        try:
            status = await self._review(token)
        except ApiError:
            return 503  # not cached: the next scrape asks again
        self._cache[key] = (now, status)
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
