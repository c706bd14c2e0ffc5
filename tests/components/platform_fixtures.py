"""Builders shared by the JobSetSystem and Kueue component tests."""

from __future__ import annotations

import pulumi_kubernetes as k8s

from jobset_infra.plan.offline import Registration

IMAGE = "us-west4-docker.pkg.dev/p/jobset-infra/jobset-controller:0.1.0"
K8S = "kubernetes:"


def provider() -> k8s.Provider:
    """An explicit provider, as GkeCluster.provider would be."""
    return k8s.Provider("cluster", kubeconfig="apiVersion: v1\nkind: Config\n")


def kind_of(registration: Registration) -> str:
    """Return `Kind` of a kubernetes:<group/version>:<Kind> registration."""
    return registration.type.rsplit(":", 1)[-1]
