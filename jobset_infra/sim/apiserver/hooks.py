"""What sits between an HTTP request and the store: the request as Kubernetes names it, the
plug-in point for fault injection, and per-request statistics.

A `RequestHook` sees every API request (discovery included) before it is handled and may return
an `Intercept`: wait, answer with an error Status, drop a watch after a while, or end a watch with
410 Gone. `jobset_infra.sim.apiserver.faults.FaultInjector` decisions have exactly these fields.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Protocol

from jobset_infra.sim.apiserver.errors import StatusError

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True, slots=True)
class ApiRequest:
    """One request: Kubernetes verb (get, list, watch, create, update, patch, delete,
    deletecollection, or "discovery"), resource type, object and subresource; `dry_run` when
    it asked `dryRun=All` (admitted and validated, nothing stored)."""

    verb: str
    group: str = ""
    version: str = ""
    resource: str = ""
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    method: str = "GET"
    path: str = "/"
    dry_run: bool = False


class InterceptLike(Protocol):
    """The fields the server acts on (a `faults.Decision` has them too)."""

    @property
    def delay(self) -> float: ...

    @property
    def error(self) -> StatusError | None: ...

    @property
    def drop_after(self) -> float | None: ...

    @property
    def expire(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Intercept:
    """Wait `delay` seconds; then fail with `error`, or for a watch close it after `drop_after`
    seconds, or answer it with a 410 Expired ERROR event when `expire`."""

    delay: float = 0.0
    error: StatusError | None = None
    drop_after: float | None = None
    expire: bool = False


class RequestHook(Protocol):
    def __call__(self, request: ApiRequest) -> InterceptLike | None: ...


def no_hook(request: ApiRequest) -> InterceptLike | None:
    """The default hook: every request is served as is."""
    return None


class Stats:
    """Requests served, by (verb, resource) with subresources named like "jobs/status", plus
    `writes` (create/update/patch/delete/deletecollection). `reset()` starts a measurement."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.writes = 0

    def record(self, request: ApiRequest) -> None:
        resource = request.resource
        if request.subresource:
            resource = f"{resource}/{request.subresource}"
        self.requests[(request.verb, resource)] += 1
        if request.verb in WRITE_VERBS:
            self.writes += 1

    def count(self, verb: str | None = None, resource: str | None = None) -> int:
        return sum(n for (v, r), n in self.requests.items()
                   if (verb is None or v == verb) and (resource is None or r == resource))

    def reset(self) -> None:
        self.requests.clear()
        self.writes = 0

    def snapshot(self) -> dict[str, int]:
        """{"verb resource": count} for reports."""
        return {f"{v} {r}".strip(): n for (v, r), n in sorted(self.requests.items())}
