"""Hypothesis strategies for bad input: a valid document with a few values replaced by junk.

Mutating real documents (rather than drawing random trees) keeps most examples close to what a
user writes, so the checks deep inside (CEL rules, cross-field rules, slice math) are reached.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]

junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["", "-1", "1.5", "0x10", "2x4", "v5e", "Never", "∞", "a" * 80]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def paths(doc: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every path to a value inside `doc` (dict keys and list indices)."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield (*prefix, key)
            yield from paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield (*prefix, i)
            yield from paths(value, (*prefix, i))


def replaced(doc: Any, path: Path, value: Any) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()


@st.composite
def mutated(draw: st.DrawFn, base: Any, max_changes: int = 2) -> Any:
    """`base` with 1..max_changes values replaced by junk or deleted."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=1, max_value=max_changes))):
        where = sorted(paths(doc), key=repr)
        if not where:
            break
        path = draw(st.sampled_from(where))
        delete = draw(st.integers(min_value=0, max_value=3)) == 0
        doc = replaced(doc, path, _DELETE if delete else draw(junk))
    return doc
