"""Who asked the API server for what: its audit log, for the two controllers' users only.

The benchmark starts kube-apiserver with an audit policy that records, at level Metadata (no
bodies), every request of the controllers' users (`peers.Ours.user`, `peers.Upstream.user`)
once it completes, and nothing else; the Job controller, scheduler, kwok and the benchmark's
own client are not recorded. `AuditLog.read()` parses what was appended since the last call,
so a scenario can count a phase's requests as it goes; each `Request` carries the API server's
receive time (wall clock, the same clock as `time.time()` here).
"""

from __future__ import annotations

import datetime
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

WRITE_VERBS: Final = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def policy(users: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived", "ResponseStarted"],
        "rules": [{"level": "Metadata", "users": list(users)}, {"level": "None"}],
    }


def apiserver_args(policy_file: Path, log_file: Path) -> tuple[str, ...]:
    return (f"--audit-policy-file={policy_file}", f"--audit-log-path={log_file}",
            "--audit-log-format=json", "--audit-log-mode=blocking",
            "--audit-log-maxsize=0")


@dataclass(frozen=True)
class Request:
    at: float  # requestReceivedTimestamp, seconds since the epoch
    user: str
    verb: str
    resource: str  # "jobs", "jobsets/status", "pods", ...
    code: int

    @property
    def write(self) -> bool:
        return self.verb in WRITE_VERBS

    @property
    def key(self) -> str:
        """"create jobs", or "create jobs (409)" when the API server refused it."""
        refused = f" ({self.code})" if self.code >= 400 else ""
        return f"{self.verb} {self.resource}{refused}"


def _epoch(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def parse_line(line: str) -> Request | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    ref = event.get("objectRef") or {}
    resource = ref.get("resource") or event.get("requestURI", "?")
    if ref.get("subresource"):
        resource = f"{resource}/{ref['subresource']}"
    return Request(
        at=_epoch(event["requestReceivedTimestamp"]),
        user=(event.get("user") or {}).get("username", "?"),
        verb=event.get("verb", "?"),
        resource=resource,
        code=int((event.get("responseStatus") or {}).get("code") or 0),
    )


@dataclass
class AuditLog:
    path: Path
    requests: list[Request] = field(default_factory=list)
    _offset: int = 0
    _partial: bytes = b""

    def read(self) -> list[Request]:
        """Requests appended since the last call (also kept in `requests`)."""
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        new = [r for r in (parse_line(x.decode()) for x in lines if x.strip()) if r]
        self.requests.extend(new)
        return new

    def between(self, user: str, start: float, end: float) -> list[Request]:
        self.read()
        return [r for r in self.requests if r.user == user and start <= r.at < end]

    def last_write(self, user: str) -> float | None:
        self.read()
        return max((r.at for r in self.requests if r.user == user and r.write), default=None)


def writes(requests: Iterable[Request]) -> Counter[str]:
    return Counter(r.key for r in requests if r.write)


def reads(requests: Iterable[Request]) -> Counter[str]:
    return Counter(r.key for r in requests if not r.write)
