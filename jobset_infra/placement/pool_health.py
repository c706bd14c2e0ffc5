"""Slice health: which topology domains (node pools) to keep out of assignments, and until when.

Pure; no I/O, no clock (`now` is passed in). The controller records every child Job failure
against the domain the Job held, with its cause (`failure_cause.diagnose`), in a ledger it keeps
in the cluster (a ConfigMap; `ledger_from_text` / `ledger_text`). Each failure weighs by its
cause (`WEIGHTS`: an infrastructure cause 1, a signal 0.5, the program's own exit 0) and decays
with a half-life, so a domain's score is

    score(t) = sum(weight_i * 2 ** -((t - at_i) / half_life))

and the domain is kept out while its score is above the threshold: with the defaults (half-life
10 minutes, threshold 0.5) one NotReady node keeps its pool out for 10 minutes, two failures in
a row for 20, three for 26, two killed-by-a-signal exits for 10 and one for none. `kept_out`
returns each such domain with the time its score falls to the threshold:

    until = now + half_life * log2(score(now) / threshold)

`recorded` merges new failures into the ledger (a failure is recorded once per Job UID and
domain) and forgets what no longer matters: failures whose weight decayed below 1/64 of the
threshold, and beyond the newest `max_per_domain` of a domain.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from jobset_infra.api.resilience import INFRASTRUCTURE_CAUSES, Cause

__all__ = [
    "WEIGHTS",
    "DomainFailure",
    "HealthPolicy",
    "KeptOut",
    "kept_out",
    "ledger_from_text",
    "ledger_text",
    "recorded",
    "score",
]

WEIGHTS: Final[Mapping[Cause, float]] = {
    **{cause: 1.0 for cause in INFRASTRUCTURE_CAUSES},
    Cause.SIGNAL: 0.5,  # a killed process: the host's doing as often as the program's
}
"""How much one failure of each cause counts against its domain (a cause not listed: 0)."""

_FORGET_BELOW: Final = 1 / 64  # of the threshold
_DETAIL_CHARS: Final = 240
_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class DomainFailure:
    """One child Job failure recorded against the domain it held."""

    topology_key: str
    domain: str
    cause: Cause
    at: datetime
    job: str  # "<namespace>/<name>"
    job_uid: str
    detail: str = ""

    @property
    def weight(self) -> float:
        """How much this failure counts against its domain."""
        return WEIGHTS.get(self.cause, 0.0)


@dataclass(frozen=True, slots=True)
class HealthPolicy:
    """How long failures keep a domain out (controller config `placement.health`)."""

    half_life_seconds: float = 600.0
    threshold: float = 0.5
    max_per_domain: int = 16
    max_total: int = 1024
    enabled: bool = True


@dataclass(frozen=True, slots=True)
class KeptOut:
    """A domain kept out of assignments until `until`, and the failures that did it."""

    topology_key: str
    domain: str
    until: datetime
    score: float
    failures: tuple[DomainFailure, ...]

    def describe(self) -> str:
        """Return e.g. `v5e-3 (2 x node_not_ready, the last at 07:10:02Z; until 07:30:00Z)`."""
        counted = [f for f in self.failures if f.weight > 0]
        causes: dict[str, int] = {}
        for failure in counted:
            causes[failure.cause.value] = causes.get(failure.cause.value, 0) + 1
        what = ", ".join(f"{n} x {cause}" if n > 1 else cause for cause, n in causes.items())
        last = max(f.at for f in counted) if counted else self.until
        return f"{self.domain} ({what}, the last at {_clock(last)}; until {_clock(self.until)})"


def score(failures: Iterable[DomainFailure], now: datetime, policy: HealthPolicy) -> float:
    """Return the decayed sum of the failures' weights at `now` (future ones count in full)."""
    total = 0.0
    for failure in failures:
        age = max(0.0, (now - failure.at).total_seconds())
        total += failure.weight * 2.0 ** (-age / policy.half_life_seconds)
    return total


def kept_out(
    ledger: Iterable[DomainFailure], now: datetime, policy: HealthPolicy
) -> dict[tuple[str, str], KeptOut]:
    """Return the domains kept out at `now`, by (topology key, domain)."""
    if not policy.enabled:
        return {}
    out: dict[tuple[str, str], KeptOut] = {}
    for (key, domain), failures in _by_domain(ledger).items():
        value = score(failures, now, policy)
        if value <= policy.threshold:
            continue
        seconds = policy.half_life_seconds * math.log2(value / policy.threshold)
        until = now + timedelta(seconds=seconds)
        out[(key, domain)] = KeptOut(key, domain, until, value, tuple(failures))
    return out


def recorded(
    ledger: Sequence[DomainFailure],
    new: Iterable[DomainFailure],
    now: datetime,
    policy: HealthPolicy,
) -> tuple[DomainFailure, ...]:
    """Return the ledger with `new` failures recorded and the forgettable ones forgotten.

    A failure already recorded (same Job UID and domain) is not recorded again, so a pass
    repeated after a failed status write changes nothing. Order: by time, then Job.
    """
    seen = {(f.job_uid, f.topology_key, f.domain) for f in ledger}
    merged = list(ledger)
    for failure in new:
        key = (failure.job_uid, failure.topology_key, failure.domain)
        if key not in seen:
            seen.add(key)
            merged.append(failure)
    floor = policy.threshold * _FORGET_BELOW
    kept: list[DomainFailure] = []
    for failures in _by_domain(merged).values():
        alive = [f for f in failures if score([f], now, policy) >= floor]
        kept.extend(alive[-policy.max_per_domain:])
    kept.sort(key=lambda f: (f.at, f.job, f.domain))
    return tuple(kept[-policy.max_total:])


def _by_domain(ledger: Iterable[DomainFailure]) -> dict[tuple[str, str], list[DomainFailure]]:
    groups: dict[tuple[str, str], list[DomainFailure]] = {}
    for failure in sorted(ledger, key=lambda f: (f.at, f.job)):
        groups.setdefault((failure.topology_key, failure.domain), []).append(failure)
    return groups


def _clock(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%H:%M:%SZ")


# --------------------------------------------------------------------------- the stored form


def ledger_text(ledger: Iterable[DomainFailure]) -> str:
    """Return the ledger as the JSON text the ConfigMap stores."""
    entries = [
        {
            "topologyKey": f.topology_key,
            "domain": f.domain,
            "cause": f.cause.value,
            "at": f.at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "job": f.job,
            "jobUID": f.job_uid,
            "detail": f.detail[:_DETAIL_CHARS],
        }
        for f in ledger
    ]
    return json.dumps({"version": _VERSION, "failures": entries}, indent=1, sort_keys=True)


def ledger_from_text(text: str | None) -> tuple[DomainFailure, ...]:
    """Return the failures stored in `text`; entries that do not parse are skipped (someone
    may have edited the ConfigMap by hand: the controller must never stop on it)."""
    try:
        data = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return ()
    entries = data.get("failures") if isinstance(data, dict) else None
    out = []
    for entry in entries if isinstance(entries, list) else ():
        failure = _failure(entry)
        if failure is not None:
            out.append(failure)
    return tuple(out)


def _failure(entry: Any) -> DomainFailure | None:
    if not isinstance(entry, dict):
        return None
    try:
        at = datetime.fromisoformat(str(entry["at"]))
        return DomainFailure(
            topology_key=str(entry["topologyKey"]),
            domain=str(entry["domain"]),
            cause=Cause(entry["cause"]),
            at=at if at.tzinfo else at.replace(tzinfo=UTC),
            job=str(entry.get("job", "")),
            job_uid=str(entry.get("jobUID", "")),
            detail=str(entry.get("detail", ""))[:_DETAIL_CHARS],
        )
    except (KeyError, ValueError, TypeError):
        return None
