"""The controller's RBAC: exactly the declared rules, least privilege, valid objects."""

from __future__ import annotations

import pytest

from jobset_infra.api.k8s_openapi import validate_builtin
from jobset_infra.api.rbac import ALL_RULES, CLUSTER_RULES, NAMESPACE_RULES
from jobset_infra.manifests import rbac

LABELS = {"app.kubernetes.io/name": "jobset-controller"}

WANT_CLUSTER_RULES = [
    {
        "apiGroups": ["jobset.x-k8s.io"],
        "resources": ["jobsets"],
        "verbs": ["list", "watch", "delete"],
    },
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/status"], "verbs": ["update"]},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets/finalizers"], "verbs": ["update"]},
    {
        "apiGroups": ["batch"],
        "resources": ["jobs"],
        "verbs": ["list", "watch", "create", "patch", "delete"],
    },
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["patch"]},
    {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch", "create"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
    {
        "apiGroups": [""],
        "resources": ["persistentvolumeclaims"],
        "verbs": ["list", "watch", "create"],
    },
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
    {
        "apiGroups": ["authorization.k8s.io"],
        "resources": ["subjectaccessreviews"],
        "verbs": ["create"],
    },
]


def test_cluster_role_has_exactly_the_declared_rules() -> None:
    role = rbac.cluster_role("jobset-controller", LABELS)
    assert role["rules"] == WANT_CLUSTER_RULES


def test_leader_election_role_grants_its_own_lease_in_its_namespace_only() -> None:
    role = rbac.leader_election_role(
        "jobset-controller-leader-election", "jobset-system", LABELS, "my-lease"
    )
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == "jobset-system"
    assert role["rules"] == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": ["get", "update"],
            "resourceNames": ["my-lease"],
        },
        # RBAC cannot limit a create by name: the name is in the body, not the URL.
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
    ]


def test_the_metrics_reader_role_grants_get_on_metrics_only() -> None:
    role = rbac.metrics_reader_role("jobset-controller-metrics-reader", LABELS)
    assert role["kind"] == "ClusterRole"
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
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
