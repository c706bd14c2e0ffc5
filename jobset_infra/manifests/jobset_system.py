"""Every object of a JobSet install (CRD, RBAC, controller), grouped and in apply order.

The `JobSetSystem` Pulumi component creates exactly these objects, and `jobset-infra plan` shows
them; both get them from `system_objects`, so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobset_infra.api.defaulting_policy import defaulting_policy, defaulting_policy_binding
from jobset_infra.api.rbac import CLUSTER_RULES, CLUSTER_SCOPED_RULES
from jobset_infra.manifests import controller, rbac
from jobset_infra.manifests.controller_spec import ControllerInstall
from jobset_infra.manifests.crd import jobset_crd
from jobset_infra.manifests.meta import Manifest
from jobset_infra.manifests.pod_monitoring import pod_monitoring_objects

__all__ = ["SystemObjects", "leader_election_role_name", "system_objects"]


def leader_election_role_name(install: ControllerInstall) -> str:
    """Return the name of the Role (and RoleBinding) granting the leader-election Lease."""
    return f"{install.name}-leader-election"


@dataclass(frozen=True)
class SystemObjects:
    """The objects of one install, by role; `in_apply_order` lists them for a plain apply."""

    crd: Manifest
    defaulting: tuple[Manifest, ...]
    """Upstream's webhook defaults the CRD cannot express (a MutatingAdmissionPolicy and its
    binding), or nothing when the install opts out (`defaulting_policy=False`)."""
    namespace: Manifest
    service_account: Manifest
    cluster_role: Manifest
    cluster_role_binding: Manifest
    role: Manifest
    role_binding: Manifest
    network_policy: Manifest
    config_map: Manifest
    deployment: Manifest
    pod_disruption_budget: Manifest
    metrics_service: Manifest
    metrics_reader_role: Manifest
    service_monitor: Manifest | None
    pod_monitoring: tuple[Manifest, ...] = ()
    """The PodMonitoring (and its scraper identity) when the install asks for one."""
    workload_role: Manifest | None = None
    """With `controller.watchNamespace`: the workload rules as a Role in that namespace (the
    ClusterRole then holds only the cluster-scoped ones)."""
    workload_role_binding: Manifest | None = None

    def prerequisites(self) -> list[Manifest]:
        """Return what the Deployment needs first: namespace, identity, permissions, config."""
        scoped = [m for m in (self.workload_role, self.workload_role_binding) if m is not None]
        return [
            self.namespace,
            self.service_account,
            self.cluster_role,
            self.cluster_role_binding,
            *scoped,
            self.role,
            self.role_binding,
            self.network_policy,
            self.config_map,
        ]

    def after_deployment(self) -> list[Manifest]:
        """Return the objects that only describe the running controller (PDB, metrics)."""
        extra = [self.service_monitor] if self.service_monitor is not None else []
        return [self.pod_disruption_budget, self.metrics_service, self.metrics_reader_role, *extra,
                *self.pod_monitoring]

    def in_apply_order(self) -> list[Manifest]:
        """Return every object: CRD, prerequisites, Deployment, then the rest."""
        return [
            self.crd,
            *self.defaulting,
            *self.prerequisites(),
            self.deployment,
            *self.after_deployment(),
        ]


def system_objects(install: ControllerInstall) -> SystemObjects:
    """Return every object of the install described by `install` (pure)."""
    labels = controller.labels(install)
    role_name = leader_election_role_name(install)
    ns = install.namespace
    watched = install.config.controller.watch_namespace or None
    return SystemObjects(
        crd=jobset_crd(install.config.gates()),
        defaulting=(
            (defaulting_policy(), defaulting_policy_binding()) if install.defaulting_policy else ()
        ),
        namespace=controller.namespace(install),
        service_account=rbac.service_account(install.name, ns, labels),
        cluster_role=rbac.cluster_role(
            install.name, labels, CLUSTER_SCOPED_RULES if watched else CLUSTER_RULES),
        cluster_role_binding=rbac.cluster_role_binding(install.name, labels, install.name, ns),
        role=rbac.leader_election_role(
            role_name, ns, labels, install.config.leader_election.resource_name
        ),
        role_binding=rbac.leader_election_role_binding(role_name, ns, labels, install.name),
        network_policy=controller.network_policy(install),
        config_map=controller.config_map(install),
        deployment=controller.deployment(install),
        pod_disruption_budget=controller.pod_disruption_budget(install),
        metrics_service=controller.metrics_service(install),
        metrics_reader_role=rbac.metrics_reader_role(f"{install.name}-metrics-reader", labels),
        service_monitor=controller.service_monitor(install) if install.service_monitor else None,
        pod_monitoring=pod_monitoring_objects(install) if install.pod_monitoring else (),
        workload_role=rbac.workload_role(install.name, watched, labels) if watched else None,
        workload_role_binding=rbac.workload_role_binding(
            install.name, watched, labels, install.name, ns) if watched else None,
    )
