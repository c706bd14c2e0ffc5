"""Hostile documents for the hostile-input suite, and a way to run a command under a memory and a
time ceiling while measuring its peak RSS.

Every document is what an attacker (or an unlucky script) could feed a door of ours: YAML alias
bombs, nesting far past any schema, sizes at and past the limits, every field of a JobSet
replaced by a value of the wrong type, text in any script (and bytes that are no text at all).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from jobset_infra.testing.jobsets import make_jobset

MIB = 1024 * 1024
RSS_CEILING_MIB = 300
"""Peak RSS any door may reach under the suite (issue 18)."""
ADDRESS_SPACE_LIMIT = 4 * 1024 * MIB
"""A hard stop far above the ceiling (RLIMIT_AS): a regression fails the test, not the machine."""


@dataclass(frozen=True)
class Ran:
    code: int
    peak_rss_mib: float
    seconds: float
    out: str
    err: str


def run_bounded(argv: Sequence[str], *, timeout: float, stdin: bytes = b"",
                env: dict[str, str] | None = None) -> Ran:
    """Run `argv` under RLIMIT_AS, killed after `timeout`, and measure its own peak RSS."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryFile() as given, \
            tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        rss_file = Path(scratch) / "rss"
        given.write(stdin)
        given.seek(0)
        proc = subprocess.Popen([*_MEASURED, str(rss_file), *argv], stdin=given, stdout=out,
                                stderr=err, env=env)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()  # the wrapper passes it on, then reports
            code = proc.wait()
        out.seek(0)
        err.seek(0)
        return Ran(code, _peak(rss_file), time.monotonic() - started,
                   out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"))


@contextlib.contextmanager
def measured_process(argv: Sequence[str], peaks: dict[str, float],
                     door: str) -> Iterator[subprocess.Popen[bytes]]:
    """A long-lived `argv` (stdin a pipe; closing it ends a sim runner), its peak RSS put into
    `peaks[door]` when it ends."""
    with tempfile.TemporaryDirectory() as scratch:
        rss_file = Path(scratch) / "rss"
        proc = subprocess.Popen([*_MEASURED, str(rss_file), *argv], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            yield proc
        finally:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.terminate()
            proc.wait(60)
            peaks[door] = max(peaks.get(door, 0.0), _peak(rss_file))


def _peak(rss_file: Path) -> float:
    return int(rss_file.read_text()) / 1024 if rss_file.exists() else float("nan")


# A small wrapper that sets the address-space limit, runs the command as its child and writes the
# child's peak RSS (wait4) to a file. Linux keeps a process's RSS high-water mark across exec,
# so a command forked straight from the test process would be charged the test's own RSS; forked
# from this wrapper it is charged a few MiB at most. SIGTERM is passed on to the command.
_MEASURED = (
    sys.executable, "-c",
    "import os, resource, signal, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE_LIMIT}, {ADDRESS_SPACE_LIMIT}))\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))\n"
    "while True:\n"
    "    try:\n"
    "        _, status, usage = os.wait4(pid, 0)\n"
    "        break\n"
    "    except InterruptedError:\n"
    "        pass\n"
    "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
    "code = os.waitstatus_to_exitcode(status)\n"
    "sys.exit(code if code >= 0 else 128 - code)\n",
)


# --- documents -----------------------------------------------------------------------------------


def alias_bomb(levels: int, width: int) -> bytes:
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return ("\n".join(lines) + "\n").encode()


def nested(depth: int, style: str) -> bytes:
    if style == "flow-list":
        return b"x: " + b"[" * depth + b"]" * depth + b"\n"
    if style == "flow-map":
        return b"x: " + b"{a: " * depth + b"1" + b"}" * depth + b"\n"
    if style == "json":
        return b'{"x": ' + b"[" * depth + b"]" * depth + b"}"
    return b"x:\n" + b"".join(b"  " * i + b"- \n" for i in range(1, min(depth, 2000)))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12,
)
# Text in any script, controls and the byte-order mark included (no lone surrogates: UTF-8
# cannot carry them, so no YAML file or request body can either).
ANY_TEXT = st.text(st.characters(codec="utf-8"), max_size=80)


def jobset() -> dict[str, Any]:
    builder = make_jobset("hostile", "default").replicated_job("w", replicas=2)
    return builder.pod_spec("w", restartPolicy="Never").obj()


PATHS: tuple[tuple[str, ...], ...] = (
    ("metadata",), ("metadata", "name"), ("metadata", "labels"), ("metadata", "annotations"),
    ("metadata", "finalizers"), ("spec",), ("spec", "replicatedJobs"),
    ("spec", "replicatedJobs", "0"), ("spec", "replicatedJobs", "0", "replicas"),
    ("spec", "replicatedJobs", "0", "name"), ("spec", "replicatedJobs", "0", "template"),
    ("spec", "replicatedJobs", "0", "template", "spec"),
    ("spec", "replicatedJobs", "0", "template", "spec", "parallelism"),
    ("spec", "replicatedJobs", "0", "template", "spec", "template"),
    ("spec", "replicatedJobs", "0", "template", "spec", "template", "spec"),
    ("spec", "replicatedJobs", "0", "template", "spec", "template", "spec", "containers"),
    ("spec", "failurePolicy"), ("spec", "successPolicy"), ("spec", "network"), ("status",),
)


def with_value(document: dict[str, Any], path: Sequence[str], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(document))
    node: Any = out
    for part in path[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key = path[-1]
    if isinstance(node, list):
        node[int(key)] = value
    else:
        node[key] = value
    return out


@st.composite
def wrong_typed_jobsets(draw: st.DrawFn) -> dict[str, Any]:
    """A JobSet with one field replaced by any JSON value, or its labels by any text."""
    path = draw(st.sampled_from(PATHS))
    value = draw(JSON_VALUES | st.builds(lambda k, v: {k: v}, ANY_TEXT, ANY_TEXT)
                 | st.sampled_from([2_000_000_000, -1, 10**30, "a string", [], {}]))
    return with_value(jobset(), path, value)


def as_yaml(document: Any) -> bytes:
    return json.dumps(document, ensure_ascii=False).encode()


WORST: tuple[bytes, ...] = (
    alias_bomb(9, 9),  # the 638-byte bomb that took validate to 23 GB
    alias_bomb(7, 9),
    nested(50_000, "json"),
    nested(10_001, "json"),
    nested(5_000, "json"),  # the sim's old 500
    nested(1_001, "flow-list"),
    b"- x\n" * 250_000,  # over the YAML node budget
    b"- x\n" * 190_000,  # just under it: the most memory a YAML parse may take
    b"a: '" + b"x" * (9 * MIB) + b"'\n",  # over every size limit
    b"a: '" + b"x" * (3 * MIB - 100) + b"'\n",  # under the sim's
    b"\xff\xfe not UTF-8 \x80\x81",
)
"""The worst cases, run as explicit examples on every door (hypothesis adds its own)."""

HOSTILE_BYTES = st.one_of(
    st.builds(alias_bomb, st.integers(2, 10), st.integers(2, 12)),
    st.builds(nested, st.sampled_from([50, 101, 999, 1_001, 10_001, 50_000]),
              st.sampled_from(["flow-list", "flow-map", "json", "block"])),
    st.builds(lambda n: b"a: '" + b"x" * n + b"'\n", st.sampled_from([MIB, 9 * MIB])),
    st.builds(lambda n: b"- x\n" * n, st.sampled_from([1_000, 250_000])),
    st.builds(as_yaml, wrong_typed_jobsets()),
    st.builds(lambda t: as_yaml(with_value(jobset(), ("metadata", "labels"), {t: t})), ANY_TEXT),
    st.binary(max_size=200),
    st.just(b"\xff\xfe not UTF-8 \x80\x81"),
    st.just(b"\xef\xbb\xbfapiVersion: v1\nkind: ConfigMap\nmetadata: {name: bom}\n"),
)
"""Bytes for a file or a request body: every kind of hostile document above."""
