"""The shape of a rule of the registry (`rules.RULES`) and the CEL helpers rules are built from.

Split from `rules` so the registry's parts (`rules`, `rules_update`) share them without
importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api.errors import FieldError
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.models import JobSet

__all__ = ["Check", "Context", "Rule", "unchanged", "when"]


@dataclass(frozen=True)
class Context:
    """What a Python check reads besides the JobSet."""

    name: str
    """The name the checks use: metadata.name, or generateName plus five characters."""
    gates: FeatureGates
    existing_pvcs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    old: JobSet | None = None


Check = Callable[[JobSet, Context], Iterable[FieldError]]


@dataclass(frozen=True)
class Rule:
    """One upstream webhook rule: CEL (`cel`, evaluated at the schema `path`) or a Python `check`.

    `path` is the CRD schema path of a CEL rule ("" the root, `[]` steps into list items) or the
    field a check reports on; `message` is the rule's one wording (a check words the variants
    it finds, e.g. with the offending value).
    """

    id: str
    path: str
    message: str
    cel: str | None = None
    field_path: str | None = None
    """CEL: where the error points, relative to `path` (e.g. ".managedBy")."""
    check: Check | None = None
    on_update: bool = False
    """Python: run on update (with `Context.old`) instead of on create."""
    children: bool = False
    """A JobSet that breaks it gets children the API server refuses (a Job, pod, Service or PVC
    name, or a label value the controller writes): the controller reports it as InvalidSpec
    and creates nothing (`children_refused`)."""
    gate: Feature | None = None
    """A rule of one state of a feature gate only (the CRD is rendered for an install's gates)."""
    gate_on: bool = True
    """The state of `gate` the rule belongs to."""

    def applies(self, gates: FeatureGates) -> bool:
        """Whether the rule is part of the API with these gates."""
        return self.gate is None or gates.enabled(self.gate) is self.gate_on

    def crd_entry(self) -> dict[str, Any]:
        """The rule as an `x-kubernetes-validations` entry."""
        assert self.cel is not None
        entry: dict[str, Any] = {"rule": self.cel, "message": self.message}
        if self.field_path is not None:
            entry["fieldPath"] = self.field_path
        return entry


def when(condition: str, then: str, otherwise: str = "true") -> str:
    """`condition ? then : otherwise`: the guard form CEL engines never evaluate past.

    `!has(x) || f(x)` also holds in Kubernetes' CEL, but engines without short-circuiting
    (celpy) evaluate f(x) anyway and, inside macros, pay for the errors; a conditional is lazy.
    """
    return f"({condition} ? {then} : {otherwise})"


def unchanged(fields: Iterable[str], self_: str = "self", old: str = "oldSelf") -> str:
    """Every field as it was: both absent, or both present and equal (lazy conditionals)."""
    return " && ".join(
        when(f"has({self_}.{f})", when(f"has({old}.{f})", f"{self_}.{f} == {old}.{f}", "false"),
             f"!has({old}.{f})")
        for f in fields
    )
