"""Request bodies as the API server takes them: at most 3 MiB, JSON nested at most 10,000 deep,
YAML without alias bombs, decoded off the event loop.

The bounds are `api.input_limits.SIM_LIMITS` (the real server's size and depth; YAML also gets
a node and alias budget, so one body cannot take the sim's memory). The refusals carry the
real server's codes and words: 413 `Request entity too large: limit is 3145728`, and 400 `the
object provided is unrecognized (must be of type <Kind>): ...` for depth and aliasing. Bodies
over 64 KiB are decoded on a worker thread, one at a time, so a hostile body costs one thread
and bounded memory while every other request is served.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import re
import sys
import weakref
from collections.abc import Iterator
from typing import Any, Final

from aiohttp import web

from jobset_infra.api.input_limits import (
    APISERVER_JSON_DEPTH,
    SIM_LIMITS,
    LimitError,
    loads_json,
)
from jobset_infra.api.yaml_io import YamlError, load_documents
from jobset_infra.sim.apiserver.errors import StatusError, bad_request

__all__ = ["INLINE_BYTES", "decode", "read_capped", "too_large"]

_SWITCH_INTERVAL: Final = 0.0005
INLINE_BYTES: Final = 64 * 1024
"""Smaller bodies decode on the loop (microseconds); larger ones on the worker."""
_SNIPPET: Final = 30  # the real server quotes the first 30 bytes of a body it cannot read
_WORKER: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)  # one decode at a time per event loop


def too_large() -> StatusError:
    """413, as kube-apiserver answers a body over its 3 MiB limit."""
    return StatusError(413, "RequestEntityTooLarge",
                       f"Request entity too large: limit is {SIM_LIMITS.max_bytes}")


async def read_capped(request: web.Request) -> bytes:
    """The body, refused with 413 as soon as it is known to exceed the limit (never buffered
    beyond it)."""
    limit = SIM_LIMITS.max_bytes
    if request.content_length is not None and request.content_length > limit:
        raise too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


async def decode(raw: bytes, content_type: str, kind: str) -> Any:
    """The body as a JSON value; `kind` names the expected type in refusals."""
    if len(raw) <= INLINE_BYTES:
        return decode_now(raw, content_type, kind)
    loop = asyncio.get_running_loop()
    worker = _WORKER.setdefault(loop, asyncio.Semaphore(1))
    async with worker:
        return await asyncio.to_thread(_decode_yielding, raw, content_type, kind)


def _decode_yielding(raw: bytes, content_type: str, kind: str) -> Any:
    with _sharing_the_gil():
        return decode_now(raw, content_type, kind, interruptible=True)


@contextlib.contextmanager
def _sharing_the_gil() -> Iterator[None]:
    """While the worker runs: the interpreter's thread switch interval at 0.5 ms instead of 5 ms,
    so the event loop waits at most that long each time it needs the GIL (a request takes it
    several times), and no cyclic collection (a full one amid 200,000 new nodes holds the GIL
    for 100 ms)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, _SWITCH_INTERVAL))
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        sys.setswitchinterval(interval)


def decode_now(raw: bytes, content_type: str, kind: str, *, interruptible: bool = False) -> Any:
    """`decode` on the calling thread (`interruptible`: letting other threads run meanwhile)."""
    if "yaml" in content_type:
        return _yaml(raw, kind)
    try:
        return loads_json(raw, SIM_LIMITS, interruptible=interruptible)
    except LimitError as exc:
        snippet = raw[:_SNIPPET].decode("utf-8", "replace")
        raise _unrecognized(kind, f"couldn't get version/kind; json parse error: invalid "
                                  f"character '{_too_deep_bracket(raw)}' exceeded max depth",
                            snippet) from exc
    except (ValueError, RecursionError) as exc:
        if content_type == "application/merge-patch+json":
            raise bad_request("invalid JSON patch") from None  # kube-apiserver's words
        raise bad_request(f"error decoding the request body: {exc}") from None


def _yaml(raw: bytes, kind: str) -> Any:
    try:
        documents = load_documents(raw, SIM_LIMITS)
    except YamlError as exc:
        raise _unrecognized(kind, _yaml_problem(exc), raw[:_SNIPPET].hex()) from None
    return documents[0] if documents else None


def _yaml_problem(exc: YamlError) -> str:
    limit = exc.limit
    if limit is None:
        depth = re.search(r"exceeded maximum nesting depth at line (\d+)", str(exc))
        if depth:  # libyaml stops at 1000 levels, before the real server's 10,000
            return (f"yaml: line {depth.group(1)}: exceeded max depth of 1000 (the sim's YAML "
                    f"parser's limit; kube-apiserver's is {APISERVER_JSON_DEPTH})")
        return f"yaml: {str(exc).removeprefix('not valid YAML: ')}"
    if limit.bound == "aliases":
        return "yaml: document contains excessive aliasing"
    if limit.bound == "depth":
        return f"yaml: exceeded max depth of {limit.limit}"
    return f"yaml: {exc} (the sim's limit, which the real server does not have)"


def _unrecognized(kind: str, problem: str, snippet: str) -> StatusError:
    return bad_request(f"the object provided is unrecognized (must be of type {kind}): "
                       f"{problem} ({snippet} ...)")


def _too_deep_bracket(raw: bytes) -> str:
    """The bracket at which the nesting first exceeds the limit (named in the refusal)."""
    skeleton = re.sub(rb'"(?:[^"\\]|\\.)*"', b"", raw, flags=re.DOTALL)
    brackets = [b for b in skeleton if b in b"[]{}"]
    depths = itertools.accumulate(1 if b in b"[{" else -1 for b in brackets)
    for bracket, depth in zip(brackets, depths, strict=True):
        if depth > SIM_LIMITS.max_depth:
            return chr(bracket)
    return "["
