"""What the controller caches, and how a raw object becomes its slim cached form.

JobSets are cached as manifests without managedFields (parsed to models at reconcile); Jobs as the
core's `ChildJob` plus the owner key and the placement view; Services and Nodes as a few fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.controller.core.types import ChildJob, child_job_from_manifest
from jobset_infra.placement import JobPlacementView, job_view_from_manifest

OWNER_UID_INDEX = "owner-uid"
NAMESPACE_INDEX = "namespace"


def controller_owner(meta: Mapping[str, Any]) -> tuple[str, str] | None:
    """(name, uid) of the object's controller ownerReference when it is a JobSet."""
    for ref in meta.get("ownerReferences") or ():
        if (
            isinstance(ref, Mapping)
            and ref.get("controller") is True
            and ref.get("kind") == c.KIND
            and str(ref.get("apiVersion", "")).split("/")[0] == c.GROUP
        ):
            return str(ref.get("name", "")), str(ref.get("uid", ""))
    return None


@dataclass(frozen=True, slots=True)
class CachedJob:
    child: ChildJob
    owner_key: str | None  # "<namespace>/<jobset>" of the controlling JobSet
    owner_uid: str | None
    placement: JobPlacementView | None  # only for Jobs with the exclusive-topology annotation


def cache_job(job: Mapping[str, Any]) -> CachedJob:
    meta = job.get("metadata") or {}
    owner = controller_owner(meta)
    namespace = str(meta.get("namespace", ""))
    return CachedJob(
        child=child_job_from_manifest(job),
        owner_key=f"{namespace}/{owner[0]}" if owner else None,
        owner_uid=owner[1] if owner else None,
        placement=job_view_from_manifest(job),
    )


@dataclass(frozen=True, slots=True)
class CachedService:
    namespace: str
    name: str
    owner_key: str | None


def cache_service(service: Mapping[str, Any]) -> CachedService:
    meta = service.get("metadata") or {}
    owner = controller_owner(meta)
    namespace = str(meta.get("namespace", ""))
    return CachedService(
        namespace=namespace,
        name=str(meta.get("name", "")),
        owner_key=f"{namespace}/{owner[0]}" if owner else None,
    )


@dataclass(frozen=True, slots=True)
class CachedName:
    """Only that an object exists (PersistentVolumeClaims of volumeClaimPolicies)."""

    namespace: str
    name: str


def cache_name(obj: Mapping[str, Any]) -> CachedName:
    meta = obj.get("metadata") or {}
    return CachedName(namespace=str(meta.get("namespace", "")), name=str(meta.get("name", "")))


def cache_jobset(jobset: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest without managedFields (the bulk of an object's size, never read)."""
    slim = dict(jobset)
    meta = dict(slim.get("metadata") or {})
    meta.pop("managedFields", None)
    slim["metadata"] = meta
    return slim


def jobset_uid(jobset: Mapping[str, Any]) -> str:
    return str((jobset.get("metadata") or {}).get("uid", ""))


def service_name(jobset: Mapping[str, Any]) -> str:
    """The headless Service's name: spec.network.subdomain, else the JobSet's name."""
    spec, meta = jobset.get("spec"), jobset.get("metadata")
    # A JobSet that bypassed the CRD may have any shape; it must still reach reconcile's report.
    network = spec.get("network") if isinstance(spec, Mapping) else None
    subdomain = network.get("subdomain") if isinstance(network, Mapping) else None
    return str(subdomain or (meta.get("name", "") if isinstance(meta, Mapping) else ""))


def same_but_bookkeeping(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when only resourceVersion changed (nothing a reconcile would decide on)."""
    if old.keys() != new.keys():
        return False
    for key in old:
        if key != "metadata" and old[key] != new[key]:
            return False
    old_meta = {k: v for k, v in (old.get("metadata") or {}).items() if k != "resourceVersion"}
    new_meta = {k: v for k, v in (new.get("metadata") or {}).items() if k != "resourceVersion"}
    return old_meta == new_meta
