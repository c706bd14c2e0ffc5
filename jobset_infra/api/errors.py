"""The one error shape every check in jobset_infra.api returns: a field path and a message."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class FieldError:
    """A problem with one field, in Kubernetes path style (`spec.replicatedJobs[0].replicas`)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def join_path(parts: Sequence[str | int]) -> str:
    """`("spec", "replicatedJobs", 0, "replicas")` -> `spec.replicatedJobs[0].replicas`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def child(path: str, key: str | int) -> str:
    """The path of one field or list item below `path`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def show_value(value: Any) -> str:
    """A value as the apiserver prints it in `Invalid value: ...` (strings quoted, JSON-ish)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return '"object"'
    if isinstance(value, list):
        return '"array"'
    if value is None:
        return "null"
    return json.dumps(str(value))


def invalid(path: str, value: Any, message: str) -> FieldError:
    """`Invalid value: <value>: <message>` (apimachinery field.Invalid)."""
    return FieldError(path, f"Invalid value: {show_value(value)}: {message}")


def required(path: str) -> FieldError:
    """`Required value` (field.Required)."""
    return FieldError(path, "Required value")


def forbidden(path: str, message: str) -> FieldError:
    """`Forbidden: <message>` (field.Forbidden)."""
    return FieldError(path, f"Forbidden: {message}")


def duplicate(path: str, value: Any) -> FieldError:
    """`Duplicate value: <value>` (field.Duplicate)."""
    return FieldError(path, f"Duplicate value: {show_value(value)}")


def not_supported(path: str, value: Any, allowed: Sequence[str]) -> FieldError:
    """`Unsupported value: <value>: supported values: ...` (field.NotSupported)."""
    supported = ", ".join(json.dumps(a) for a in allowed)
    return FieldError(
        path, f"Unsupported value: {show_value(value)}: supported values: {supported}"
    )


def too_long(path: str, limit: int) -> FieldError:
    """`Too long: may not be more than <limit> bytes` (field.TooLongMaxLength)."""
    return FieldError(path, f"Too long: may not be more than {limit} bytes")
