"""Put our JobSet system (CRD, RBAC, controller Deployment) onto the local cluster, for real.

`cluster up --controller` and the real-cluster test tiers use this: the same objects the
JobSetSystem Pulumi component creates (`manifests.jobset_system.system_objects`), applied
server-side in their order; a real node (the cluster's system node, or `--real-nodes`) then runs
the Deployment's Pods from the controller image with their ServiceAccount's token, so every
call the controller makes is authorized by the real API server against our generated RBAC.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from jobset_infra.cluster.images.spec import CONTROLLER
from jobset_infra.cluster.realnode import SYSTEM_NODE_LABEL
from jobset_infra.controller.runtime.kube import ApiError, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import Resource
from jobset_infra.controller.runtime.served import kind_served
from jobset_infra.manifests.controller_spec import ControllerInstall, parse_install
from jobset_infra.manifests.jobset_system import system_objects

FIELD_MANAGER: Final = "jobset-infra-cluster"
APPLY: Final = "application/apply-patch+yaml"
# The controller image as a real node imports it (`jobset-infra image build controller`,
# images/spec.CONTROLLER); an install that runs it pins the digest (`system_node_install`).
LOCAL_IMAGE: Final = CONTROLLER.reference

# Every kind the JobSet system consists of, and where it lives.
KINDS: Final[Mapping[str, Resource]] = {
    r.kind: r for r in (
        Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                 "CustomResourceDefinition", namespaced=False),
        Resource("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies",
                 "MutatingAdmissionPolicy", namespaced=False),
        Resource("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings",
                 "MutatingAdmissionPolicyBinding", namespaced=False),
        Resource("", "v1", "namespaces", "Namespace", namespaced=False),
        Resource("", "v1", "serviceaccounts", "ServiceAccount"),
        Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                 namespaced=False),
        Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
                 namespaced=False),
        Resource("rbac.authorization.k8s.io", "v1", "roles", "Role"),
        Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding"),
        Resource("", "v1", "configmaps", "ConfigMap"),
        Resource("", "v1", "services", "Service"),
        Resource("apps", "v1", "deployments", "Deployment"),
        Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget"),
        Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
        Resource("monitoring.coreos.com", "v1", "servicemonitors", "ServiceMonitor"),
    )
}
DEPLOYMENTS: Final = KINDS["Deployment"]
PODS: Final = Resource("", "v1", "pods", "Pod")


def local_install(**fields: object) -> ControllerInstall:
    """The controller install for the local cluster: our defaults, the local image."""
    return parse_install(**{"image": LOCAL_IMAGE, **fields})


SYSTEM_TOLERATION: Final = {"key": SYSTEM_NODE_LABEL, "operator": "Equal", "value": "true",
                            "effect": "NoSchedule"}


def system_node_placement() -> dict[str, Any]:
    """The controller's node_selector and tolerations for a cluster's system node, as a GKE
    install pinned to a tainted system pool sets them."""
    return {"node_selector": {SYSTEM_NODE_LABEL: "true"}, "tolerations": [SYSTEM_TOLERATION]}


def system_node_install(image: str, **fields: object) -> ControllerInstall:
    """The controller install for a cluster with a system node (`ClusterOptions.system_node`):
    `image` (the built image by digest), its Pods on that node (`system_node_placement`)."""
    return parse_install(**{"image": image, **system_node_placement(), **fields})


async def apply(api: KubeClient, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Server-side apply of one object, as its owner (force: we are the only writer)."""
    res = KINDS.get(manifest["kind"])
    if res is None:
        raise ValueError(f"cannot apply kind {manifest['kind']!r}: not part of the JobSet system")
    meta = manifest["metadata"]
    path = res.path(meta.get("namespace"), meta["name"])
    return await api.request("PATCH", path, body=manifest, content_type=APPLY,
                             params={"fieldManager": FIELD_MANAGER, "force": "true"})


async def apply_all(api: KubeClient, manifests: Sequence[Mapping[str, Any]]) -> None:
    for manifest in manifests:
        await apply(api, manifest)
        if manifest["kind"] == "CustomResourceDefinition":
            await until_established(api, manifest["metadata"]["name"])


async def install_jobset_system(api: KubeClient, install: ControllerInstall,
                                timeout: float = 120.0) -> None:
    """Apply every object of `install` and wait for its Deployment to be available."""
    objects = system_objects(install)
    await apply_all(api, objects.in_apply_order())
    await wait_available(api, install.namespace, install.name, timeout)


async def wait_available(api: KubeClient, namespace: str, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    status: Mapping[str, Any] = {}
    while time.monotonic() < deadline:
        try:
            status = (await api.get(DEPLOYMENTS, name, namespace)).get("status") or {}
        except NotFoundError:
            status = {}
        if any(c.get("type") == "Available" and c.get("status") == "True"
               for c in status.get("conditions") or []):
            return
        await asyncio.sleep(0.25)
    raise TimeoutError(f"Deployment {namespace}/{name} not available within {timeout:g} s: "
                       f"{await _why_pending(api, namespace)}")


async def _why_pending(api: KubeClient, namespace: str) -> str:
    """What the Deployment's Pods wait for, from their PodScheduled conditions."""
    pods = await api.list(PODS, namespace)
    reasons = sorted({
        f"{c.get('reason')}: {c.get('message')}"
        for p in pods["items"] for c in (p.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") == "False"
    })
    if reasons:
        return "; ".join(reasons)
    phases = sorted({(p.get("status") or {}).get("phase", "?") for p in pods["items"]})
    return f"its Pods are {', '.join(phases) or 'not created'}"


async def until_established(api: KubeClient, name: str, timeout: float = 30.0, *,
                            served: bool = True) -> None:
    """Wait for CRD `name` to be Established and, with `served`, to take lists and creates
    (off for kinds whose conversion webhook serves only once their controller runs: Kueue's)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            crd = await api.get(KINDS["CustomResourceDefinition"], name)
        except ApiError:
            crd = {}
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True"
               for c in conditions) and (not served or await crd_served(api, crd)):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"CRD {name} not Established and served within {timeout:g} s")


def crd_resource(crd: Mapping[str, Any]) -> Resource | None:
    """The resource a CRD serves (its first served version), or None while it names none."""
    spec = crd.get("spec") or {}
    versions = [v["name"] for v in spec.get("versions") or () if v.get("served")]
    names = spec.get("names") or {}
    plural, kind = names.get("plural"), names.get("kind")
    if not versions or not plural or not kind:
        return None
    return Resource(spec.get("group", ""), versions[0], plural, kind,
                    namespaced=spec.get("scope") == "Namespaced")


async def crd_served(api: KubeClient, crd: Mapping[str, Any]) -> bool:
    """Whether the CRD's kind takes lists and creates (`served.kind_served`)."""
    res = crd_resource(crd)
    return res is None or await kind_served(api, res)
