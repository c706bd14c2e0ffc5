"""The ObjectMeta checks the API server makes on every kind, custom resources included: label
keys and values, annotation keys and their total size, finalizer names.

Pure; the wording is apimachinery's, as kube-apiserver v1.37.2 answered the cases in
tests/api/real_server/cases.py (recorded in answers.json). `validate` and the sim both call
`metadata_errors`, so a manifest `validate` passes is one the sim and the cluster accept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Final

from jobset_infra.api.errors import FieldError
from jobset_infra.api.names import (
    DNS_LABEL_MAX_LENGTH,
    DNS_SUBDOMAIN_MAX_LENGTH,
    LABEL_VALUE_MESSAGE,
    dns1123_subdomain,
    is_too_long,
)

__all__ = [
    "ANNOTATIONS_MAX_BYTES",
    "STANDARD_FINALIZERS",
    "label_value_problems",
    "metadata_errors",
    "qualified_name_problems",
]

ANNOTATIONS_MAX_BYTES: Final = 256 * 1024
"""Keys and values of all annotations together (apimachinery TotalAnnotationSizeLimitB)."""
STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})
"""Finalizers built-in kinds may carry without a domain prefix."""

_NAME_PART: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE: Final = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_NAME_PART_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_QUALIFIED_NAME_MESSAGE: Final = (
    f"a valid label key {_NAME_PART_RULE} with an optional DNS subdomain prefix and '/' "
    "(e.g. 'example.com/MyName')"
)
_NOT_QUALIFIED_FINALIZER: Final = (
    "name is neither a standard finalizer name nor is it fully qualified"
)


def _bytes(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def qualified_name_problems(value: str) -> list[str]:
    """Problems of `value` as a qualified name (label key, annotation key, finalizer):
    `[<dns-1123 subdomain>/]<name>`, the name at most 63 bytes."""
    parts = value.split("/")
    if len(parts) > 2:
        return [_QUALIFIED_NAME_MESSAGE]
    problems: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {p}" for p in _prefix_problems(prefix)]
    name = parts[-1]
    if not name:
        problems.append("name part must be non-empty")
    elif _bytes(name) > DNS_LABEL_MAX_LENGTH:
        problems.append(f"name part must be no more than {DNS_LABEL_MAX_LENGTH} bytes")
    if not _NAME_PART.fullmatch(name):
        problems.append(f"name part {_NAME_PART_RULE}")
    return problems


def _prefix_problems(prefix: str) -> list[str]:
    # Go counts bytes: the length rule is checked here, the pattern by the shared name rule.
    problems = [p for p in dns1123_subdomain(prefix) if not is_too_long(p)]
    if _bytes(prefix) > DNS_SUBDOMAIN_MAX_LENGTH:
        problems.insert(0, f"must be no more than {DNS_SUBDOMAIN_MAX_LENGTH} bytes")
    return problems


def label_value_problems(value: str) -> list[str]:
    """Problems of `value` as a label value: at most 63 bytes, empty or alphanumeric ends."""
    problems = []
    if _bytes(value) > DNS_LABEL_MAX_LENGTH:
        problems.append(f"must be no more than {DNS_LABEL_MAX_LENGTH} bytes")
    if not _LABEL_VALUE.fullmatch(value):
        problems.append(LABEL_VALUE_MESSAGE)
    return problems


def metadata_errors(meta: object, *, builtin: bool = True) -> list[FieldError]:
    """The API server's errors for `metadata` labels, annotations and finalizers, in its order.

    `builtin`: the object is of a built-in kind, whose finalizers must also be standard or
    domain-qualified (custom resources only get the qualified-name check). Values of the wrong
    type are left to the schema checks, which word them.
    """
    if not isinstance(meta, Mapping):
        return []
    errors = _label_errors(meta.get("labels"))
    errors += _annotation_errors(meta.get("annotations"))
    errors += _finalizer_errors(meta.get("finalizers"), builtin=builtin)
    return errors


def _invalid(path: str, value: str, problem: str) -> FieldError:
    # The API server quotes the value as Go does: UTF-8 kept, quotes and controls escaped.
    return FieldError(path, f"Invalid value: {json.dumps(value, ensure_ascii=False)}: {problem}")


def _strings(value: object) -> list[tuple[str, str]]:
    if not isinstance(value, Mapping):
        return []
    return [(k, v) for k, v in value.items() if isinstance(k, str) and isinstance(v, str)]


def _label_errors(labels: object) -> list[FieldError]:
    path = "metadata.labels"
    errors = []
    for key, value in _strings(labels):
        errors += [_invalid(path, key, p) for p in qualified_name_problems(key)]
        errors += [_invalid(path, value, p) for p in label_value_problems(value)]
    return errors


def _annotation_errors(annotations: object) -> list[FieldError]:
    path = "metadata.annotations"
    pairs = _strings(annotations)
    errors = [
        _invalid(path, key, p) for key, _ in pairs for p in qualified_name_problems(key.lower())
    ]
    if sum(_bytes(key) + _bytes(value) for key, value in pairs) > ANNOTATIONS_MAX_BYTES:
        too_long = f"Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes"
        errors.append(FieldError(path, too_long))
    return errors


def _finalizer_errors(finalizers: object, *, builtin: bool) -> list[FieldError]:
    if not isinstance(finalizers, list):
        return []
    names = [(i, f) for i, f in enumerate(finalizers) if isinstance(f, str)]
    path = "metadata.finalizers"
    errors = [_invalid(path, name, p) for _, name in names for p in qualified_name_problems(name)]
    if builtin:
        errors += [
            _invalid(f"{path}[{i}]", name, _NOT_QUALIFIED_FINALIZER)
            for i, name in names
            if name not in STANDARD_FINALIZERS and "/" not in name
        ]
    return errors

