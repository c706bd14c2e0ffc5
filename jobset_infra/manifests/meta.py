"""Object metadata shared by every manifest builder: names, common labels, name checks, and the
wording of argument problems (`field.path: message`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from jobset_infra.api.names import dns1123_label, dns1123_subdomain

__all__ = [
    "Manifest",
    "common_labels",
    "field_problems",
    "object_meta",
    "require_dns_label",
    "require_dns_subdomain",
]

Manifest = dict[str, Any]
"""A Kubernetes object as plain JSON-like data (camelCase keys, as the API server takes it)."""

PART_OF = "jobset-infra"


def common_labels(name: str, component: str) -> dict[str, str]:
    """Return the recommended `app.kubernetes.io/*` labels for one of our objects."""
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/part-of": PART_OF,
        "app.kubernetes.io/managed-by": PART_OF,
    }


def object_meta(
    name: str,
    labels: Mapping[str, str],
    namespace: str | None = None,
    annotations: Mapping[str, str] | None = None,
) -> Manifest:
    """Return `metadata` for an object; cluster-scoped objects pass no namespace."""
    meta: Manifest = {"name": name, "labels": dict(labels)}
    if namespace is not None:
        meta["namespace"] = namespace
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def require_dns_label(value: str, field: str) -> str:
    """Return `value` if it is a valid RFC 1123 label (namespace, Service name), else raise."""
    if dns1123_label(value):
        raise ValueError(
            f"{field}: {value!r} is not a valid name: use at most 63 lowercase letters, digits "
            "and '-', starting and ending with a letter or digit"
        )
    return value


def require_dns_subdomain(value: str, field: str) -> str:
    """Return `value` if it is a valid RFC 1123 subdomain (most object names), else raise."""
    if dns1123_subdomain(value):
        raise ValueError(
            f"{field}: {value!r} is not a valid name: use at most 253 lowercase letters, digits, "
            "'-' and '.', each dot-separated part starting and ending with a letter or digit"
        )
    return value


def field_problems(err: ValidationError) -> list[str]:
    """Return one `field.path: message` line per problem pydantic found (its message says why)."""
    problems = []
    for problem in err.errors():
        where = ".".join(str(part) for part in problem["loc"]) or "args"
        problems.append(f"{where}: {problem['msg'].removeprefix('Value error, ')}")
    return problems
