"""Every API resource the runtime talks to, and every (group, resource, verb) it may use.

`PERMISSIONS` is the single declaration the client enforces at call time (an undeclared call is a
programming error, raised before any HTTP) and that tests compare with the RBAC Role the platform
renders, so the Role grants exactly what the controller uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from jobset_infra.api import constants as c


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
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
CORE_EVENTS = Resource("", "v1", "events", "Event")
TOKEN_REVIEWS = Resource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)

# (api group, resource[/subresource], verb) the runtime uses, with why.
PERMISSIONS: frozenset[tuple[str, str, str]] = frozenset(
    {
        # JobSets: informer; TTL-after-finished deletes the JobSet; status written once per pass.
        (c.GROUP, c.PLURAL, "list"),
        (c.GROUP, c.PLURAL, "watch"),
        (c.GROUP, c.PLURAL, "delete"),
        (c.GROUP, f"{c.PLURAL}/status", "update"),
        # Jobs: informer; create children; foreground-delete; suspend/resume and template edits.
        ("batch", "jobs", "list"),
        ("batch", "jobs", "watch"),
        ("batch", "jobs", "create"),
        ("batch", "jobs", "delete"),
        ("batch", "jobs", "patch"),
        # On resume, status.startTime is cleared before the template's scheduling fields change.
        ("batch", "jobs/status", "patch"),
        # Headless Service: informer (to notice deletion) and create.
        ("", "services", "list"),
        ("", "services", "watch"),
        ("", "services", "create"),
        # PersistentVolumeClaims of volumeClaimPolicies: an informer of names, and create.
        ("", "persistentvolumeclaims", "list"),
        ("", "persistentvolumeclaims", "watch"),
        ("", "persistentvolumeclaims", "create"),
        # Nodes: the placement informer (domains, readiness, allocatable).
        ("", "nodes", "list"),
        ("", "nodes", "watch"),
        # Leader election.
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
        # Events: events.k8s.io/v1, core/v1 when the group is absent; patch bumps a series.
        ("events.k8s.io", "events", "create"),
        ("events.k8s.io", "events", "patch"),
        ("", "events", "create"),
        ("", "events", "patch"),
        # Secure metrics: who scrapes /metrics is authenticated and authorized by the API server.
        ("authentication.k8s.io", "tokenreviews", "create"),
        ("authorization.k8s.io", "subjectaccessreviews", "create"),
    }
)

# Granted without a call of ours: the API server's OwnerReferencesPermissionEnforcement admission
# checks `update` on jobsets/finalizers when we create Jobs with blockOwnerDeletion=true.
IMPLIED_PERMISSIONS: frozenset[tuple[str, str, str]] = frozenset(
    {(c.GROUP, f"{c.PLURAL}/finalizers", "update")}
)


def permission(
    resource: Resource, verb: str, subresource: str | None = None
) -> tuple[str, str, str]:
    return (resource.group, resource.rbac_resource(subresource), verb)
