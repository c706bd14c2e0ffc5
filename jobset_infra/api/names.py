"""Kubernetes name checks (apimachinery `validation` semantics), as pure functions.

Each returns the list of problems (apimachinery wording), empty when the value is valid.
"""

from __future__ import annotations

import re
from typing import Final

from jobset_infra.api import constants as c

_DNS1035_LABEL: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN: Final = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
)
_LABEL_VALUE: Final = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_HTTP_PATH: Final = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")


def _problems(value: str, limit: int, pattern: re.Pattern[str], message: str) -> list[str]:
    """Problems of `value` against one name rule: a length limit, then a pattern."""
    errors = []
    if len(value) > limit:
        errors.append(c.MAX_LENGTH_MESSAGE.format(limit=limit))
    if not pattern.fullmatch(value):
        errors.append(message)
    return errors


def dns1035_label(value: str) -> list[str]:
    """Problems of `value` as a DNS-1035 label (Service and Job names)."""
    return _problems(value, c.DNS_LABEL_MAX_LENGTH, _DNS1035_LABEL, c.DNS1035_LABEL_MESSAGE)


def dns1123_label(value: str) -> list[str]:
    """Problems of `value` as a DNS-1123 label (Namespace names)."""
    return _problems(value, c.DNS_LABEL_MAX_LENGTH, _DNS1123_LABEL, c.DNS1123_LABEL_MESSAGE)


def dns1123_subdomain(value: str) -> list[str]:
    """Problems of `value` as a DNS-1123 subdomain (most object names)."""
    return _problems(
        value, c.DNS_SUBDOMAIN_MAX_LENGTH, _DNS1123_SUBDOMAIN, c.DNS1123_SUBDOMAIN_MESSAGE
    )


def label_value(value: str) -> list[str]:
    """Problems of `value` as a label value."""
    return _problems(value, c.DNS_LABEL_MAX_LENGTH, _LABEL_VALUE, c.LABEL_VALUE_MESSAGE)


def domain_prefixed_path(value: str) -> list[str]:
    """Problems of `value` as `<dns-1123-subdomain>/<http path>` (e.g. spec.managedBy)."""
    domain, slash, path = value.partition("/")
    if not slash or not domain or not path:
        return [c.DOMAIN_PREFIXED_PATH_MESSAGE]
    errors = dns1123_subdomain(domain)
    if not _HTTP_PATH.fullmatch(path):
        errors.append("path must be a valid HTTP path")
    return errors


def is_too_long(message: str) -> bool:
    """True for the length message of these checks (callers reword it as upstream does)."""
    return message.startswith("must be no more than")


def matches(pattern: str, value: str) -> bool:
    """True when `value` matches the whole of `pattern`."""
    return re.fullmatch(pattern, value) is not None
