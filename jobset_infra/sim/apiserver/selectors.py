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

_SPECIAL = "=!(),><"
_SYMBOLS = ("==", "!=", "=", "!", "(", ")", ",", ">", "<")
_BINARY = "in, notin, =, ==, !=, gt, lt"
_END = ("end", "")
Token = tuple[str, str]  # (kind, literal); kinds: the symbol itself, "id", "in", "notin", "end"


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses (field selectors)."""
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


def _tokens(text: str) -> list[Token]:
    """k8s.io/apimachinery's label selector lexer: symbols (longest first), identifiers up to
    whitespace or a symbol, `in` and `notin` as keywords."""
    out: list[Token] = []
    i = 0
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text[i] in _SPECIAL:
            symbol = next(s for s in _SYMBOLS if text.startswith(s, i))
            out.append((symbol, symbol))
            i += len(symbol)
        else:
            j = i
            while j < len(text) and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            word = text[i:j]
            out.append((word if word in ("in", "notin") else "id", word))
            i = j
    return [*out, _END]


class _LabelParser:
    """The label selector grammar and error words of k8s.io/apimachinery/pkg/labels."""

    def __init__(self, text: str) -> None:
        self.items, self.at = _tokens(text), 0

    def peek(self, values: bool = True) -> Token:
        return self._as(self.items[self.at], values)

    def take(self, values: bool = True) -> Token:
        token = self.peek(values)
        self.at += 1
        return token

    @staticmethod
    def _as(token: Token, values: bool) -> Token:
        return ("id", token[1]) if values and token[0] in ("in", "notin") else token

    def parse(self) -> list[Callable[[dict[str, str]], bool]]:
        out: list[Callable[[dict[str, str]], bool]] = []
        while True:
            kind, literal = self.peek()
            if kind == "end":
                return out
            if kind not in ("id", "!"):
                raise ValueError(f"found '{literal}', expected: !, identifier, or 'end of string'")
            try:
                out.append(self.requirement())
            except ValueError as err:
                raise ValueError(f"unable to parse requirement: {err}") from None
            kind, literal = self.take()
            if kind == "end":
                return out
            if kind != ",":
                raise ValueError(f"found '{literal}', expected: ',' or 'end of string'")
            after = self.peek()
            if after[0] not in ("id", "!"):
                raise ValueError(f"found '{after[1]}', expected: identifier after ','")

    def requirement(self) -> Callable[[dict[str, str]], bool]:
        kind, literal = self.take()
        negate = kind == "!"
        if negate:
            kind, literal = self.take()
        if kind != "id":
            raise ValueError(f"found '{literal}', expected: identifier")
        key = literal
        if self.peek()[0] in ("end", ","):
            return (lambda labels: key not in labels) if negate else (lambda labels: key in labels)
        op, found = self.take(values=False)
        if op in ("in", "notin"):
            choices = self.values()
            if op == "in":
                return lambda labels: labels.get(key) in choices
            return lambda labels: labels.get(key) not in choices
        if op not in ("=", "==", "!=", ">", "<"):
            raise ValueError(f"found '{found}', expected: {_BINARY}")
        value = self.exact()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        if op in (">", "<"):
            return _compare(key, op, value)
        return lambda labels: labels.get(key) == value

    def values(self) -> frozenset[str]:
        kind, literal = self.take()
        if kind != "(":
            raise ValueError(f"found '{literal}' expected: '('")
        kind, literal = self.peek()
        if kind == ")":
            self.take()
            return frozenset({""})
        if kind not in ("id", ","):
            raise ValueError(f"found '{literal}', expected: ',', ')' or identifier")
        found: set[str] = set()
        while True:
            kind, literal = self.take()
            if kind == "id":
                found.add(literal)
                after = self.peek()
                if after[0] == ")":
                    self.take()
                    return frozenset(found)
                if after[0] != ",":
                    raise ValueError(f"found '{after[1]}', expected: ',' or ')'")
            elif kind == ",":
                if not found or self.peek()[0] in (")", ","):
                    found.add("")
                if self.peek()[0] == ")":
                    self.take()
                    return frozenset(found)
            else:
                raise ValueError(f"found '{literal}', expected: ',', or identifier")

    def exact(self) -> str:
        if self.peek()[0] in ("end", ","):
            return ""
        kind, literal = self.take()
        if kind != "id":
            raise ValueError(f"found '{literal}', expected: identifier")
        return literal


def _compare(key: str, op: str, value: str) -> Callable[[dict[str, str]], bool]:
    try:
        bound = int(value)
    except ValueError:
        raise ValueError(f"values[0]: Invalid value: \"{value}\": for 'Gt', 'Lt' operators, "
                         "the value must be an integer") from None

    def check(labels: dict[str, str]) -> bool:
        try:
            have = int(labels.get(key, ""))
        except ValueError:
            return False
        return have > bound if op == ">" else have < bound

    return check


def parse_label_selector(text: str | None) -> Predicate | None:
    """A predicate over objects, or None when the selector selects everything; 400 worded as
    the API server's parser words a selector it cannot read."""
    if not text or not text.strip():
        return None
    try:
        checks = _LabelParser(text).parse()
    except ValueError as err:
        raise bad_request(str(err)) from None

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
    text: str | None, allowed: Iterable[str], resource: str, *, own_fields: bool = False
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
        if path not in known:  # a kind with fields of its own says it as its field function does
            raise bad_request(f"field label not supported: {path}" if own_fields else
                              f'"{path}" is not a known field selector: only "metadata.name", '
                              '"metadata.namespace"')
        checks.append((path, op != "!=", value))

    def matches(obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) is want for path, want, value in checks)

    return matches
