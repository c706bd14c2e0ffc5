"""String formats the kube-apiserver checks in CRD schemas (the ones CRDs commonly use).

Unknown formats pass, as they do in the apiserver; numeric formats (int32, int64, double, float)
describe integers and numbers and are not checked on strings.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from typing import Final

_DATE_TIME: Final = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)
_DATE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID: Final = re.compile(
    r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$"
)
_HOSTNAME: Final = re.compile(
    r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$"
)
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DURATION: Final = re.compile(r"^([-+]?\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def _ip(version: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return ipaddress.ip_address(value).version == version
        except ValueError:
            return False

    return check


def _cidr(value: str) -> bool:
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return "/" in value


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


_CHECKS: Final[dict[str, Callable[[str], bool]]] = {
    "date-time": lambda v: bool(_DATE_TIME.match(v)),
    "datetime": lambda v: bool(_DATE_TIME.match(v)),
    "date": lambda v: bool(_DATE.match(v)),
    "uuid": lambda v: bool(_UUID.match(v)),
    "hostname": lambda v: len(v) <= 253 and bool(_HOSTNAME.match(v)),
    "email": lambda v: bool(_EMAIL.match(v)),
    "ipv4": _ip(4),
    "ipv6": _ip(6),
    "cidr": _cidr,
    "byte": _byte,
    "duration": lambda v: bool(_DURATION.match(v)),
}


def format_ok(fmt: str, value: str) -> bool:
    """True when `value` is valid for `fmt` (or `fmt` is not checked)."""
    check = _CHECKS.get(fmt)
    return True if check is None else check(value)
