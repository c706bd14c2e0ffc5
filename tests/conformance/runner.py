"""Plays the corpus's request sequences against one API server and records what it answers.

A sequence is data (`corpus/*.yaml`): steps of `method`, `path`, optional `query`, `headers`,
`body` (an object, or `raw` text), `watch: N` to read a watch until N events
(or the server's `timeoutSeconds`), with `during: [steps]` played once the watch answered
(its headers) and before its events are read, and `save: {var: dotted.path}` to keep a value of
the answer for later steps as `${var}`. `$ns` is the sequence's own namespace (with its `default`
ServiceAccount), made before its first step and deleted after its last. Answers are recorded
raw; `compare.normalise` makes them comparable.
"""

from __future__ import annotations

import http.client
import importlib
import json
import re
import ssl
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

CORPUS = Path(__file__).parent / "corpus"
JsonObj = dict[str, Any]
_VAR = re.compile(r"\$\{(\w+)\}|\$ns\b")
PROTOBUF = "application/vnd.kubernetes.protobuf"  # an answer in it is recorded as such


@dataclass(frozen=True)
class Target:
    """Where to send requests: the server's URL and how to reach it."""

    url: str
    ssl_context: ssl.SSLContext | None = None
    token: str | None = None

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme == "https":
            return http.client.HTTPSConnection(parts.hostname or "", parts.port,
                                               timeout=timeout, context=self.ssl_context)
        return http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)


@dataclass
class Sequence:
    id: str
    steps: list[JsonObj]
    file: str
    setup: list[JsonObj] = field(default_factory=list)

    @property
    def namespace(self) -> str:
        return ("c-" + re.sub(r"[^a-z0-9-]", "-", self.id.lower()))[:63].rstrip("-")


def _entries(path: Path) -> list[JsonObj]:
    """A YAML file's `sequences`, or a Python data module's SEQUENCES (for families of cases)."""
    if path.suffix == ".yaml":
        entries: list[JsonObj] = yaml.safe_load(path.read_text())["sequences"]
        return entries
    module = importlib.import_module(f"tests.conformance.corpus.{path.stem}")
    return list(module.SEQUENCES)


def load_corpus(folder: Path = CORPUS) -> list[Sequence]:
    out: list[Sequence] = []
    seen: set[str] = set()
    files = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".py")
                   and not p.name.startswith("_"))
    for path in files:
        for entry in _entries(path):
            if entry["id"] in seen:
                raise ValueError(f"{path.name}: sequence id {entry['id']!r} used twice")
            seen.add(entry["id"])
            out.append(Sequence(entry["id"], entry["steps"], path.stem))
    return out


def request_count(sequences: list[Sequence]) -> int:
    return sum(len(s.steps) for s in sequences)


def _substitute(value: Any, env: dict[str, str]) -> Any:
    if isinstance(value, str):
        whole = _VAR.fullmatch(value)
        if whole and whole.group(1) and not isinstance(env.get(whole.group(1)), str):
            return env.get(whole.group(1))  # a saved non-string value keeps its type
        return _VAR.sub(lambda m: str(env[m.group(1)] if m.group(1) else env["ns"]), value)
    if isinstance(value, dict):
        return {_substitute(k, env): _substitute(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, env) for v in value]
    return value


def dig(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(obj, list):
            obj = obj[int(part)] if part.lstrip("-").isdigit() else None
        elif isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
    return obj


def _encode(step: JsonObj, headers: dict[str, str]) -> bytes | None:
    if "raw" in step:
        return str(step["raw"]).encode()
    if "body" not in step:
        return None
    if "yaml" in headers.get("Content-Type", ""):
        return yaml.safe_dump(step["body"], sort_keys=False).encode()
    headers.setdefault("Content-Type", "application/json")
    return json.dumps(step["body"]).encode()


def _decode(content_type: str, data: bytes) -> Any:
    if content_type.startswith(PROTOBUF):
        return {"protobuf bytes": len(data)}
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return {"text": data.decode(errors="replace")}


def _watch_events(response: http.client.HTTPResponse, count: int) -> list[Any]:
    events: list[Any] = []
    while len(events) < count:
        line = response.readline()
        if not line:
            break
        if line.strip():
            events.append(json.loads(line))
    return events


def play_step(target: Target, step: JsonObj, env: dict[str, str]) -> JsonObj:
    step = _substitute(step, env)
    headers = {k: str(v) for k, v in (step.get("headers") or {}).items()}
    if target.token:
        headers["Authorization"] = f"Bearer {target.token}"
    headers.setdefault("User-Agent", "conformance/1.0")
    body = _encode(step, headers)
    query = urllib.parse.urlencode(step.get("query") or {})
    path = step["path"] + (f"?{query}" if query else "")
    conn = target.connection(timeout=float(step.get("timeout", 15)))
    try:
        conn.request(step["method"], path, body=body, headers=headers)
        try:
            response = conn.getresponse()
        except (http.client.HTTPException, ConnectionError) as err:
            return {"code": 0, "warnings": [], "body": {"no answer": type(err).__name__}}
        for during in step.get("during") or ():  # the watch is open: write while it runs
            play_step(target, during, env)
        content_type = response.getheader("Content-Type", "")
        if "watch" in step and response.status == 200:
            answer: Any = _watch_events(response, int(step["watch"]))
        else:
            answer = _decode(content_type, response.read())
        return {"code": response.status,
                "warnings": response.msg.get_all("Warning") or [],
                "protobuf": content_type.startswith(PROTOBUF),
                "body": answer}
    finally:
        conn.close()


def play(target: Target, sequence: Sequence) -> list[JsonObj]:
    """Every step's answer; the sequence's namespace is made first and deleted after."""
    env = {"ns": sequence.namespace}
    ns_path = "/api/v1/namespaces"
    play_step(target, {"method": "POST", "path": ns_path,
                       "body": {"metadata": {"name": sequence.namespace}}}, env)
    # the ServiceAccount controller is not running (envtest's shape): Pods need the account
    play_step(target, {"method": "POST", "path": f"{ns_path}/$ns/serviceaccounts",
                       "body": {"metadata": {"name": "default"}}}, env)
    answers = []
    try:
        for step in sequence.steps:
            answer = play_step(target, step, env)
            for var, dotted in (step.get("save") or {}).items():
                env[var] = dig(answer["body"], dotted)
            answers.append(answer)
    finally:
        play_step(target, {"method": "DELETE", "path": f"{ns_path}/{sequence.namespace}"}, env)
    return answers


def play_all(target: Target, sequences: list[Sequence]) -> Iterator[tuple[Sequence, list[JsonObj]]]:
    for sequence in sequences:
        yield sequence, play(target, sequence)
