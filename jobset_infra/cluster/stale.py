"""Which real-node clusters of this machine were killed: the record `up` leaves, and the rule.

Pure. `nodehost` writes and reads the records (under /run/jobset-infra), `local.sweep_stale`
applies the rule and tears down what a stale cluster left (docs/cluster.md, "A killed cluster").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Record:
    """What `up` writes under /run/jobset-infra/<key>/ before it changes the machine, so that a
    later `up` or `down` finds a cluster that was killed: its folder, its node count, and the
    process that owns it (None once `cluster up` has handed it over to `cluster down`)."""

    folder: Path
    count: int
    owner: tuple[int, int] | None  # (pid, start time in clock ticks): a recycled PID differs

    def to_json(self) -> dict[str, Any]:
        return {"folder": str(self.folder), "count": self.count,
                "owner": list(self.owner) if self.owner else None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        owner = data.get("owner")
        return cls(Path(data["folder"]), int(data["count"]),
                   (int(owner[0]), int(owner[1])) if owner else None)


def is_stale(owner_alive: bool | None, processes_alive: Sequence[bool]) -> bool:
    """Whether a recorded cluster is dead and only its leftovers remain: its owner (None: it
    has none, `cluster up` returned) died, or every process it started has. A cluster still
    starting (nothing started yet) with its owner alive is not stale."""
    if owner_alive is False:
        return True
    return bool(processes_alive) and not any(processes_alive)
