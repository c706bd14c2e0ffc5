"""Values as they come off Pulumi's wire: the one home of turning its numbers back into ints.

Pulumi's property values (and the protobuf Struct under them) have one number type, a double:
a YAML program's `replicas: 2`, a chart's `port: 443` or a registration's count arrive as 2.0
and 443.0. Pulumi turns back into ints only the properties a schema types as integers; inside
free-form mappings (a JobSet's spec, a rendered chart's objects, a plan's inputs) the API
server's schema would refuse 2.0 where it declares an integer ("must be of type integer").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def from_wire(value: Any) -> Any:
    """`value` with each whole-number float an int, through mappings and lists; everything else
    (strings, bools, ints, fractions, Outputs) as given."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: from_wire(item) for key, item in value.items()}
    if isinstance(value, list):
        return [from_wire(item) for item in value]
    return value
