"""Kubernetes resource quantities as integers in milli-units (pure).

Fit checks compare a pod's requests with a node's allocatable; both are quantities such as
`500m`, `16Gi` or `4`. Milli-units keep cpu exact and are big enough for memory in bytes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

__all__ = ["QuantityError", "add_resources", "parse_quantity", "parse_resources"]

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")


class QuantityError(ValueError):
    """A resource quantity that Kubernetes would not accept."""


def parse_quantity(value: object, field: str = "quantity") -> int:
    """Return `value` in milli-units, rounded up (as the API server rounds requests).

    Raises QuantityError naming `field` when the value is not a Kubernetes quantity.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{field}: {value!r} is not a quantity; use e.g. 4, 500m or 16Gi")
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return math.ceil(Decimal(str(value)) * 1000)
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(f"{field}: {value!r} is not a quantity; use e.g. 4, 500m or 16Gi")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        amount = Decimal(number)
    except InvalidOperation as exc:
        raise QuantityError(f"{field}: {value!r} is not a number") from exc
    scale = Decimal(_BINARY[suffix]) if suffix in _BINARY else _DECIMAL[suffix]
    return math.ceil(amount * scale * 1000)


def parse_resources(resources: Mapping[str, object] | None, field: str) -> dict[str, int]:
    """Return a resource list (name -> quantity) in milli-units; `field` names it in errors."""
    if not resources:
        return {}
    return {name: parse_quantity(q, f"{field}.{name}") for name, q in resources.items()}


def add_resources(total: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    """Return `total + more`, resource by resource (a new dict)."""
    out = dict(total)
    for name, amount in more.items():
        out[name] = out.get(name, 0) + amount
    return out
