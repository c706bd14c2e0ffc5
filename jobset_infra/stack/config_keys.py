"""A stack's raw config keys as this project's values, and pydantic's errors as key lines.

Pulumi hands a program `project:key` -> string, structured values as JSON text; `own_keys`
keeps this project's known keys (decoded) and words every other key as a problem (an unknown
key, undecodable JSON, a near miss of a namespace), and `config_problems` words the config
model's validation errors, each naming its key. Split from `config` (the model and its
checks), which calls both from `load_stack_config`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from jobset_infra.stack.checks import NAMESPACE

__all__ = ["PROVIDER_NAMESPACES", "config_problems", "own_keys"]

PROVIDER_NAMESPACES = ("gcp", "kubernetes", "pulumi", "docker", "docker-build", "command")
"""Namespaces of the providers a stack may configure; a near miss of these or of ours is a typo."""


def own_keys(raw: Mapping[str, Any], fields: Collection[str]
             ) -> tuple[dict[str, Any], list[str]]:
    """Return this project's keys that are among `fields`, without the namespace, JSON values
    decoded.

    Unknown keys and undecodable values are returned as problems (and left out), so the rest
    of the config is still checked and every problem is reported in one go.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    known = ", ".join(fields)
    for key, value in raw.items():
        namespace, _, name = str(key).rpartition(":")
        if namespace and namespace != NAMESPACE:
            if near := _misspelt_namespace(namespace):
                problems.append(f"{key}: unknown config namespace {namespace!r}; did you mean "
                                f"{near}:{name}?")
            continue
        decoded = _decoded(value)
        if name not in fields:
            problems.append(f"{NAMESPACE}:{name}: unknown key; valid keys: {known}")
        elif isinstance(decoded, _Undecodable):
            problems.append(f"{NAMESPACE}:{name}: not valid JSON: {decoded.reason}")
        else:
            values[name] = decoded
    return values, problems


def _misspelt_namespace(namespace: str) -> str | None:
    """The known namespace `namespace` is a near miss of (`jobset-infr` -> `jobset-infra`)."""
    if namespace in PROVIDER_NAMESPACES:
        return None
    near = difflib.get_close_matches(namespace, [NAMESPACE, *PROVIDER_NAMESPACES], n=1,
                                     cutoff=0.8)
    return near[0] if near else None


class _Undecodable:
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _decoded(value: Any) -> Any:
    # Pulumi passes structured config as JSON text; plain strings stay strings, and pydantic
    # converts "4" or "true" where a number or a bool is wanted.
    if not isinstance(value, str) or not value.lstrip().startswith(("{", "[")):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        return _Undecodable(str(exc))


def config_problems(exc: ValidationError, root: type[BaseModel]) -> list[str]:
    """pydantic's errors of the config model `root` as `jobset-infra:key.path: message` lines;
    an unknown key's line lists the keys its model knows."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        key = f"{NAMESPACE}:{where}" if where else NAMESPACE
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown key; " + _known_keys_hint(root, error["loc"])
        elif error["type"] == "missing":
            message = "required"
        if where:
            problems.append(f"{key}: {message}")
        else:  # model-level rules name their keys themselves
            problems += [f"{NAMESPACE}:{part}" for part in message.splitlines()]
    return problems


def _known_keys_hint(root: type[BaseModel], loc: tuple[Any, ...]) -> str:
    model = root
    for part in loc[:-1]:
        annotation = model.model_fields[str(part)].annotation if isinstance(part, str) else None
        inner = _model_of(annotation)
        if inner is None:
            return "check the spelling"
        model = inner
    return "valid keys: " + ", ".join(model.model_fields)


def _model_of(annotation: Any) -> type[BaseModel] | None:
    candidates = getattr(annotation, "__args__", (annotation,))
    for candidate in candidates:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None
