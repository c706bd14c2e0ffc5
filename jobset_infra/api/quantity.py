"""Kubernetes resource quantities (`500m`, `16Gi`, `1e3`, `-1`) as exact decimals (pure).

Declared once, here at the bottom layer, for every reader: `validate` (a negative request, a
request over its limit), the stack config, and through `placement.scheduling_terms` the
placement allocator and the sim's scheduler (milli-units). The syntax is the one the API
server's schemas carry for every quantity field.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Final

__all__ = ["QUANTITY_PATTERN", "parse_quantity_text"]

QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_QUANTITY: Final = re.compile(QUANTITY_PATTERN)
_BINARY: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15,
                   "E": 18}
_MAX_EXPONENT: Final = 100  # beyond any resource; keeps Decimal arithmetic cheap


def parse_quantity_text(value: object) -> Decimal | None:
    """The amount `value` stands for (ints and floats as they are), None if not a quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        value = str(value)  # JSON 0.25 is "0.25"; inf and nan (JSON 1e999) match no quantity
    if not isinstance(value, str) or len(value) > 64 or not _QUANTITY.match(value):
        return None
    match = re.match(r"^([+-]?[0-9.]+)(.*)$", value)
    assert match is not None  # the pattern above guarantees a number first
    number, suffix = match.groups()
    try:
        amount = Decimal(number)
        if suffix in _BINARY:
            return amount * Decimal(2 ** _BINARY[suffix])
        if suffix in _DECIMAL:
            return amount.scaleb(_DECIMAL[suffix])
        exponent = int(suffix[1:])
    except (InvalidOperation, ValueError):
        return None
    if abs(exponent) > _MAX_EXPONENT:
        return None
    scaled: Decimal = amount.scaleb(exponent)
    return scaled
