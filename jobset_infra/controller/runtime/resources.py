"""Every API resource the runtime talks to, and the (group, resource, verb) calls it may make.

`PERMISSIONS` is read from the controller's RBAC rules (`jobset_infra.api.rbac`, their one
declaration): the client enforces it at call time (an undeclared call is a programming error,
raised before any HTTP), so the Role the platform renders and the calls the runtime may make
cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from jobset_infra.api import constants as c
from jobset_infra.api.rbac import called_permissions


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path; `namespace=None` on a namespaced resource means all namespaces."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [root]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def rbac_resource(self, subresource: str | None = None) -> str:
        return f"{self.plural}/{subresource}" if subresource else self.plural


JOBSETS = Resource(c.GROUP, c.VERSION, c.PLURAL, c.KIND)
JOBS = Resource("batch", "v1", "jobs", "Job")
SERVICES = Resource("", "v1", "services", "Service")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
PVCS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
PODS = Resource("", "v1", "pods", "Pod")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
# Kueue's Workload: what `explain` reads and a stack's pool-change drain deactivates.
WORKLOADS = Resource(c.KUEUE_GROUP, c.KUEUE_API_VERSION.rpartition("/")[2], "workloads",
                     "Workload")
CORE_EVENTS = Resource("", "v1", "events", "Event")
TOKEN_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)

# (api group, resource[/subresource], verb) the runtime may call: the RBAC rules it is granted.
PERMISSIONS: frozenset[tuple[str, str, str]] = called_permissions()


def permission(
    resource: Resource, verb: str, subresource: str | None = None
) -> tuple[str, str, str]:
    return (resource.group, resource.rbac_resource(subresource), verb)
