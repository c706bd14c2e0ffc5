"""Which names the API server accepts for an object: metadata.name and generateName rules.

Most kinds (custom resources included) take a DNS-1123 subdomain; Namespaces a DNS-1123 label
and Services a DNS-1035 label (their names become DNS labels). generateName is checked as a
prefix: a trailing '-' is allowed because random characters follow it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from jobset_infra.api.names import dns1035_label, dns1123_label, dns1123_subdomain
from jobset_infra.sim.apiserver.errors import field_cause

NameRule = Callable[[str], list[str]]

_RULES: Final[dict[tuple[str, str], NameRule]] = {
    ("", "Namespace"): dns1123_label,
    ("", "Service"): dns1035_label,
}


def rule_for(group: str, kind: str) -> NameRule:
    """The name check of one kind (DNS-1123 subdomain unless listed)."""
    return _RULES.get((group, kind), dns1123_subdomain)


def name_causes(group: str, kind: str, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """422 causes for metadata.generateName and metadata.name, in the API server's order."""
    rule = rule_for(group, kind)
    causes = []
    prefix = meta.get("generateName")
    if prefix:
        masked = prefix[:-1] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
        causes += [_cause("metadata.generateName", prefix, p) for p in rule(masked)]
    name = meta.get("name")
    if name:
        causes += [_cause("metadata.name", name, p) for p in rule(name)]
    return causes


# finalizers the API server knows without a domain (metav1 and core/v1's "kubernetes")


def _cause(field: str, value: str, problem: str) -> dict[str, Any]:
    return field_cause("FieldValueInvalid", field, f'Invalid value: "{value}": {problem}')
