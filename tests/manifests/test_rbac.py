"""The controller's RBAC objects: rendered from api/rbac.py, least privilege, valid objects."""

from __future__ import annotations

import pytest

from jobset_infra.api.k8s_openapi import validate_builtin
from jobset_infra.api.rbac import (
    ALL_RULES,
    CLUSTER_RULES,
    METRICS_READER_RULES,
    NAMESPACE_RULES,
    SLICE_HEALTH_RULES,
    leader_election_rules,
)
from jobset_infra.manifests import rbac

LABELS = {"app.kubernetes.io/name": "jobset-controller"}

def test_cluster_role_renders_the_declared_cluster_rules() -> None:
    # The rules themselves are compared with the calls the runtime makes, not with a copy:
    # tests/integration/test_rbac_calls.py.
    role = rbac.cluster_role("jobset-controller", LABELS)
    assert role["kind"] == "ClusterRole"
    assert role["rules"] == [rule.to_dict() for rule in CLUSTER_RULES]


def test_the_namespace_role_grants_its_own_lease_and_ledger_in_its_namespace_only() -> None:
    role = rbac.leader_election_role(
        "jobset-controller-leader-election", "jobset-system", LABELS, "my-lease"
    )
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == "jobset-system"
    expected = (*leader_election_rules("my-lease"), *SLICE_HEALTH_RULES)
    assert role["rules"] == [rule.to_dict() for rule in expected]
    named = [r for r in role["rules"] if r.get("resourceNames")]
    # get and update reach the one Lease and the one ledger ConfigMap only; RBAC cannot limit a
    # create by name (the name is in the body, not the URL), so create alone is unnamed.
    assert [(r["resources"], r["verbs"], r["resourceNames"]) for r in named] == [
        (["leases"], ["get", "update"], ["my-lease"]),
        (["configmaps"], ["get", "update"], ["jobset-slice-health"]),
    ]
    assert [r["verbs"] for r in role["rules"] if not r.get("resourceNames")] == [["create"]] * 2


def test_the_metrics_reader_role_grants_get_on_metrics_only() -> None:
    role = rbac.metrics_reader_role("jobset-controller-metrics-reader", LABELS)
    assert role["kind"] == "ClusterRole"
    assert role["rules"] == [rule.to_dict() for rule in METRICS_READER_RULES]
    assert [(r["nonResourceURLs"], r["verbs"]) for r in role["rules"]] == [(["/metrics"], ["get"])]
    assert validate_builtin(role) == []


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(rule, id=f"{rule.api_groups[0] or 'core'} {rule.resources[0]}")
        for rule in ALL_RULES
    ],
)
def test_no_rule_uses_a_wildcard(rule: rbac.PolicyRule) -> None:
    for values in (rule.api_groups, rule.resources, rule.verbs):
        assert values and "*" not in values


def test_nodes_are_read_only() -> None:
    node_rules = [rule for rule in CLUSTER_RULES if "nodes" in rule.resources]
    assert [set(rule.verbs) for rule in node_rules] == [{"list", "watch"}]


def test_leases_are_never_granted_cluster_wide() -> None:
    assert all("leases" not in rule.resources for rule in CLUSTER_RULES)
    assert any("leases" in rule.resources for rule in NAMESPACE_RULES)


def test_bindings_point_at_the_roles_and_the_service_account() -> None:
    crb = rbac.cluster_role_binding("jobset-controller", LABELS, "jobset-controller", "ns1")
    rb = rbac.leader_election_role_binding("le", "ns1", LABELS, "jobset-controller")
    assert crb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "jobset-controller",
    }
    assert rb["roleRef"]["kind"] == "Role" and rb["roleRef"]["name"] == "le"
    want_subjects = [{"kind": "ServiceAccount", "name": "jobset-controller", "namespace": "ns1"}]
    assert crb["subjects"] == rb["subjects"] == want_subjects


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param(rbac.service_account("sa", "ns1", LABELS), id="service account"),
        pytest.param(rbac.cluster_role("cr", LABELS), id="cluster role"),
        pytest.param(rbac.cluster_role_binding("cr", LABELS, "sa", "n"), id="cluster role binding"),
        pytest.param(rbac.leader_election_role("r", "ns1", LABELS, "lease"), id="role"),
        pytest.param(rbac.leader_election_role_binding("r", "n", LABELS, "sa"), id="role binding"),
    ],
)
def test_rbac_objects_validate_against_the_pinned_kubernetes_schema(manifest: dict) -> None:
    assert validate_builtin(manifest) == []
