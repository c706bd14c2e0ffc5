"""What the controller caches, and how a raw object becomes its slim cached form.

JobSets are cached as manifests without managedFields (parsed to models at reconcile); Jobs a
JobSet controls as the core's `ChildJob` plus the owner key and the placement view, every other
Job as its name and controller only (it may hold a name a child needs); Services and Nodes as a
few fields. The informers' index keys (`owner_uid`, `jobset_namespace`) and what a Job event's
cached sides say (`cached_child`, `newly_failed`) are read off these forms here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.status import JobSetStatus
from jobset_infra.controller.core.classify import job_failure
from jobset_infra.controller.core.types import ChildJob, NameHolder, child_job_from_manifest
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


@dataclass(frozen=True, slots=True)
class ForeignJob:
    """A Job no JobSet controls: kept only because it may hold a name a child Job needs."""

    namespace: str
    name: str
    controller: str  # "Kind/name" of its controller, "" when it has none
    deleting: bool


def cache_job(job: Mapping[str, Any]) -> CachedJob | ForeignJob:
    meta = job.get("metadata") or {}
    owner = controller_owner(meta)
    namespace = str(meta.get("namespace", ""))
    if owner is None:
        return ForeignJob(namespace, str(meta.get("name", "")), _controller_of(meta),
                          meta.get("deletionTimestamp") is not None)
    return CachedJob(
        child=child_job_from_manifest(job),
        owner_key=f"{namespace}/{owner[0]}" if owner else None,
        owner_uid=owner[1] if owner else None,
        placement=job_view_from_manifest(job),
    )


class TakenNames(Mapping[str, NameHolder]):
    """The Jobs of one namespace that are not one JobSet's children, by name: a read-only view
    of the Job cache for the core (`Observed.taken_names`). A lookup is O(1); iterating walks
    the whole cache (tests and logs only)."""

    def __init__(self, store: Mapping[str, CachedJob | ForeignJob], namespace: str,
                 own_uid: str) -> None:
        self._store = store
        self._namespace = namespace
        self._own_uid = own_uid

    def __getitem__(self, name: str) -> NameHolder:
        entry = self._store.get(f"{self._namespace}/{name}")
        if entry is None:
            raise KeyError(name)
        if isinstance(entry, ForeignJob):
            return NameHolder(entry.controller, entry.deleting)
        if entry.owner_uid == self._own_uid:
            raise KeyError(name)  # our own child
        owner = (entry.owner_key or "").partition("/")[2]
        return NameHolder(f"{c.KIND}/{owner}", entry.child.deletion_timestamp is not None)

    def __iter__(self) -> Iterator[str]:
        prefix = f"{self._namespace}/"
        for key in list(self._store):
            name = key[len(prefix):]
            if key.startswith(prefix) and name in self:
                yield name

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _controller_of(meta: Mapping[str, Any]) -> str:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return f"{ref.get('kind', '')}/{ref.get('name', '')}"
    return ""


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


_COUNTS = JobSetStatus.model_fields["replicated_jobs_status"].alias  # its key on the wire


def only_counts_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """True when, bookkeeping aside, only status.replicatedJobsStatus changed: the counts a pass
    wrote from the children it saw, which no later decision reads back."""
    def without_counts(obj: Mapping[str, Any]) -> dict[str, Any]:
        status = {k: v for k, v in (obj.get("status") or {}).items() if k != _COUNTS}
        return {**obj, "status": status}

    return same_but_bookkeeping(without_counts(old), without_counts(new))


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


def cached_child(entry: CachedJob | ForeignJob | None) -> CachedJob | None:
    """The entry when it is a JobSet's child Job (an informer event's old or new side)."""
    return entry if isinstance(entry, CachedJob) else None


def owner_uid(entry: CachedJob | ForeignJob) -> tuple[str, ...]:
    """The Job informer's OWNER_UID_INDEX key: its controlling JobSet's uid."""
    return (entry.owner_uid,) if isinstance(entry, CachedJob) and entry.owner_uid else ()


def jobset_namespace(jobset: dict[str, Any]) -> tuple[str, ...]:
    """The JobSet informer's NAMESPACE_INDEX key."""
    return (str((jobset.get("metadata") or {}).get("namespace", "")),)


def newly_failed(old: CachedJob | None, new: CachedJob | None) -> bool:
    """The Job started failing (FailureTarget or Failed) in this event. Successes still batch:
    thousands of Jobs completing together would otherwise cost a pass (and a status write)
    each, and nothing waits on a success the way a restart waits on a failure."""
    failing = new is not None and job_failure(new.child) is not None
    return failing and (old is None or job_failure(old.child) is None)
