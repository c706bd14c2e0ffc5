"""Names and references derived from a JobSet: the job key, the subdomain and
headless Service name, the coordinator endpoint, and the controller ownerReference.
"""

from __future__ import annotations

import hashlib
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.job_names import child_job_name
from jobset_infra.api.models import JobSet

__all__ = [
    "coordinator_endpoint",
    "dns_hostnames_enabled",
    "job_key",
    "owner_reference",
    "subdomain",
]


def job_key(namespace: str, name: str) -> str:
    """Return the job-key label value: SHA1 hex of `<namespace>/<jobName>` (upstream jobHashKey)."""
    return hashlib.sha1(f"{namespace}/{name}".encode(), usedforsecurity=False).hexdigest()


def subdomain(js: JobSet) -> str:
    """Return the pod subdomain and headless Service name: network.subdomain, else the name."""
    network = js.spec.network
    return (network.subdomain if network else None) or js.name


def dns_hostnames_enabled(js: JobSet) -> bool:
    """Return whether pods get DNS hostnames (needs an explicit network.enableDNSHostnames)."""
    network = js.spec.network
    return network is not None and network.enable_dns_hostnames is True


def coordinator_endpoint(js: JobSet) -> str | None:
    """Return `<js>-<rjob>-<jobIndex>-<podIndex>.<subdomain>` when a coordinator is set."""
    coord = js.spec.coordinator
    if coord is None:
        return None
    host = child_job_name(js.name, coord.replicated_job, coord.job_index)
    return f"{host}-{coord.pod_index}.{subdomain(js)}"


def owner_reference(js: JobSet) -> dict[str, Any]:
    """Return the controller ownerReference pointing at the JobSet."""
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "name": js.name,
        "uid": js.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }
