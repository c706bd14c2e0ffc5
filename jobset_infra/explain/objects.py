"""Reading conditions off Kubernetes objects as the API server returns them (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["Obj", "condition", "conditions", "is_true"]

Obj = Mapping[str, Any]


def conditions(obj: Obj) -> list[Obj]:
    return [{k: cond.get(k) for k in ("type", "status", "reason", "message")}
            for cond in (obj.get("status") or {}).get("conditions") or ()]


def condition(obj: Obj | None, kind: str) -> Obj | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind:
            found: Obj = cond
            return found
    return None


def is_true(obj: Obj | None, kind: str) -> bool:
    return (condition(obj, kind) or {}).get("status") == "True"
