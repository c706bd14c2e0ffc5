"""Label and field selectors, parsed once per request into predicates over plain objects.

Label selector grammar as in k8s.io/apimachinery/pkg/labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
`a notin (x)`, `a` (exists), `!a` (does not exist), comma-separated and all required. Field
selectors support `=`, `==` and `!=` on the fields a resource declares selectable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from jobset_infra.sim.apiserver.errors import bad_request

Predicate = Callable[[dict[str, Any]], bool]

_SET_EXPR = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ_EXPR = re.compile(r"^\s*([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    terms: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    terms.append("".join(current))
    return [t for t in terms if t.strip()]


def _label_term(term: str) -> Callable[[dict[str, str]], bool]:
    eq = _EQ_EXPR.match(term)
    if eq:
        key, op, value = eq.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    match = _SET_EXPR.match(term)
    if not match:
        raise bad_request(f"unable to parse requirement: found '{term.strip()}', expected: "
                          "'=', '!=', '==', 'in', notin'")
    negate, key, op, values = match.groups()
    if op is None:
        if negate:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    choices = frozenset(v.strip() for v in values.split(",") if v.strip())
    if op == "in":
        return lambda labels: labels.get(key) in choices
    return lambda labels: labels.get(key) not in choices


def parse_label_selector(text: str | None) -> Predicate | None:
    """A predicate over objects, or None when the selector selects everything."""
    if not text or not text.strip():
        return None
    checks = [_label_term(term) for term in _split_terms(text)]

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(check(labels) for check in checks)

    return matches


def label_selector_from_dict(selector: dict[str, Any] | None) -> str:
    """Render a metav1.LabelSelector (matchLabels, matchExpressions) in the string grammar."""
    if not selector:
        return ""
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or ():
        op, key, values = expr["operator"], expr["key"], expr.get("values") or []
        if op == "In":
            terms.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            terms.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            terms.append(key)
        elif op == "DoesNotExist":
            terms.append(f"!{key}")
    return ",".join(terms)


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form a field selector compares against ("" when absent, booleans lowercased)."""
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
        if value is None:
            return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(
    text: str | None, allowed: Iterable[str], resource: str
) -> Predicate | None:
    """A predicate for a field selector; 400 BadRequest for a field the resource does not index."""
    if not text or not text.strip():
        return None
    known = {"metadata.name", "metadata.namespace", *allowed}
    checks: list[tuple[str, bool, str]] = []
    for term in _split_terms(text):
        match = re.match(r"^\s*([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
        path, op, value = match.groups()
        if path not in known:
            raise bad_request(f'"{path}" is not a known field selector: only '
                              f'"{", ".join(sorted(known))}" are supported for {resource}')
        checks.append((path, op != "!=", value))

    def matches(obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) is want for path, want, value in checks)

    return matches
