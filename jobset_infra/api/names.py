"""Kubernetes name checks (apimachinery `validation` semantics), as pure functions.

Each returns the list of problems (apimachinery wording), empty when the value is valid. The
limits and the wording live here, the one home of Kubernetes' own name rules.
"""

from __future__ import annotations

import re
from typing import Final

# --- apimachinery's limits and wording --------------------------------------------------------

# Maximum length of a DNS-1035 / DNS-1123 label and of a label value.
DNS_LABEL_MAX_LENGTH: Final = 63
# Maximum length of a DNS-1123 subdomain.
DNS_SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1035_LABEL_MESSAGE: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_LABEL_MESSAGE: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1123_SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_VALUE_MESSAGE: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
DOMAIN_PREFIXED_PATH_MESSAGE: Final = 'must be a domain-prefixed path (such as "acme.io/foo")'
# Length error; format with the limit.
MAX_LENGTH_MESSAGE: Final = "must be no more than {limit} characters"
# ObjectMeta on create without a name (apimachinery ValidateObjectMeta).
NAME_REQUIRED_MESSAGE: Final = "Required value: name or generateName is required"

# --- the rules -------------------------------------------------------------------------------

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
        errors.append(MAX_LENGTH_MESSAGE.format(limit=limit))
    if not pattern.fullmatch(value):
        errors.append(message)
    return errors


def dns1035_label(value: str) -> list[str]:
    """Problems of `value` as a DNS-1035 label (Service and Job names)."""
    return _problems(value, DNS_LABEL_MAX_LENGTH, _DNS1035_LABEL, DNS1035_LABEL_MESSAGE)


def dns1123_label(value: str) -> list[str]:
    """Problems of `value` as a DNS-1123 label (Namespace names)."""
    return _problems(value, DNS_LABEL_MAX_LENGTH, _DNS1123_LABEL, DNS1123_LABEL_MESSAGE)


def dns1123_subdomain(value: str) -> list[str]:
    """Problems of `value` as a DNS-1123 subdomain (most object names)."""
    return _problems(
        value, DNS_SUBDOMAIN_MAX_LENGTH, _DNS1123_SUBDOMAIN, DNS1123_SUBDOMAIN_MESSAGE
    )


def label_value(value: str) -> list[str]:
    """Problems of `value` as a label value."""
    return _problems(value, DNS_LABEL_MAX_LENGTH, _LABEL_VALUE, LABEL_VALUE_MESSAGE)


def domain_prefixed_path(value: str) -> list[str]:
    """Problems of `value` as `<dns-1123-subdomain>/<http path>` (e.g. spec.managedBy)."""
    domain, slash, path = value.partition("/")
    if not slash or not domain or not path:
        return [DOMAIN_PREFIXED_PATH_MESSAGE]
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
