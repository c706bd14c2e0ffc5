"""What the simulated server serves: resource types by (group, version, plural), and their shape.

Built-in types come from the Kubernetes API definitions of the pinned version, as
`jobset_infra.api.k8s_openapi` loads them: every group-version-kind that has a matching
`<Kind>List` is a served resource, and so are the review kinds (REVIEW_KINDS: create-only, never
stored, answered by `jobset_infra.sim.apiserver.reviews`). Only GA versions (`v1`, `v2`) are
served, because a real API server enables alpha and beta APIs only on request. The definitions
carry no plural names or scopes, so those follow Kubernetes' own pluralisation rule with its one
built-in exception, and a table of the cluster-scoped kinds below (checked against the official
client's URL paths in tests/sim/test_resources.py).
Custom resources are added and removed as CustomResourceDefinitions come and go.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from jobset_infra.api.k8s_openapi import K8S_VERSION, definitions

KUBERNETES_VERSION = f"{K8S_VERSION}.0"


@dataclass(frozen=True, slots=True)
class GVR:
    """A resource type as URLs name it: group ("" for core), version, plural resource name."""

    group: str
    version: str
    resource: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """Everything the server needs to know to serve one resource type."""

    gvr: GVR
    kind: str
    namespaced: bool
    singular: str
    has_status: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # fields a fieldSelector may name besides metadata.name and metadata.namespace
    selectable_fields: tuple[str, ...] = ()
    # for CRDs: the stored CustomResourceDefinition (printer columns, schema)
    crd: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    # for CRDs: x-kubernetes-list-type map lists by field name -> their list-map-keys
    list_keys: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # a review kind: only POST, answered without storing anything
    create_only: bool = False

    @property
    def keys(self) -> dict[str, list[str]] | None:
        """`list_keys` as server-side apply looks them up (None for built-in kinds)."""
        return {name: list(keys) for name, keys in self.list_keys} or None

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


# Kinds of the pinned version that are cluster-scoped (everything else served is namespaced).
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "ComponentStatus", "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration",
    "CustomResourceDefinition", "APIService", "CertificateSigningRequest", "ClusterTrustBundle",
    "FlowSchema", "PriorityLevelConfiguration", "StorageVersion", "IPAddress", "IngressClass",
    "ServiceCIDR", "RuntimeClass", "ClusterRole", "ClusterRoleBinding", "DeviceClass",
    "DeviceTaintRule", "ResourceSlice", "PriorityClass", "CSIDriver", "CSINode", "StorageClass",
    "VolumeAttachment", "VolumeAttributesClass", "StorageVersionMigration",
    "TokenReview", "SelfSubjectReview", "SubjectAccessReview", "SelfSubjectAccessReview",
})

# The review kinds served (they have no List kind): what kube-apiserver 1.37 lists in discovery
# for authentication.k8s.io/v1 and authorization.k8s.io/v1, less SelfSubjectRulesReview.
REVIEW_KINDS = frozenset({
    ("authentication.k8s.io", "v1", "TokenReview"),
    ("authentication.k8s.io", "v1", "SelfSubjectReview"),
    ("authorization.k8s.io", "v1", "SubjectAccessReview"),
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
})

# Short names and categories kubectl users type (`kubectl get po`, `kubectl get all`).
SHORT_NAMES: dict[str, tuple[str, ...]] = {
    "pods": ("po",), "services": ("svc",), "nodes": ("no",), "namespaces": ("ns",),
    "events": ("ev",), "configmaps": ("cm",), "serviceaccounts": ("sa",),
    "deployments": ("deploy",), "replicasets": ("rs",), "statefulsets": ("sts",),
    "daemonsets": ("ds",), "cronjobs": ("cj",), "customresourcedefinitions": ("crd", "crds"),
    "ingresses": ("ing",), "networkpolicies": ("netpol",), "persistentvolumeclaims": ("pvc",),
    "persistentvolumes": ("pv",), "endpoints": ("ep",), "limitranges": ("limits",),
    "resourcequotas": ("quota",), "replicationcontrollers": ("rc",),
    "horizontalpodautoscalers": ("hpa",), "poddisruptionbudgets": ("pdb",),
    "storageclasses": ("sc",), "certificatesigningrequests": ("csr",), "priorityclasses": ("pc",),
}
ALL_CATEGORY = frozenset({
    "pods", "services", "deployments", "replicasets", "statefulsets", "daemonsets", "jobs",
    "cronjobs", "replicationcontrollers", "horizontalpodautoscalers",
})

# Field selectors Kubernetes supports per resource, beyond metadata.name and metadata.namespace.
SELECTABLE: dict[str, tuple[str, ...]] = {
    "pods": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
             "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
             "status.nominatedNodeName"),
    "events": ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
               "involvedObject.uid", "involvedObject.apiVersion",
               "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
               "reportingComponent", "source", "type"),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
    "jobs": ("status.successful",),
    "replicasets": ("status.replicas",),
}


def plural_of(kind: str) -> str:
    """Kubernetes' pluralisation (meta.UnsafeGuessKindToResource), with its built-in exception."""
    lower = kind.lower()
    if lower == "endpoints":
        return lower
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


@cache
def builtin_resources() -> tuple[ResourceInfo, ...]:
    """The GA built-in resources of the pinned Kubernetes version."""
    kinds: dict[tuple[str, str, str], dict[str, Any]] = {}
    for schema in definitions().values():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            kinds[(gvk["group"], gvk["version"], gvk["kind"])] = schema
    out = []
    for (group, version, kind), schema in sorted(kinds.items()):
        review = (group, version, kind) in REVIEW_KINDS
        if ((group, version, kind + "List") not in kinds and not review) or kind == "APIGroup":
            continue
        if not re.fullmatch(r"v\d+", version):
            continue
        plural = plural_of(kind)
        out.append(ResourceInfo(
            gvr=GVR(group, version, plural),
            kind=kind,
            namespaced=kind not in CLUSTER_SCOPED,
            singular=kind.lower(),
            has_status="status" in schema.get("properties", {}) and not review,
            short_names=SHORT_NAMES.get(plural, ()),
            categories=("all",) if plural in ALL_CATEGORY else (),
            selectable_fields=SELECTABLE.get(plural, ()),
            create_only=review,
        ))
    return tuple(out)


class Registry:
    """The resource types currently served, looked up by GVR or by (apiVersion, kind)."""

    def __init__(self, infos: tuple[ResourceInfo, ...] = ()) -> None:
        self._by_gvr: dict[GVR, ResourceInfo] = {}
        self._by_kind: dict[tuple[str, str], ResourceInfo] = {}
        for info in infos:
            self.add(info)

    def add(self, info: ResourceInfo) -> None:
        self._by_gvr[info.gvr] = info
        self._by_kind[(info.gvr.api_version, info.kind)] = info

    def remove(self, gvr: GVR) -> None:
        info = self._by_gvr.pop(gvr, None)
        if info is not None:
            self._by_kind.pop((gvr.api_version, info.kind), None)

    def get(self, gvr: GVR) -> ResourceInfo | None:
        return self._by_gvr.get(gvr)

    def by_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        return self._by_kind.get((api_version, kind))

    def all(self) -> list[ResourceInfo]:
        return list(self._by_gvr.values())

    def groups(self) -> dict[str, list[str]]:
        """Group name -> served versions, core group under ""."""
        out: dict[str, list[str]] = {}
        for gvr in self._by_gvr:
            versions = out.setdefault(gvr.group, [])
            if gvr.version not in versions:
                versions.append(gvr.version)
        return out
