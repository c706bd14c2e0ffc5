"""The controller's permissions: the one declaration of every API call it is allowed to make.

Both readers take them from here: the ClusterRole and the namespaced Role in
`jobset_infra.manifests.rbac` are rendered from these rules, and the runtime's client refuses,
before any HTTP, a call that `called_permissions()` does not list
(`jobset_infra.controller.runtime.kube`). tests/integration/test_rbac_calls.py drives the
controller through every behaviour and compares the calls it really made with these rules, so a
verb the controller stops using shows up there. There are no wildcards: each rule names its API
group, resources and verbs.

Compared with upstream `config/components/rbac/role.yaml` (reference jobset-upstream.md §2.17) the
controller needs less: Pods only listed and watched, for in-place restart (placement assigns
node pools through a nodeSelector, there is no pod webhook to repair), no webhook
configurations (there are no webhooks, so no cert injection),
PersistentVolumeClaims only listed, watched and created (volumeClaimPolicies; never read one by
one), and Leases are granted in the controller's own namespace only, get/update of the
controller's one Lease by name. TokenReviews and SubjectAccessReviews are created to check who
scrapes the secure /metrics, as controller-runtime's metrics filters do; scrapers themselves
get `METRICS_READER_RULES` (upstream's `metrics-reader` ClusterRole).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobset_infra.api.constants import GROUP, LEADER_ELECTION_ID
from jobset_infra.api.resilience import LEDGER_CONFIGMAP

__all__ = [
    "ALL_RULES",
    "CLUSTER_RULES",
    "CLUSTER_SCOPED_RULES",
    "COREDNS_RULES",
    "IN_PLACE_RESTART_AGENT_RULES",
    "METRICS_READER_RULES",
    "NAMESPACE_RULES",
    "SLICE_HEALTH_RULES",
    "WORKLOAD_RULES",
    "PolicyRule",
    "called_permissions",
    "leader_election_rules",
    "scraper_token_rules",
]

_CORE_GROUP = ""
_BATCH_GROUP = "batch"
_JOBSET_GROUP = GROUP
_EVENTS_GROUP = "events.k8s.io"
_COORDINATION_GROUP = "coordination.k8s.io"
_AUTHENTICATION_GROUP = "authentication.k8s.io"
_AUTHORIZATION_GROUP = "authorization.k8s.io"


@dataclass(frozen=True)
class PolicyRule:
    """One RBAC rule: these verbs on these resources of these API groups."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()
    """Only these objects (RBAC cannot name the object of a create: it is in the body)."""
    non_resource_urls: tuple[str, ...] = ()
    """A rule on URLs such as /metrics instead of API resources (api_groups and resources empty)."""
    called: bool = True
    """False for a grant the API server checks on our behalf; the controller never calls it."""

    def permissions(self) -> frozenset[tuple[str, str, str]]:
        """Return every (api group, resource, verb) the rule grants."""
        return frozenset(
            (g, r, v) for g in self.api_groups for r in self.resources for v in self.verbs
        )

    def to_dict(self) -> dict[str, list[str]]:
        """Return the rule as a Kubernetes `rbac.authorization.k8s.io/v1` PolicyRule."""
        if self.non_resource_urls:
            return {"nonResourceURLs": list(self.non_resource_urls), "verbs": list(self.verbs)}
        rule = {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }
        if self.resource_names:
            rule["resourceNames"] = list(self.resource_names)
        return rule


WORKLOAD_RULES: tuple[PolicyRule, ...] = (
    # Reads come from list+watch informers, so no rule grants `get` on a watched kind.
    # JobSets: the informer; `delete` for ttlSecondsAfterFinished; `create` only with dryRun:
    # the controller is ready once the API server takes a JobSet create (runtime/served.py).
    PolicyRule((_JOBSET_GROUP,), ("jobsets",), ("list", "watch", "create", "delete")),
    # Status is written once per reconcile: PUT on the status subresource.
    PolicyRule((_JOBSET_GROUP,), ("jobsets/status",), ("update",)),
    # Child Jobs carry an ownerReference to their JobSet with blockOwnerDeletion=true; clusters
    # running the OwnerReferencesPermissionEnforcement admission plugin require this verb for it.
    PolicyRule((_JOBSET_GROUP,), ("jobsets/finalizers",), ("update",), called=False),
    # Child Jobs: created, suspended/resumed and edited by merge PATCH, deleted on restart (a
    # large JobSet's previous attempt in one deletecollection: core/previous_attempts.py).
    PolicyRule((_BATCH_GROUP,), ("jobs",),
               ("list", "watch", "create", "patch", "delete", "deletecollection")),
    # On resume the controller clears a child Job's status.startTime, as upstream does.
    PolicyRule((_BATCH_GROUP,), ("jobs/status",), ("patch",)),
    # The headless Service for pod DNS; removed by garbage collection through its ownerReference.
    PolicyRule((_CORE_GROUP,), ("services",), ("list", "watch", "create")),
    # With the InPlaceRestart gate, the JobSets' Pods are watched for their agents' attempts
    # (KEP-467); read only, never written (upstream also updates, patches and deletes Pods).
    PolicyRule((_CORE_GROUP,), ("pods",), ("list", "watch")),
    # volumeClaimPolicies: PVC names are cached (list/watch) and missing PVCs created.
    PolicyRule((_CORE_GROUP,), ("persistentvolumeclaims",), ("list", "watch", "create")),
    # Events in both APIs: events.k8s.io when served, core v1 otherwise; patch bumps a series.
    PolicyRule((_EVENTS_GROUP,), ("events",), ("create", "patch")),
    PolicyRule((_CORE_GROUP,), ("events",), ("create", "patch")),
)
"""Rules on the namespaced objects the controller manages: cluster-wide by default, or a Role in
the one namespace the controller watches (`controller.watchNamespace`)."""

CLUSTER_SCOPED_RULES: tuple[PolicyRule, ...] = (
    # Nodes are watched to learn the topology domains (node pools) for exclusive placement.
    PolicyRule((_CORE_GROUP,), ("nodes",), ("list", "watch")),
    # Secure metrics: each scraper's token is reviewed and its access to /metrics checked.
    PolicyRule((_AUTHENTICATION_GROUP,), ("tokenreviews",), ("create",)),
    PolicyRule((_AUTHORIZATION_GROUP,), ("subjectaccessreviews",), ("create",)),
)
"""Rules on cluster-scoped resources: always in the ClusterRole."""

CLUSTER_RULES: tuple[PolicyRule, ...] = WORKLOAD_RULES + CLUSTER_SCOPED_RULES
"""Every rule of an install that watches all namespaces: one ClusterRole and its binding."""


def leader_election_rules(lease_name: str = LEADER_ELECTION_ID) -> tuple[PolicyRule, ...]:
    """Leader election, in the controller's own namespace (a Role, not cluster-wide): get and
    update of its one Lease by name; create cannot be limited by name, so it is granted for
    Leases of that namespace, which holds nothing but the controller."""
    return (
        PolicyRule((_COORDINATION_GROUP,), ("leases",), ("get", "update"),
                   resource_names=(lease_name,)),
        PolicyRule((_COORDINATION_GROUP,), ("leases",), ("create",)),
    )


SLICE_HEALTH_RULES: tuple[PolicyRule, ...] = (
    # The slice-health ledger: failures recorded against node pools, kept by the leader in one
    # ConfigMap of its namespace so a restarted controller or a new leader still knows them.
    PolicyRule((_CORE_GROUP,), ("configmaps",), ("get", "update"),
               resource_names=(LEDGER_CONFIGMAP,)),
    PolicyRule((_CORE_GROUP,), ("configmaps",), ("create",)),
)
"""The slice-health ledger's ConfigMap, in the controller's namespace (beside its Lease)."""

NAMESPACE_RULES: tuple[PolicyRule, ...] = leader_election_rules() + SLICE_HEALTH_RULES
"""Rules granted only in the controller's namespace, for the default Lease name."""

METRICS_READER_RULES: tuple[PolicyRule, ...] = (
    PolicyRule((), (), ("get",), non_resource_urls=("/metrics",)),
)
"""What a scraper (Prometheus' ServiceAccount) needs to be bound to, to read /metrics."""

COREDNS_RULES: tuple[PolicyRule, ...] = (
    PolicyRule((_CORE_GROUP,), ("endpoints", "services", "pods", "namespaces"),
               ("list", "watch"), called=False),
    PolicyRule(("discovery.k8s.io",), ("endpointslices",), ("list", "watch"), called=False),
)
"""What CoreDNS's kubernetes plugin reads (as kubeadm grants it), on the local cluster's real
nodes (`cluster.realnode`); not the controller's."""


def scraper_token_rules(secret: str) -> tuple[PolicyRule, ...]:
    """What GKE Managed Prometheus' collector needs to read the metrics scraper's token Secret
    that a PodMonitoring's `authorization` names (that one Secret, in its namespace)."""
    return (PolicyRule((_CORE_GROUP,), ("secrets",), ("get", "list", "watch"),
                       resource_names=(secret,), called=False),)


IN_PLACE_RESTART_AGENT_RULES: tuple[PolicyRule, ...] = (
    # upstream's in-place restart agent (KEP-467) in each worker Pod, granted in its namespace:
    # it server-side-applies its attempt annotation to its own Pod, and watches its JobSet.
    PolicyRule((_CORE_GROUP,), ("pods",), ("patch",), called=False),
    PolicyRule((_JOBSET_GROUP,), ("jobsets",), ("get", "list", "watch"), called=False),
)
"""Not the controller's: what the Pods of an InPlaceRestart JobSet need for the agent
(`manifests.in_place_restart`); `called=False`, the controller never makes these calls."""

ALL_RULES: tuple[PolicyRule, ...] = CLUSTER_RULES + NAMESPACE_RULES
"""Every permission the controller holds, cluster-wide and namespaced."""


def called_permissions(
    rules: tuple[PolicyRule, ...] = ALL_RULES,
) -> frozenset[tuple[str, str, str]]:
    """Return the (api group, resource, verb) calls the rules allow the controller to make."""
    return frozenset().union(*(rule.permissions() for rule in rules if rule.called))
