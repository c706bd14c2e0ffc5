"""Fault injection for the simulated API server: errors, latency, dropped and expired watches.

A `FaultInjector` holds `FaultRule`s and decides, for each request the server receives, whether
anything goes wrong with it. Decisions are seeded (`random.Random(seed)`) and bounded: each rule
has a probability, an optional cap on how many faults it injects (`max_count`) and an optional
time window (`start`..`end` seconds after the injector was created), so a test that injects faults
always ends with a healthy server and reproduces from its seed.

Kinds of fault (`Fault`):
- `ERROR`: answer with an HTTP error instead of handling the request. 409 (Conflict), 429
  (TooManyRequests, with `Retry-After`), 500 (InternalError), 503 (ServiceUnavailable) or 504
  (Timeout) carry the Status body a real API server sends.
- `LATENCY`: add `delay` seconds before handling. `rate=1` is a fixed per-request latency (what the
  benchmarks use: `FaultInjector.fixed_latency(0.005)`); a small rate with a large delay is a spike.
- `TIMEOUT`: hang for `delay` seconds, then answer 504 as an API server whose request timed out.
- `DROP_WATCH`: a watch stream is closed by the server after `delay` seconds (no error event).
- `EXPIRE_WATCH`: a watch is answered with a 410 Expired ERROR event, forcing the client to relist.

`decide(request)` is pure apart from the seeded generator and the counters it advances. The
injector is itself a `jobset_infra.sim.apiserver.hooks.RequestHook`:
`sim.add_hook(FaultInjector(...))` makes the server call it once per request and carry the
`Decision` out.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol

from jobset_infra.sim.apiserver import errors

VERBS: Final = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)
_ERROR_CODES: Final = frozenset({409, 429, 500, 503, 504})


class Fault(StrEnum):
    ERROR = "error"
    LATENCY = "latency"
    TIMEOUT = "timeout"
    DROP_WATCH = "drop-watch"
    EXPIRE_WATCH = "expire-watch"


class FaultSpecError(ValueError):
    """A fault rule that cannot be injected; the message names the field and the fix."""


class Request(Protocol):
    """What a rule matches on (`hooks.ApiRequest` has it): the verb and the resource plural."""

    @property
    def verb(self) -> str: ...

    @property
    def resource(self) -> str: ...


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """A `Request` built by hand (tests): the Kubernetes verb and the resource, e.g. "jobs"."""

    verb: str
    resource: str
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None



@dataclass(frozen=True, slots=True)
class FaultRule:
    """One kind of fault for the requests it matches. Empty `verbs`/`resources` match all."""

    fault: Fault
    rate: float = 1.0
    verbs: frozenset[str] = frozenset()
    resources: frozenset[str] = frozenset()
    code: int = 500
    retry_after: int = 1
    delay: float = 0.0
    max_count: int | None = None
    start: float = 0.0
    end: float | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise FaultSpecError(f"rate: {self.rate} is not a probability; use 0.0 to 1.0")
        unknown = sorted(set(self.verbs) - VERBS)
        if unknown:
            raise FaultSpecError(
                f"verbs: {unknown[0]!r} is not a Kubernetes verb; use {', '.join(sorted(VERBS))}"
            )
        if self.fault is Fault.ERROR and self.code not in _ERROR_CODES:
            codes = ", ".join(map(str, sorted(_ERROR_CODES)))
            raise FaultSpecError(f"code: {self.code} cannot be injected; use one of {codes}")
        if self.delay < 0 or self.retry_after < 0:
            raise FaultSpecError("delay and retry_after: must not be negative")
        if self.max_count is not None and self.max_count < 0:
            raise FaultSpecError("max_count: must not be negative; leave it unset for no cap")

    def matches(self, request: Request) -> bool:
        if self.verbs and request.verb not in self.verbs:
            return False
        if self.resources and request.resource not in self.resources:
            return False
        if self.fault in (Fault.DROP_WATCH, Fault.EXPIRE_WATCH):
            return request.verb == "watch"
        return True

    def active_at(self, elapsed: float) -> bool:
        return elapsed >= self.start and (self.end is None or elapsed < self.end)


@dataclass(frozen=True, slots=True)
class Decision:
    """What happens to one request: wait `delay`, then fail with `error`, or serve it.

    For watches, `drop_after` closes the stream after that many seconds and `expire` answers
    with a 410 ERROR event.
    """

    delay: float = 0.0
    error: errors.StatusError | None = None
    drop_after: float | None = None
    expire: bool = False

    @property
    def harmless(self) -> bool:
        quiet = self.error is None and self.drop_after is None and not self.expire
        return quiet and self.delay == 0


HARMLESS: Final = Decision()


@dataclass
class FaultInjector:
    """Seeded, bounded fault decisions. `injected` counts faults per rule index."""

    rules: tuple[FaultRule, ...] = ()
    seed: int = 0
    clock: Callable[[], float] = time.monotonic
    injected: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.rules = tuple(self.rules)
        self._random = random.Random(self.seed)
        self._started = self.clock()

    @classmethod
    def fixed_latency(cls, seconds: float, **kw: object) -> FaultInjector:
        """Every request waits `seconds` (e.g. 0.005): a network and server cost for benchmarks."""
        return cls(rules=(FaultRule(Fault.LATENCY, delay=seconds),), **kw)  # type: ignore[arg-type]

    @property
    def total(self) -> int:
        return sum(self.injected.values())

    def __call__(self, request: Request) -> Decision | None:
        """The server's RequestHook: None when nothing happens to the request."""
        decision = self.decide(request)
        return None if decision.harmless else decision

    def decide(self, request: Request) -> Decision:
        """The combined effect of every rule on `request`; advances the seeded generator."""
        elapsed = self.clock() - self._started
        delay, drop_after = 0.0, None
        for i, rule in enumerate(self.rules):
            if not self._fires(i, rule, request, elapsed):
                continue
            if rule.fault is Fault.LATENCY:
                delay += rule.delay
            elif rule.fault is Fault.DROP_WATCH:
                drop_after = rule.delay if drop_after is None else min(drop_after, rule.delay)
            elif rule.fault is Fault.EXPIRE_WATCH:
                return Decision(delay=delay, expire=True)
            elif rule.fault is Fault.TIMEOUT:
                return Decision(delay=delay + rule.delay, error=_error(504, rule, request))
            else:
                return Decision(delay=delay, error=_error(rule.code, rule, request))
        if delay == 0 and drop_after is None:
            return HARMLESS
        return Decision(delay=delay, drop_after=drop_after)

    def _fires(self, index: int, rule: FaultRule, request: Request, elapsed: float) -> bool:
        if not rule.matches(request) or not rule.active_at(elapsed):
            return False
        count = self.injected.get(index, 0)
        if rule.max_count is not None and count >= rule.max_count:
            return False
        # Draw only for partial rates, so adding a fixed-latency rule keeps other rules' draws.
        if rule.rate < 1.0 and self._random.random() >= rule.rate:
            return False
        self.injected[index] = count + 1
        return True


def _error(code: int, rule: FaultRule, request: Request) -> errors.StatusError:
    if code == 409:
        name = getattr(request, "name", None) or ""
        return errors.conflict("", request.resource, name, "injected conflict")
    if code == 429:
        return errors.too_many_requests(rule.retry_after)
    if code == 503:
        return errors.unavailable()
    if code == 504:
        return errors.StatusError(
            504, "Timeout", "Timeout: request did not complete within the allotted timeout"
        )
    return errors.internal("injected fault")


# --- Parsing `--faults` ----------------------------------------------------------------------


_FIELDS: Final = ("rate", "verbs", "resources", "code", "retry_after", "delay", "max", "start",
                  "end")


def parse_rule(text: str) -> FaultRule:
    """Parse `error:code=429,rate=0.1,verbs=create,resources=jobs,max=50`; fields optional.

    The first word is the fault (`error`, `latency`, `timeout`, `drop-watch`, `expire-watch`);
    `verbs` and `resources` take `+`-separated lists; `delay`, `start` and `end` are seconds.
    """
    kind, _, rest = text.strip().partition(":")
    try:
        fault = Fault(kind)
    except ValueError:
        raise FaultSpecError(
            f"fault {kind!r} is unknown; use one of {', '.join(f.value for f in Fault)}"
        ) from None
    values = dict(_pairs(rest))
    unknown = sorted(set(values) - set(_FIELDS))
    if unknown:
        raise FaultSpecError(f"{unknown[0]!r} is not a fault field; use {', '.join(_FIELDS)}")
    return FaultRule(fault, **_typed(values))


def _pairs(text: str) -> Iterable[tuple[str, str]]:
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep:
            raise FaultSpecError(f"{part!r} must be written key=value")
        yield key.strip(), value.strip()


def _typed(values: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        for key, value in values.items():
            if key in ("verbs", "resources"):
                out[key] = frozenset(filter(None, value.split("+")))
            elif key in ("code", "retry_after"):
                out[key] = int(value)
            elif key == "max":
                out["max_count"] = int(value)
            else:
                out[key] = float(value)
    except ValueError:
        raise FaultSpecError(f"{key}: {value!r} is not a number") from None
    return out
