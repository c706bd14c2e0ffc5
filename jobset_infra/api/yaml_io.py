"""Reading Kubernetes YAML the way kubectl does: multi-document, JSON-compatible values.

Timestamps stay strings (PyYAML would make datetimes of `creationTimestamp: 2026-01-01T00:00:00Z`,
which are not JSON); errors name the line so a user can find them. The input's size, depth,
node count and alias expansion are checked first (`input_limits`), so no input can make the
parse itself take unbounded memory or time.
"""

from __future__ import annotations

from typing import Any

import yaml

from jobset_infra.api.input_limits import (
    MANIFEST_LIMITS,
    LimitError,
    Limits,
    check_size,
    check_yaml_events,
)

__all__ = ["YamlError", "load_documents"]

_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class YamlError(ValueError):
    """Input that is not YAML (or not text), or over a bound (`limit` says which)."""

    def __init__(self, message: str, limit: LimitError | None = None) -> None:
        super().__init__(message)
        self.limit = limit


class _Loader(yaml.CSafeLoader):
    """CSafeLoader without implicit timestamps."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(data: bytes | str, limits: Limits = MANIFEST_LIMITS) -> list[Any]:
    """Every non-empty document of a YAML stream (JSON is YAML too), within `limits`."""
    try:
        check_size(len(data), limits)
        text = _text(data)
        check_yaml_events(yaml.parse(text, Loader=_Loader), limits)
        documents = list(yaml.load_all(text, Loader=_Loader))  # _Loader is a SafeLoader
    except LimitError as exc:
        raise YamlError(str(exc), exc) from None
    except yaml.MarkedYAMLError as exc:
        where = f" at line {exc.problem_mark.line + 1}" if exc.problem_mark else ""
        raise YamlError(f"not valid YAML: {exc.problem or exc.context}{where}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}") from None
    return [d for d in documents if d is not None]


def _text(data: bytes | str) -> str:
    if isinstance(data, str):
        return data
    if b"\x00" in data:
        raise YamlError("binary data, not YAML text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
