"""LIST: filtering, etcd key order, and `limit`/`continue` paging over one resource's objects."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobset_infra.sim.apiserver.decode_errors import quote_char
from jobset_infra.sim.apiserver.errors import StatusError, bad_request
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
    """The (resourceVersion, last key) a continue token carries; 400 worded as the API
    server's decoder words a token it cannot read."""
    try:
        raw = base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4))
    except (ValueError, TypeError):
        bad = next((i for i, c in enumerate(token) if c not in _BASE64), len(token))
        raise _bad_token(f"illegal base64 data at input byte {bad}") from None
    try:
        data = json.loads(raw)
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError):
        first = raw.lstrip()[:1].decode("latin-1") or " "
        raise _bad_token(f"invalid character {quote_char(first)} looking for beginning of "
                         "value") from None


_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=")


def _bad_token(why: str) -> StatusError:
    return bad_request(f"invalid continue token: continue key is not valid: {why}")


def parse_version(value: str | int | None) -> int | None:
    """A resourceVersion parameter: None for "any/latest" ("", "0"), else the number."""
    if value in (None, "", "0", 0):
        return None
    try:
        number = int(str(value))
    except ValueError:
        number = -1
    if number < 0:  # a watch answers it as an internal error, without a reason
        raise StatusError(500, "", f'resourceVersion: Invalid value: "{value}": '
                          f'strconv.ParseUint: parsing "{value}": invalid syntax')
    return number


def check_list_version(value: str | None) -> None:
    """A list's resourceVersion must be an unsigned integer (400 otherwise)."""
    if value and not value.isdigit():
        raise bad_request(f'invalid resource version: resourceVersion: Invalid value: "{value}": '
                          f'strconv.ParseUint: parsing "{value}": invalid syntax')


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
    keys_after = 0  # keys (matching or not) after the last item a page returns
    for ns in namespaces:
        objs = by_namespace.get(ns, {})
        for name in sorted(objs):
            if start is not None and (ns, name) <= start:
                continue
            if limit is not None and limit > 0 and len(items) >= limit:
                keys_after += 1
                continue
            obj = objs[name]
            if (label is None or label(obj)) and (field is None or field(obj)):
                items.append(obj)
    if limit is not None and limit > 0 and keys_after:
        # as etcd pages: more keys follow (they may all be filtered out); a count only when
        # nothing is filtered
        last = items[-1]["metadata"]
        token = encode_continue(rv, (last.get("namespace", ""), last["name"]))
        unfiltered = label is None and field is None
        return ListResult(items, str(rv), token, keys_after if unfiltered else None)
    return ListResult(items, str(rv))
