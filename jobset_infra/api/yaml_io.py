"""Reading Kubernetes YAML the way kubectl does: multi-document, JSON-compatible values.

Timestamps stay strings (PyYAML would make datetimes of `creationTimestamp: 2026-01-01T00:00:00Z`,
which are not JSON); errors name the line so a user can find them.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["YamlError", "load_documents"]

_TIMESTAMP = "tag:yaml.org,2002:timestamp"


class YamlError(ValueError):
    """Input that is not YAML (or not text)."""


class _Loader(yaml.CSafeLoader):
    """CSafeLoader without implicit timestamps."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _TIMESTAMP]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(data: bytes | str) -> list[Any]:
    """Every non-empty document of a YAML stream (JSON is YAML too)."""
    if isinstance(data, bytes):
        if b"\x00" in data:
            raise YamlError("binary data, not YAML text")
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise YamlError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        documents = list(yaml.load_all(data, Loader=_Loader))  # _Loader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        where = f" at line {exc.problem_mark.line + 1}" if exc.problem_mark else ""
        raise YamlError(f"not valid YAML: {exc.problem or exc.context}{where}") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"not valid YAML: {exc}") from None
    return [d for d in documents if d is not None]
