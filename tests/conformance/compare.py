"""What legitimately differs between two servers' answers is normalised away; what is left is
compared field by field, and each difference must be listed in `differences.yaml`.

Normalised, in this one place: values the real server draws at random or from its etcd revision
per run, wherever they appear (fields, messages, Status details and causes):
- uids, times, and the values of resourceVersion, continue and token fields (whether they are
  there still counts), and the hash of the per-run client certificate in a credential id;
- generated name suffixes: a name made from metadata.generateName (found in an answer's object,
  or sent as a generateName prefix in the sequence's requests, so a refused create's Status counts
  too) and the `kube-api-access-xxxxx` projected volume the ServiceAccount admission adds to Pods;
- resourceVersion numbers inside messages ("too old resource version: N (M)", "ResourceVersion
  in record (N)", and objects quoted as JSON inside a message);
- Service cluster IPs, the order of managedFields entries, and the order of an apply conflict's
  FieldManagerConflict causes (the real server lists them in Go map order, differently per run;
  its message sorts them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DIFFERENCES = Path(__file__).parent / "differences.yaml"
JsonObj = dict[str, Any]
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_TOO_OLD = re.compile(r"too old resource version: \d+ \(\d+\)")
_IN_RECORD = re.compile(r"ResourceVersion in record \(\d+\)")
_QUOTED_RV = re.compile(r'(resourceVersion\\*"\s*:\s*\\*")\d+')
# the API server's random name suffix: 5 characters of this alphabet (no vowels, no 0 1 3)
_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
_API_ACCESS = re.compile(rf"\bkube-api-access-{_SUFFIX}\b")
_CERT_HASH = re.compile(r"X509SHA256=[0-9a-f]{64}")
_IP = re.compile(r"^\d+\.\d+\.\d+\.\d+$")
_OPAQUE = frozenset({"resourceVersion", "continue", "token"})


def _generated_names(value: Any, found: dict[str, str]) -> None:
    if isinstance(value, dict):
        meta = value.get("metadata")
        if isinstance(meta, dict) and meta.get("generateName") and meta.get("name"):
            found[meta["name"]] = meta["generateName"] + "<gen>"
        for item in value.values():
            _generated_names(item, found)
    elif isinstance(value, list):
        for item in value:
            _generated_names(item, found)


def _text(value: str, names: dict[str, str], prefixes: re.Pattern[str] | None) -> str:
    for name, placeholder in names.items():
        value = value.replace(name, placeholder)
    if prefixes is not None:
        value = prefixes.sub(lambda m: m.group(1) + "<gen>", value)
    value = _API_ACCESS.sub("kube-api-access-<gen>", value)
    value = _UID.sub("<uid>", value)
    value = _CERT_HASH.sub("X509SHA256=<hash>", value)
    value = _TIME.sub("<time>", value)
    value = _IN_RECORD.sub("ResourceVersion in record (<rv>)", value)
    value = _QUOTED_RV.sub(lambda m: m.group(1) + "<rv>", value)
    return _TOO_OLD.sub("too old resource version: <rv> (<rv>)", value)


def _walk(value: Any, names: dict[str, str], prefixes: re.Pattern[str] | None,
          key: str = "") -> Any:
    if isinstance(value, dict):
        out = {k: _walk(v, names, prefixes, k) for k, v in value.items()}
        if isinstance(out.get("managedFields"), list):
            out["managedFields"] = sorted(out["managedFields"], key=lambda e: (
                str(e.get("manager")), str(e.get("operation")), str(e.get("subresource"))))
        causes = out.get("causes")
        if isinstance(causes, list) and causes and all(
                isinstance(c, dict) and c.get("reason") == "FieldManagerConflict" for c in causes):
            out["causes"] = sorted(causes, key=lambda c: (str(c.get("field")),
                                                          str(c.get("message"))))
        return out
    if isinstance(value, list):
        return [_walk(v, names, prefixes, key) for v in value]
    if isinstance(value, str):
        if key in _OPAQUE and value:
            return f"<{key}>"
        if key in ("clusterIP", "clusterIPs") and _IP.match(value):
            return "<ip>"
        return _text(value, names, prefixes)
    return value


def generate_name_prefixes(value: Any) -> set[str]:
    """Every metadata.generateName sent in a sequence's request bodies."""
    out: set[str] = set()
    if isinstance(value, dict):
        meta = value.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("generateName"), str):
            out.add(meta["generateName"])
        for item in value.values():
            out |= generate_name_prefixes(item)
    elif isinstance(value, list):
        for item in value:
            out |= generate_name_prefixes(item)
    return out


def normalise(answer: JsonObj, prefixes: set[str] | frozenset[str] = frozenset()) -> JsonObj:
    """`answer` with the per-run values above replaced by placeholders; `prefixes` are the
    generateName prefixes the sequence sent."""
    names: dict[str, str] = {}
    _generated_names(answer.get("body"), names)
    pattern = re.compile("(" + "|".join(re.escape(p) for p in sorted(prefixes, key=len,
                         reverse=True)) + f"){_SUFFIX}\\b") if prefixes else None
    return {"code": answer["code"], "protobuf": answer.get("protobuf", False),
            "warnings": [_walk(w, names, pattern) for w in answer.get("warnings") or ()],
            "body": _walk(answer.get("body"), names, pattern)}


def diff(want: Any, got: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, want, got) for every leaf where the two differ."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for key in sorted(set(want) | set(got), key=str):
            child = f"{path}.{key}" if path else str(key)
            if key not in want:
                out.append((child, "<absent>", got[key]))
            elif key not in got:
                out.append((child, want[key], "<absent>"))
            else:
                out += diff(want[key], got[key], child)
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        out = []
        for index, (a, b) in enumerate(zip(want, got, strict=True)):
            out += diff(a, b, f"{path}[{index}]")
        return out
    return [] if want == got else [(path, want, got)]


@dataclass(frozen=True)
class Listed:
    """One known difference: a sequence (or "*"), optionally a step, a path prefix, a reason."""

    sequence: str
    path: str
    reason: str
    step: int | None = None

    def covers(self, sequence: str, step: int, path: str) -> bool:
        """`path` is the listed one or under it; `[*]` in the listed path is any list index."""
        if self.sequence not in ("*", sequence) or self.step not in (None, step):
            return False
        pattern = re.escape(self.path).replace(r"\[\*\]", r"\[\d+\]")
        return re.fullmatch(pattern + r"([.\[].*)?", path) is not None


def load_differences(path: Path = DIFFERENCES) -> list[Listed]:
    entries = yaml.safe_load(path.read_text()) or []
    out = []
    for entry in entries:
        reason = str(entry.get("reason", "")).strip()
        if not reason or "\n" in reason:
            raise ValueError(f"{path.name}: {entry} needs a one-sentence reason")
        out.append(Listed(entry["sequence"], entry["path"], reason, entry.get("step")))
    return out
