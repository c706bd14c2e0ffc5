"""The bodies the Kubernetes client sends and reads: DeleteOptions, and answers and watch
streams decoded within the controller's input limits (`input_limits.CONTROLLER_LIMITS`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp

from jobset_infra.api.input_limits import CONTROLLER_LIMITS, LimitError, loads_json
from jobset_infra.controller.runtime.kube_errors import ApiError

__all__ = ["ResponseTooLargeError", "decoded", "delete_options", "json_lines", "json_or_empty"]


class ResponseTooLargeError(ApiError):
    """A response or watch event over `input_limits.CONTROLLER_LIMITS` (never read whole)."""


def delete_options(propagation: str | None, preconditions: Mapping[str, str]) -> dict[str, Any]:
    """A DELETE's body: the propagation policy, and preconditions (uid, resourceVersion)."""
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if propagation:
        options["propagationPolicy"] = propagation
    if preconditions:
        options["preconditions"] = dict(preconditions)
    return options


def decoded(data: bytes) -> Any:
    """JSON within CONTROLLER_LIMITS (size, and depth before the recursive decoder)."""
    try:
        return loads_json(data, CONTROLLER_LIMITS)
    except LimitError as err:
        raise ResponseTooLargeError(0, "ResponseTooLarge", str(err)) from None


async def json_lines(stream: aiohttp.StreamReader) -> AsyncIterator[dict[str, Any]]:
    """Newline-delimited JSON objects of up to 64 MiB each (aiohttp's readline caps a line at
    128 KiB, and a JobSet with large templates and status can be bigger)."""
    buffer = b""
    async for chunk in stream.iter_any():
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            if line.strip():
                yield decoded(line)
        if len(buffer) > CONTROLLER_LIMITS.max_bytes:
            raise ResponseTooLargeError(
                0, "ResponseTooLarge", f"a watch event over {CONTROLLER_LIMITS.max_bytes} bytes"
            )
    if buffer.strip():
        yield decoded(buffer)


async def json_or_empty(resp: aiohttp.ClientResponse, decode: bool = True) -> dict[str, Any]:
    """The body as a dict ({} when empty). Not to `decode`: read to its end all the same, so the
    connection can be reused, and dropped as it comes (a deletecollection of thousands of Jobs
    answers with all of them, tens of MiB), so {}."""
    if not decode:
        async for _ in resp.content.iter_chunked(1 << 16):
            pass
        return {}
    limit = CONTROLLER_LIMITS.max_bytes
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            raise ResponseTooLargeError(0, "ResponseTooLarge",
                                        f"a response over {limit} bytes; lower the page size")
        chunks.append(chunk)
    data = b"".join(chunks)
    if not data:
        return {}
    try:
        value = decoded(data)
    except ValueError:
        return {"message": data[:500].decode("utf-8", "replace")}
    return value if isinstance(value, dict) else {"value": value}
