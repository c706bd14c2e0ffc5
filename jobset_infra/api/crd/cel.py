"""CEL `x-kubernetes-validations` rules, evaluated with cel-python (celpy) like the kube-apiserver.

A `Rule` is compiled once per distinct rule text (cached) and evaluated with `self` (and
`oldSelf` for transition rules) bound to JSON values. Kubernetes' CEL extension functions that
CRD rules commonly use (strings, lists) are provided on top of celpy's standard library.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from jobset_infra.api.crd.cel_parser import install_deferred_parser, known, parsed
from jobset_infra.api.errors import FieldError, child, show_value

_OLD_SELF: Final = re.compile(r"\boldSelf\b")
_FIELD_PATH_PART: Final = re.compile(
    r"\.([A-Za-z_][A-Za-z0-9_]*)|\[['\"]([^'\"]*)['\"]\]|\[(\d+)\]"
)
_REASON_FORMATS: Final = {
    "FieldValueInvalid": "Invalid value: {value}{message}",
    "FieldValueForbidden": "Forbidden: {message}",
    "FieldValueRequired": "Required value: {message}",
    "FieldValueDuplicate": "Duplicate value: {value_only}",
}


# celpy's wording of a runtime error -> cel-go's (the apiserver's), checked in order.
_CEL_GO_WORDS: Final = (
    (re.compile(r"overflow", re.I), "integer overflow"),
    (re.compile(r"divi\w* by zero|ZeroDivision", re.I), "division by zero"),
    (re.compile(r"modul\w* by zero", re.I), "modulus by zero"),
    (re.compile(r"index out of range|IndexError|list index", re.I), "index out of bounds"),
    (re.compile(r"overload|<class|TypeError|unsupported operand", re.I), "no such overload"),
)
_NO_SUCH_KEY: Final = re.compile(r"no such (?:key|member)[^']*'([^']+)'", re.I)


def _innermost(error: BaseException) -> BaseException:
    """celpy wraps an operand's error in the operator's ("no matching overload for _&&_
    applied to (CELEvalError(...), ...)"); the operand's is the cause CEL reports."""
    for arg in error.args:
        nested = arg if isinstance(arg, BaseException) else next(
            (a for a in arg if isinstance(a, BaseException)), None) if isinstance(
            arg, tuple) else None
        if nested is not None:
            return _innermost(nested)
    return error


def _cause(error: BaseException) -> str:
    """A runtime error as cel-go words it, never celpy's internals (class names, tuples)."""
    inner = _innermost(error)
    text = " ".join(map(str, inner.args)) if isinstance(inner, CELEvalError) else str(inner)
    if isinstance(inner, KeyError) or (key := _NO_SUCH_KEY.search(text)):
        name = key.group(1) if not isinstance(inner, KeyError) and key else str(inner).strip("'")
        return f"no such key: {name}"
    return next((words for pattern, words in _CEL_GO_WORDS if pattern.search(text)),
                "no such overload")


class RuleCompileError(ValueError):
    """A rule that does not compile (syntax error)."""


def _lower_ascii(s: Any) -> Any:
    return celtypes.StringType(str(s).lower())


def _upper_ascii(s: Any) -> Any:
    return celtypes.StringType(str(s).upper())


def _trim(s: Any) -> Any:
    return celtypes.StringType(str(s).strip())


def _join(items: Any, sep: Any = "") -> Any:
    return celtypes.StringType(str(sep).join(str(i) for i in items))


def _split(s: Any, sep: Any) -> Any:
    return celtypes.ListType([celtypes.StringType(p) for p in str(s).split(str(sep))])


def _index_of(s: Any, sub: Any) -> Any:
    return celtypes.IntType(str(s).find(str(sub)))


def _replace(s: Any, old: Any, new: Any) -> Any:
    return celtypes.StringType(str(s).replace(str(old), str(new)))


def _is_sorted(items: Any) -> Any:
    values = list(items)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


def _sum(items: Any) -> Any:
    values = list(items)
    return functools.reduce(lambda a, b: a + b, values) if values else celtypes.IntType(0)


def _max(items: Any) -> Any:
    values = list(items)
    if not values:
        raise ValueError("max() of an empty list")
    return max(values)


def _min(items: Any) -> Any:
    values = list(items)
    if not values:
        raise ValueError("min() of an empty list")
    return min(values)


def _find(s: Any, pattern: Any) -> Any:
    found = re.search(str(pattern), str(s))
    return celtypes.StringType(found.group(0) if found else "")


# Kubernetes CEL library functions (subset) that celpy does not ship.
EXTENSIONS: Final[Mapping[str, Callable[..., Any]]] = {
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "trim": _trim,
    "join": _join,
    "split": _split,
    "indexOf": _index_of,
    "replace": _replace,
    "isSorted": _is_sorted,
    "sum": _sum,
    "max": _max,
    "min": _min,
    "find": _find,
}


# Built at import: celpy raises the interpreter's recursion limit when an Environment is made,
# and doing that once up front keeps it from happening in the middle of a caller's work. Its
# parser is loaded only when an expression is not among the trees an earlier run saved, and
# then from the tables on disk (cel_parser).
install_deferred_parser()
_ENVIRONMENT: Final = celpy.Environment()


def _environment() -> Any:
    return _ENVIRONMENT


@functools.cache
def compile_expression(text: str) -> Any:
    """A runnable celpy program for one CEL expression (cached by text)."""
    env = _environment()
    try:
        ast = parsed(text, env.compile)
    except Exception as exc:  # celpy raises its parser's errors
        raise RuleCompileError(f"cannot compile CEL {text!r}: {exc}") from exc
    return env.program(ast, functions=dict(EXTENSIONS))


def to_cel(value: Any) -> Any:
    """A JSON value as a celpy value."""
    return json_to_cel(value)


class Bindings:
    """The JSON values of `self` and `oldSelf`, converted to CEL values at most once."""

    def __init__(self, value: Any, old: Any) -> None:
        self._value, self._old = value, old
        self._cel: dict[str, Any] = {}

    @property
    def shown(self) -> str | None:
        """`self` as a failed rule's error shows it: scalars as values, objects and lists
        not at all (kube-apiserver 1.37 omits structured values)."""
        return None if isinstance(self._value, (dict, list)) else show_value(self._value)

    def cel_self(self) -> Any:
        """`self` as a CEL value."""
        if "self" not in self._cel:
            self._cel["self"] = to_cel(self._value)
        return self._cel["self"]

    def cel_old(self) -> Any:
        """`oldSelf` as a CEL value."""
        if "old" not in self._cel:
            self._cel["old"] = to_cel(self._old)
        return self._cel["old"]


@dataclass(frozen=True)
class Rule:
    """One x-kubernetes-validations entry."""

    rule: str
    message: str | None = None
    message_expression: str | None = None
    field_path: str | None = None
    reason: str | None = None
    optional_old_self: bool = False

    @staticmethod
    def from_schema(entry: Mapping[str, Any]) -> Rule:
        """Read a schema entry, and compile its rule unless an earlier run did: celpy builds its
        program only from the tree (no check past parsing), so a kept tree (`known`) is a rule
        that compiles, compiled when it is first evaluated."""
        rule = Rule(
            rule=str(entry["rule"]),
            message=entry.get("message"),
            message_expression=entry.get("messageExpression"),
            field_path=entry.get("fieldPath"),
            reason=entry.get("reason"),
            optional_old_self=bool(entry.get("optionalOldSelf", False)),
        )
        if not known(rule.rule):
            compile_expression(rule.rule)
        return rule

    @property
    def is_transition(self) -> bool:
        """True when the rule reads oldSelf (evaluated only on update with an old value)."""
        return bool(_OLD_SELF.search(self.rule))

    def evaluate(self, value: Any, old: Any, path: str, type_name: str) -> FieldError | None:
        """None when the rule holds; otherwise the error the apiserver reports."""
        return self.evaluate_bound(Bindings(value, old), path, type_name)

    def evaluate_bound(self, bindings: Bindings, path: str, type_name: str) -> FieldError | None:
        """`evaluate` with `self`/`oldSelf` converted once per node and shared by its rules."""
        activation: dict[str, Any] = {}
        try:
            activation["self"] = bindings.cel_self()
            if self.is_transition:
                activation["oldSelf"] = bindings.cel_old()
            result = compile_expression(self.rule).evaluate(activation)
        except Exception as exc:  # celpy raises CELEvalError and Python errors alike
            return self._error(path, f'"{type_name}"', f"{_cause(exc)} evaluating rule: "
                               f"{self.rule}")
        if isinstance(result, CELEvalError):
            return self._error(path, f'"{type_name}"', f"{_cause(result)} evaluating rule: "
                               f"{self.rule}")
        if result is True or (isinstance(result, celtypes.BoolType) and bool(result)):
            return None
        expressed = self._expressed(activation)
        if expressed is not None:  # a messageExpression embeds the value itself if it wants
            return self._error(path, None, expressed)
        return self._error(path, bindings.shown, self.message or f"failed rule: {self.rule}")

    def _expressed(self, activation: Mapping[str, Any]) -> str | None:
        if self.message_expression:
            try:
                text = compile_expression(self.message_expression).evaluate(dict(activation))
                if isinstance(text, str) and text.strip():
                    return str(text)
            except Exception:
                pass
        return None

    def _error(self, path: str, shown: str | None, message: str) -> FieldError:
        where = append_field_path(path, self.field_path) if self.field_path else path
        template = _REASON_FORMATS.get(self.reason or "", _REASON_FORMATS["FieldValueInvalid"])
        return FieldError(where, template.format(
            value="" if shown is None else f"{shown}: ", value_only=shown or "", message=message))


def append_field_path(path: str, field_path: str) -> str:
    """`spec` + `.a['b'][0]` -> `spec.a[b][0]`."""
    for name, key, index in _FIELD_PATH_PART.findall(field_path):
        if name:
            path = child(path, name)
        elif index:
            path = child(path, int(index))
        else:
            path = f"{path}[{key}]"
    return path
