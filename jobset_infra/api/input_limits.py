"""Bounds on untrusted input, checked before anything parses or recurses: size, nesting depth,
node count and YAML alias expansion.

Every reader of outside data uses these: `jobset-infra validate` and `plan` (files), the sim
(request bodies) and the controller (API responses). A `Limits` names the bounds of one door;
`LimitError` says which bound was hit, the limit and how to get under it. The YAML checks walk
the parser's event stream (constant memory) before a single node is built, so a 600-byte alias
bomb is refused in microseconds instead of expanding to gigabytes; the JSON depth check reads
a skeleton of the bytes, so a 10,000-deep array never reaches a recursive decoder.
"""

from __future__ import annotations

import itertools
import json
import json.scanner
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any, Final, Literal

import yaml

__all__ = [
    "APISERVER_JSON_DEPTH",
    "APISERVER_REQUEST_BYTES",
    "CONTROLLER_LIMITS",
    "MANIFEST_LIMITS",
    "MIB",
    "SIM_LIMITS",
    "Bound",
    "LimitError",
    "Limits",
    "check_depth",
    "check_size",
    "check_yaml_events",
    "ensure_recursion_headroom",
    "json_depth",
    "loads_json",
    "read_bounded",
]

MIB: Final = 1024 * 1024
APISERVER_REQUEST_BYTES: Final = 3 * MIB
"""kube-apiserver refuses a request body over 3 MiB with 413 ("limit is 3145728")."""
APISERVER_JSON_DEPTH: Final = 10_000
"""apimachinery's JSON decoder refuses nesting deeper than 10,000 levels ("exceeded max depth")."""

Bound = Literal["size", "depth", "nodes", "aliases"]


@dataclass(frozen=True, slots=True)
class Limits:
    """The bounds of one door. `what` names the input in messages ("file", "request body")."""

    max_bytes: int
    max_depth: int
    max_nodes: int
    """YAML nodes per stream, aliases counted as expanded (bounds the memory of the parse)."""
    max_alias_nodes: int
    """nodes that alias expansion may add to a stream (real manifests use a handful)."""
    what: str = "input"


MANIFEST_LIMITS: Final = Limits(
    max_bytes=8 * MIB, max_depth=100, max_nodes=200_000, max_alias_nodes=10_000, what="file"
)
"""`validate` and `plan`: a JobSet nests 39 levels (its CRD too); 100 is more than any manifest."""
SIM_LIMITS: Final = Limits(
    max_bytes=APISERVER_REQUEST_BYTES,
    max_depth=APISERVER_JSON_DEPTH,
    max_nodes=200_000,
    max_alias_nodes=10_000,
    what="request body",
)
"""The sim: the real server's size and depth; YAML bounded so one body cannot take 600 MB."""
CONTROLLER_LIMITS: Final = Limits(
    max_bytes=64 * MIB,
    max_depth=APISERVER_JSON_DEPTH,
    max_nodes=0,  # JSON only
    max_alias_nodes=0,
    what="API response",
)
"""The controller: a 500-item LIST page of large Jobs is tens of MiB; objects nest as the API
server allows (it refuses deeper ones itself); JobSets are held to MANIFEST_LIMITS.max_depth."""


class LimitError(ValueError):
    """Input over one of its bounds; the message names the bound, the limit and the fix."""

    def __init__(self, bound: Bound, limit: int, message: str) -> None:
        super().__init__(message)
        self.bound: Bound = bound
        self.limit = limit


def _size_error(limits: Limits, length: int | None = None) -> LimitError:
    size = f"is {length} bytes" if length is not None else "is larger than that"
    return LimitError(
        "size",
        limits.max_bytes,
        f"{limits.what} size limit is {limits.max_bytes} bytes ({limits.max_bytes / MIB:g} MiB) "
        f"and this {size}; split it into smaller documents",
    )


def check_size(length: int, limits: Limits) -> None:
    """Raise LimitError when `length` bytes is over `limits.max_bytes`."""
    if length > limits.max_bytes:
        raise _size_error(limits, length)


def read_bounded(stream: IO[bytes], limits: Limits) -> bytes:
    """Read at most `limits.max_bytes` from `stream` (a file, a pipe, /dev/zero); raise
    LimitError instead of reading on when there is more."""
    data = stream.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise _size_error(limits)
    return data


def _depth_error(limits: Limits, where: str = "") -> LimitError:
    return LimitError(
        "depth",
        limits.max_depth,
        f"{limits.what} nests deeper than {limits.max_depth} levels{where} "
        f"(limit {limits.max_depth}); no Kubernetes object nests that deep",
    )


# --- JSON ----------------------------------------------------------------------------------------

_STRING: Final = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_STEP: Final = bytes.maketrans(b"[{]}", b"\x01\x01\x00\x00")


def json_depth(data: bytes) -> int:
    """The deepest nesting of brackets in JSON text, strings skipped; linear, no recursion."""
    skeleton = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    opened = skeleton.count(b"[") + skeleton.count(b"{")
    if opened == 0:
        return 0
    if opened * 2 == len(skeleton) and skeleton[:opened].translate(_STEP) == b"\x01" * opened:
        return opened  # all opens, then all closes: the usual shape of a deep bomb
    steps = skeleton.translate(_STEP)
    return max(itertools.accumulate(1 if step else -1 for step in steps))


def loads_json(data: bytes | str, limits: Limits, *, interruptible: bool = False) -> Any:
    """`json.loads` after the size and depth checks; raise LimitError or ValueError.

    `interruptible`: build objects and integers through Python callbacks, so a decode on a
    worker thread hands the GIL to other threads every few microseconds instead of holding it
    for the whole parse (a 3 MiB body: 100-300 ms); about twice as slow.
    """
    raw = data.encode() if isinstance(data, str) else data
    check_size(len(raw), limits)
    if raw.count(b"[") + raw.count(b"{") > limits.max_depth and json_depth(raw) > limits.max_depth:
        raise _depth_error(limits)
    ensure_recursion_headroom(limits.max_depth)
    hooks: dict[str, Any] = ({"object_pairs_hook": _object, "parse_int": _integer}
                             if interruptible else {})
    try:
        return json.loads(raw, **hooks)
    except RecursionError:
        # Python 3.12+ bounds the C stack apart from sys.setrecursionlimit, and json's C scanner
        # stops below the API server's 10,000 levels there; the pure-Python scanner recurses in
        # Python frames, which the headroom above allows (10,000 levels: about 0.1 s).
        decoder = json.JSONDecoder(**hooks)
        decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
        return decoder.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return dict(pairs)  # Python code: the interpreter may switch threads here


def _integer(text: str) -> int:
    return int(text)


def ensure_recursion_headroom(depth: int) -> None:
    """Let code recurse over values `depth` levels deep (a few frames per level).

    Python-to-Python calls use no C stack on 3.11+, and the C-level recursions (json, ==,
    deepcopy) take a few hundred bytes per level: 10,000 levels fit an 8 MiB thread stack.
    """
    needed = 3 * depth + 1_000
    if sys.getrecursionlimit() < needed:
        sys.setrecursionlimit(needed)


def check_depth(value: Any, max_depth: int, what: str = "object") -> None:
    """Raise LimitError when an already-decoded value nests deeper than `max_depth`
    (iterative: safe whatever the depth)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > max_depth:
            limits = Limits(0, max_depth, 0, 0, what)
            raise _depth_error(limits)
        stack.extend((child, depth + 1) for child in children)


# --- YAML ----------------------------------------------------------------------------------------


def check_yaml_events(events: Iterable[yaml.Event], limits: Limits) -> None:
    """Walk a YAML event stream and raise LimitError before its nodes would exceed a bound.

    Counts every node as the document would be after alias expansion (an alias adds the size
    of its anchor's subtree) and its depth, and refuses an alias of an anchor still open (a
    recursive document, which no JSON value can be).
    """
    budget = _YamlBudget(limits)
    for event in events:
        budget.feed(event)


class _YamlBudget:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.nodes = self.aliased = 0
        # open collections: [anchor, expanded size so far, height of the deepest child]
        self.open: list[list[Any]] = []
        self.anchors: dict[str, tuple[int, int]] = {}  # anchor -> (size, height)

    def feed(self, event: yaml.Event) -> None:
        if isinstance(event, yaml.DocumentStartEvent):
            self.anchors.clear()  # anchors are per document
        elif isinstance(event, yaml.CollectionStartEvent):
            self._count(1, event)
            self.open.append([event.anchor, 1, 0])
            if len(self.open) > self.limits.max_depth:
                raise _depth_error(self.limits, _line(event))
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size, height = self.open.pop()
            self._close(anchor, size, height + 1)
        elif isinstance(event, yaml.ScalarEvent):
            self._count(1, event)
            self._close(event.anchor, 1, 0)
        elif isinstance(event, yaml.AliasEvent):
            self._alias(event)

    def _alias(self, event: yaml.AliasEvent) -> None:
        name = str(event.anchor)
        if any(entry[0] == name for entry in self.open):
            raise LimitError(
                "aliases",
                0,
                f"YAML alias *{name}{_line(event)} refers to a node that contains it (a "
                "recursive document has no JSON form); remove the alias",
            )
        size, height = self.anchors.get(name, (1, 0))
        self.aliased += size
        if self.aliased > self.limits.max_alias_nodes:
            raise LimitError(
                "aliases",
                self.limits.max_alias_nodes,
                f"YAML aliases in the {self.limits.what} expand to more than "
                f"{self.limits.max_alias_nodes} nodes{_line(event)} (limit "
                f"{self.limits.max_alias_nodes}); write the repeated parts out or use fewer "
                "aliases",
            )
        self._count(size, event)
        if len(self.open) + height > self.limits.max_depth:
            raise _depth_error(self.limits, _line(event))
        self._close(None, size, height)

    def _count(self, size: int, event: yaml.Event) -> None:
        self.nodes += size
        if self.nodes > self.limits.max_nodes:
            raise LimitError(
                "nodes",
                self.limits.max_nodes,
                f"{self.limits.what} has more than {self.limits.max_nodes} YAML nodes"
                f"{_line(event)} (limit {self.limits.max_nodes}); split it into smaller "
                "documents",
            )

    def _close(self, anchor: str | None, size: int, height: int) -> None:
        if anchor is not None:
            self.anchors[anchor] = (size, height)
        if self.open:
            parent = self.open[-1]
            parent[1] += size
            parent[2] = max(parent[2], height)


def _line(event: yaml.Event) -> str:
    mark = event.start_mark
    return f" at line {mark.line + 1}" if mark is not None else ""
