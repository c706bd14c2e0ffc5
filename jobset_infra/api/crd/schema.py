"""A generic engine for any CRD's structural openAPIV3Schema, as the kube-apiserver applies it.

    schema = CrdSchema.from_crd(crd, "v1alpha2")
    obj, errors = schema.admit(manifest, old=None)    # prune -> default -> validate

- `prune` drops fields the schema does not know (honouring x-kubernetes-preserve-unknown-fields
  and x-kubernetes-embedded-resource; the root keeps apiVersion/kind/metadata);
- `default` applies structural defaults (recursively, also into defaulted values) and drops nulls
  of non-nullable fields without a default;
- `validate` checks types, enums, bounds, lengths, patterns, formats, required, list-type map/set
  uniqueness, and evaluates x-kubernetes-validations CEL rules (`crd_cel`), transition rules only
  on update where an old value correlates. Messages are worded like the kube-apiserver's.
Pure (no I/O); CEL programs and regexes are compiled once and cached.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, Final

from jobset_infra.api.crd.cel import Bindings, Rule, RuleCompileError
from jobset_infra.api.crd.checks import (
    RULES_NOT_CHECKED_MESSAGE,
    check_counts,
    check_list_type,
    check_type,
    check_value,
    identity,
    is_blocking,
    type_error,
    type_of,
)
from jobset_infra.api.errors import FieldError, child

__all__ = ["CrdSchema", "CrdSchemaError"]

_ROOT_KEPT: Final = frozenset({"apiVersion", "kind", "metadata"})
_MISSING: Final = object()


class CrdSchemaError(ValueError):
    """A CRD without the requested version or schema."""


class CrdSchema:
    """The openAPIV3Schema of one CRD version, ready to prune, default and validate objects."""

    def __init__(self, schema: Mapping[str, Any], *, strict: bool = False) -> None:
        """Compile every CEL rule once.

        A rule celpy cannot compile (Kubernetes CEL has extensions celpy lacks) raises
        CrdSchemaError when `strict`; otherwise it is skipped and listed in `skipped_rules`, so a
        third-party CRD is still served with everything else enforced.
        """
        self.schema = schema
        self.strict = strict
        self.skipped_rules: list[str] = []
        self._rules: dict[int, list[Rule]] = {}
        self._compile_rules(schema, "")

    @classmethod
    def from_crd(cls, crd: Mapping[str, Any], version: str, *, strict: bool = False) -> CrdSchema:
        """The schema of `version` of a CustomResourceDefinition manifest."""
        versions = (crd.get("spec") or {}).get("versions") or []
        for entry in versions:
            if entry.get("name") == version:
                schema = (entry.get("schema") or {}).get("openAPIV3Schema")
                if not isinstance(schema, Mapping):
                    raise CrdSchemaError(f"CRD version {version!r} has no openAPIV3Schema")
                return cls(schema, strict=strict)
        names = [v.get("name") for v in versions]
        raise CrdSchemaError(f"CRD has no version {version!r} (it has {names})")

    # -- prune --------------------------------------------------------------------------------

    def prune(self, obj: Any) -> Any:
        """A copy of `obj` without the fields the schema does not know."""
        return _prune(self.schema, obj, "", [], root=True)

    def pruned_fields(self, obj: Any) -> list[str]:
        """Paths of the fields `prune` would drop."""
        dropped: list[str] = []
        _prune(self.schema, obj, "", dropped, root=True)
        return dropped

    # -- default ------------------------------------------------------------------------------

    def default(self, obj: Any) -> Any:
        """A copy of `obj` with structural defaults applied."""
        out = copy.deepcopy(obj)
        _default(self.schema, out)
        return out

    # -- validate -----------------------------------------------------------------------------

    def validate(self, obj: Any, old: Any = None) -> list[FieldError]:
        """Every schema and CEL problem of `obj` (an update when `old` is given).

        As the apiserver does, CEL rules are not run on an object with a blocking schema error (a
        wrong type, missing required field, unsupported enum value, too long or too many): one
        error says so instead, rather than rules failing on values of the wrong type.
        """
        cel_errors: list[FieldError] = []
        has_old = old is not None
        errors = list(
            self._validate(self.schema, obj, old, "", cel_errors, has_old=has_old, root=True)
        )
        if self._rules and any(is_blocking(e) for e in errors):
            return [*errors, FieldError("", RULES_NOT_CHECKED_MESSAGE)]
        return errors + cel_errors

    def admit(self, obj: Any, old: Any = None) -> tuple[Any, list[FieldError]]:
        """What a create/update request does: prune, default, validate."""
        admitted = self.default(self.prune(obj))
        return admitted, self.validate(admitted, old)

    # -- internals ----------------------------------------------------------------------------

    def _compile_rules(self, schema: Any, path: str) -> None:
        if not isinstance(schema, Mapping):
            return
        rules = [
            r for e in schema.get("x-kubernetes-validations") or [] if (r := self._rule(e, path))
        ]
        if rules:
            self._rules[id(schema)] = rules
        for key, sub in (schema.get("properties") or {}).items():
            self._compile_rules(sub, child(path, key))
        self._compile_rules(schema.get("items"), f"{path}[*]")
        self._compile_rules(schema.get("additionalProperties"), f"{path}[*]")
        for key in ("allOf", "anyOf", "oneOf"):
            for sub in schema.get(key) or []:
                self._compile_rules(sub, path)

    def _rule(self, entry: Any, path: str) -> Rule | None:
        try:
            return Rule.from_schema(entry)
        except (RuleCompileError, KeyError, TypeError) as exc:
            problem = f"{path or '<root>'}: {exc}"
            if self.strict:
                raise CrdSchemaError(f"x-kubernetes-validations at {problem}") from exc
            self.skipped_rules.append(problem)
            return None

    def _validate(
        self,
        schema: Mapping[str, Any],
        value: Any,
        old: Any,
        path: str,
        cel_errors: list[FieldError],
        *,
        has_old: bool,
        root: bool = False,
    ) -> Iterator[FieldError]:
        if has_old and value == old:
            return  # validation ratcheting (GA in 1.33): an unchanged value keeps its errors
        if value is None:
            if not schema.get("nullable") and type_of(schema):
                yield type_error(path, value, type_of(schema))
            return
        type_errors = list(check_type(schema, value, path))
        if type_errors:
            yield from type_errors
            return
        yield from check_value(schema, value, path)
        if isinstance(value, dict):
            yield from self._validate_object(
                schema, value, old, path, cel_errors, has_old=has_old, root=root
            )
        elif isinstance(value, list):
            yield from self._validate_array(schema, value, old, path, cel_errors, has_old=has_old)
        bindings = Bindings(value, old)
        for rule in self._rules.get(id(schema), []):
            if rule.is_transition and not has_old:
                continue
            error = rule.evaluate_bound(bindings, path, type_of(schema) or "object")
            if error is not None:
                cel_errors.append(error)

    def _validate_object(
        self,
        schema: Mapping[str, Any],
        value: dict[str, Any],
        old: Any,
        path: str,
        cel_errors: list[FieldError],
        *,
        has_old: bool,
        root: bool,
    ) -> Iterator[FieldError]:
        for key in schema.get("required") or []:
            if key not in value:
                yield FieldError(child(path, key), "Required value")
        props = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        old_map = old if has_old and isinstance(old, dict) else {}
        for key, item in value.items():
            sub = props.get(key)
            if sub is None and isinstance(additional, Mapping):
                sub = additional
            if sub is None or (root and key == "metadata"):
                continue
            yield from self._validate(
                sub, item, old_map.get(key), child(path, key), cel_errors, has_old=key in old_map
            )
        yield from check_counts(schema, len(value), path, "properties")

    def _validate_array(
        self,
        schema: Mapping[str, Any],
        value: list[Any],
        old: Any,
        path: str,
        cel_errors: list[FieldError],
        *,
        has_old: bool,
    ) -> Iterator[FieldError]:
        yield from check_counts(schema, len(value), path, "items")
        yield from check_list_type(schema, value, path)
        items = schema.get("items")
        if not isinstance(items, Mapping):
            return
        correlate = _correlator(schema, old if has_old else None)
        for i, item in enumerate(value):
            old_item = correlate(item)
            yield from self._validate(
                items,
                item,
                None if old_item is _MISSING else old_item,
                child(path, i),
                cel_errors,
                has_old=old_item is not _MISSING,
            )


# --- prune / default ------------------------------------------------------------------------------


def _prune(schema: Any, value: Any, path: str, dropped: list[str], root: bool = False) -> Any:
    if not isinstance(schema, Mapping):
        return copy.deepcopy(value)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        keep_all = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or additional is True
        kept = _ROOT_KEPT if root or schema.get("x-kubernetes-embedded-resource") else frozenset()
        out: dict[str, Any] = {}
        for key, item in value.items():
            if root and key == "metadata":
                out[key] = copy.deepcopy(item)
            elif key in props:
                out[key] = _prune(props[key], item, child(path, key), dropped)
            elif isinstance(additional, Mapping):
                out[key] = _prune(additional, item, child(path, key), dropped)
            elif keep_all or key in kept:
                out[key] = copy.deepcopy(item)
            else:
                dropped.append(child(path, key))
        return out
    if isinstance(value, list):
        items = schema.get("items")
        return [_prune(items, v, child(path, i), dropped) for i, v in enumerate(value)]
    return value


def _default(schema: Any, value: Any) -> None:
    if not isinstance(schema, Mapping):
        return
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            absent = key not in value or (value[key] is None and not sub.get("nullable"))
            if absent and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key in list(value):
            sub = props.get(key)
            if sub is None:
                additional = schema.get("additionalProperties")
                _default(additional, value[key])
            elif value[key] is None and not sub.get("nullable"):
                del value[key]  # the apiserver drops nulls of non-nullable fields
            else:
                _default(sub, value[key])
    elif isinstance(value, list):
        for item in value:
            _default(schema.get("items"), item)


def _correlator(schema: Mapping[str, Any], old: Any) -> Any:
    """item -> the correlated old item (list-type map only) or _MISSING."""
    if schema.get("x-kubernetes-list-type") != "map" or not isinstance(old, list):
        return lambda item: _MISSING
    keys = schema.get("x-kubernetes-list-map-keys") or []
    by_key = {identity(o, keys): o for o in old if isinstance(o, dict)}
    return lambda item: by_key.get(identity(item, keys), _MISSING)
