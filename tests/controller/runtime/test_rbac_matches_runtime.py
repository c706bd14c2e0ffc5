"""The Role the platform renders grants exactly what the runtime declares it calls."""

from __future__ import annotations

from jobset_infra.api.rbac import ALL_RULES, NAMESPACE_RULES
from jobset_infra.controller.runtime.resources import (
    IMPLIED_PERMISSIONS,
    LEASES,
    PERMISSIONS,
)


def _granted(rules: tuple) -> set[tuple[str, str, str]]:  # type: ignore[type-arg]
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.api_groups
        for resource in rule.resources
        for verb in rule.verbs
    }


def test_every_runtime_call_is_granted() -> None:
    missing = PERMISSIONS - _granted(ALL_RULES)
    assert not missing, f"the runtime calls these but the Role does not grant them: {missing}"


def test_the_role_grants_nothing_the_runtime_does_not_use() -> None:
    unused = _granted(ALL_RULES) - PERMISSIONS - IMPLIED_PERMISSIONS
    assert not unused, f"the Role grants these but the runtime never calls them: {sorted(unused)}"


def test_leases_are_granted_only_in_the_controller_namespace() -> None:
    lease_perms = {p for p in PERMISSIONS if p[1] == LEASES.plural}
    assert lease_perms <= _granted(NAMESPACE_RULES)
