"""ServiceAccount, ClusterRole/Binding and Role/RoleBinding of the controller.

The rules come only from `jobset_infra.api.rbac`, the one declared list of the controller's
permissions; nothing here adds a verb.
"""

from __future__ import annotations

from collections.abc import Iterable

from jobset_infra.api.rbac import (
    CLUSTER_RULES,
    METRICS_READER_RULES,
    SLICE_HEALTH_RULES,
    WORKLOAD_RULES,
    PolicyRule,
    leader_election_rules,
)
from jobset_infra.manifests.meta import Manifest, object_meta

__all__ = [
    "cluster_role",
    "cluster_role_binding",
    "leader_election_role",
    "leader_election_role_binding",
    "metrics_reader_role",
    "service_account",
    "workload_role",
    "workload_role_binding",
]

RBAC_API = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"


def service_account(name: str, namespace: str, labels: dict[str, str]) -> Manifest:
    """Return the controller's ServiceAccount; its token is mounted (it calls the API)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": object_meta(name, labels, namespace),
        "automountServiceAccountToken": True,
    }


def _rules(rules: Iterable[PolicyRule]) -> list[dict[str, list[str]]]:
    return [rule.to_dict() for rule in rules]


def _subjects(service_account_name: str, namespace: str) -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": service_account_name, "namespace": namespace}]


def cluster_role(
    name: str, labels: dict[str, str], rules: tuple[PolicyRule, ...] = CLUSTER_RULES
) -> Manifest:
    """Return the ClusterRole holding `rules` (`api.rbac.CLUSTER_RULES`, or only the
    cluster-scoped ones when the workload rules are a Role of the watched namespace)."""
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRole",
        "metadata": object_meta(name, labels),
        "rules": _rules(rules),
    }


def workload_role(name: str, namespace: str, labels: dict[str, str]) -> Manifest:
    """Return the Role holding `api.rbac.WORKLOAD_RULES` in the one watched namespace."""
    return {
        "apiVersion": RBAC_API,
        "kind": "Role",
        "metadata": object_meta(name, labels, namespace),
        "rules": _rules(WORKLOAD_RULES),
    }


def workload_role_binding(
    name: str, namespace: str, labels: dict[str, str], service_account_name: str,
    service_account_namespace: str,
) -> Manifest:
    """Return the RoleBinding, in the watched namespace, of the workload Role to the
    controller's account (which lives in the install namespace)."""
    return {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding",
        "metadata": object_meta(name, labels, namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": _subjects(service_account_name, service_account_namespace),
    }


def cluster_role_binding(
    name: str, labels: dict[str, str], service_account_name: str, namespace: str
) -> Manifest:
    """Return the ClusterRoleBinding of the ClusterRole `name` to the controller's account."""
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRoleBinding",
        "metadata": object_meta(name, labels),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
        "subjects": _subjects(service_account_name, namespace),
    }


def leader_election_role(
    name: str, namespace: str, labels: dict[str, str], lease_name: str
) -> Manifest:
    """Return the Role of the controller's namespace: `api.rbac.leader_election_rules` for the
    Lease `lease_name` and the slice-health ledger's ConfigMap (`SLICE_HEALTH_RULES`)."""
    return {
        "apiVersion": RBAC_API,
        "kind": "Role",
        "metadata": object_meta(name, labels, namespace),
        "rules": _rules(leader_election_rules(lease_name) + SLICE_HEALTH_RULES),
    }


def metrics_reader_role(name: str, labels: dict[str, str]) -> Manifest:
    """Return the ClusterRole to bind a scraper's ServiceAccount to (GET /metrics)."""
    return {
        "apiVersion": RBAC_API,
        "kind": "ClusterRole",
        "metadata": object_meta(name, labels),
        "rules": _rules(METRICS_READER_RULES),
    }


def leader_election_role_binding(
    name: str, namespace: str, labels: dict[str, str], service_account_name: str
) -> Manifest:
    """Return the RoleBinding of the Role `name` to the controller's account."""
    return {
        "apiVersion": RBAC_API,
        "kind": "RoleBinding",
        "metadata": object_meta(name, labels, namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
        "subjects": _subjects(service_account_name, namespace),
    }
