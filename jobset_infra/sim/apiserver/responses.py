"""Response helpers shared by the HTTP modules: compact JSON bodies, Status errors, warnings,
and query parameters parsed with a 400 instead of a traceback."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from jobset_infra.sim.apiserver.errors import StatusError, bad_request

JSON = "application/json"


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type=JSON)


def error_response(error: StatusError) -> web.Response:
    response = json_response(error.status, error.code)
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return with_warnings(response, error.warnings)


def with_warnings(response: web.Response, warnings: list[str]) -> web.Response:
    """Add `Warning: 299 - "..."` headers, as the API server does for field validation."""
    for warning in warnings:
        text = warning.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{text}"')
    return response


def flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name) in ("true", "1")


def number(query: Mapping[str, str], name: str) -> float | None:
    text = query.get(name)
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
