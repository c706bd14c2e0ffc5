"""LIST: filtering, etcd key order, and `limit`/`continue` paging over one resource's objects."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobset_infra.sim.apiserver.errors import bad_request
from jobset_infra.sim.apiserver.selectors import Predicate

JsonObj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ListResult:
    items: list[JsonObj]
    resource_version: str
    continue_token: str | None = None
    remaining: int | None = None


def encode_continue(rv: int, start: tuple[str, str]) -> str:
    raw = json.dumps({"rv": rv, "start": list(start)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from None


def parse_version(value: str | int | None) -> int | None:
    """A resourceVersion parameter: None for "any/latest" ("", "0"), else the number."""
    if value in (None, "", "0", 0):
        return None
    try:
        return int(str(value))
    except ValueError:
        message = f'resourceVersion: Invalid value: "{value}": must be a number'
        raise bad_request(message) from None


def page(
    by_namespace: Mapping[str, Mapping[str, JsonObj]],
    namespace: str | None,
    *,
    label: Predicate | None,
    field: Predicate | None,
    limit: int | None,
    continue_token: str | None,
    current_rv: int,
) -> ListResult:
    """Objects sorted by namespace and name (etcd key order), filtered, and cut after `limit`
    with a continue token that resumes after the last key returned."""
    rv, start = decode_continue(continue_token) if continue_token else (current_rv, None)
    namespaces = [namespace] if namespace else sorted(by_namespace)
    items: list[JsonObj] = []
    for ns in namespaces:
        objs = by_namespace.get(ns, {})
        for name in sorted(objs):
            if start is not None and (ns, name) <= start:
                continue
            obj = objs[name]
            if (label is None or label(obj)) and (field is None or field(obj)):
                items.append(obj)
    if limit and len(items) > limit:
        last = items[limit - 1]["metadata"]
        token = encode_continue(rv, (last.get("namespace", ""), last["name"]))
        return ListResult(items[:limit], str(rv), token, len(items) - limit)
    return ListResult(items, str(rv))
