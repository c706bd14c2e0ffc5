"""Register a rendered Kubernetes object (a plain manifest dict) as a Pulumi resource.

Built-in kinds become the typed pulumi-kubernetes resource (so Pulumi's await logic applies: a
Deployment is ready only when its pods are available). Custom resources become a generic
`kubernetes:<apiVersion>:<Kind>` resource holding the whole object, because some carry fields
outside `spec` (Kueue's WorkloadPriorityClass has top-level `value`), which the SDK's
`apiextensions.CustomResource` cannot send (pulumi-kubernetes#2363).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes import _utilities as k8s_utilities

__all__ = ["kubernetes_object"]

Manifest = Mapping[str, Any]

_TYPED: dict[tuple[str, str], Callable[..., pulumi.CustomResource]] = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Service"): k8s.core.v1.Service,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): k8s.rbac.v1.ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): k8s.rbac.v1.ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): (
        k8s.apiextensions.v1.CustomResourceDefinition
    ),
}


def _provider_version() -> str:
    # The plugin version typed resources pin too; the SDK helper is untyped.
    return str(k8s_utilities.get_version())  # type: ignore[no-untyped-call]


class _CustomObject(pulumi.CustomResource):
    """Any custom resource, sent to the Kubernetes provider as the whole object."""

    def __init__(self, name: str, manifest: Manifest, opts: pulumi.ResourceOptions) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(version=_provider_version())
        )
        token = f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}"
        super().__init__(token, name, dict(manifest), opts)


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def kubernetes_object(
    name: str, manifest: Manifest, opts: pulumi.ResourceOptions
) -> pulumi.CustomResource:
    """Create the resource for `manifest` under the Pulumi logical name `name`."""
    typed = _TYPED.get((manifest["apiVersion"], manifest["kind"]))
    if typed is None:
        return _CustomObject(name, manifest, opts)
    # Top-level fields become keyword arguments; nested objects keep their wire (camelCase)
    # names, which the SDK sends unchanged.
    fields = {_snake(k): v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    return typed(name, opts=opts, **fields)
