"""The Kueue layer of `explain`: a JobSet's Workload, its quota and who holds it (pure).

`workload_summary` reads the Workload, its LocalQueue and ClusterQueue and the Workloads of that
ClusterQueue, as the API server returns them (Kueue v1beta2), into plain data: quota reserved,
admitted, flavors, admission checks, and per flavor the quota asked, nominal and in use;
`quota_fixes` says what would let it in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset_infra.explain.objects import Obj, is_true

__all__ = ["quota_fixes", "workload_summary"]


def workload_summary(workload: Obj | None, local_queue: Obj | None, cluster_queue: Obj | None,
                     workloads: Sequence[Obj]) -> Obj | None:
    """Return the Workload as `explain` reports it (None without one)."""
    if workload is None:
        return None
    meta, spec = workload.get("metadata") or {}, workload.get("spec") or {}
    status = workload.get("status") or {}
    cq_name = ((local_queue or {}).get("spec") or {}).get("clusterQueue")
    flavors = sorted({f for ps in (status.get("admission") or {}).get("podSetAssignments") or ()
                      for f in (ps.get("flavors") or {}).values()})
    return {
        "name": f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        "queue": spec.get("queueName"),
        "clusterQueue": cq_name,
        "quotaReserved": is_true(workload, "QuotaReserved"),
        "admitted": is_true(workload, "Admitted"),
        "flavors": flavors,
        "admissionChecks": [
            {"name": a.get("name"), "state": a.get("state"), "message": a.get("message", "")}
            for a in status.get("admissionChecks") or ()],
        "quota": _quota(workload, cluster_queue),
        "admittedInQueue": _admitted_in_queue(workload, workloads, cq_name),
    }


def quota_fixes(wl: Mapping[str, Any]) -> list[str]:
    """Return what would let the Workload (`workload_summary`'s form) in, in words."""
    fixes = []
    queue = wl.get("clusterQueue") or "its ClusterQueue"
    for flavor, quota in (wl.get("quota") or {}).items():
        asked, nominal, used = quota["requested"], quota["nominal"], quota["used"]
        if asked > nominal:
            fixes.append(f"it asks {asked} {quota['resource']} but {queue}'s nominalQuota of "
                         f"flavor {flavor} is {nominal}: ask for at most {nominal}, or raise "
                         "the quota (add slices)")
        elif asked > nominal - used:
            holders = ", ".join(wl.get("admittedInQueue") or ()) or "other workloads"
            fixes.append(f"{used} of {nominal} {quota['resource']} of flavor {flavor} are in "
                         f"use by {holders}: wait for them to finish, or preempt them with a "
                         "higher WorkloadPriorityClass")
    return fixes or [f"see {queue}'s status and the Workload's conditions"]


def _quota(workload: Obj, cluster_queue: Obj | None) -> dict[str, dict[str, Any]]:
    """flavor -> requested, nominal and used of each resource the Workload asks for."""
    requested = _requested(workload)
    out: dict[str, dict[str, Any]] = {}
    spec = (cluster_queue or {}).get("spec") or {}
    used = _usage((cluster_queue or {}).get("status") or {})
    for group in spec.get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for resource in flavor.get("resources") or ():
                name = resource.get("name")
                if name in requested:
                    out[str(flavor.get("name"))] = {
                        "resource": name, "requested": requested[name],
                        "nominal": _count(resource.get("nominalQuota")),
                        "used": used.get((str(flavor.get("name")), str(name)), 0)}
    return out


def _requested(workload: Obj) -> dict[str, int]:
    total: dict[str, int] = {}
    for pod_set in (workload.get("spec") or {}).get("podSets") or ():
        count = int(pod_set.get("count") or 0)
        pod = ((pod_set.get("template") or {}).get("spec")) or {}
        for container in pod.get("containers") or ():
            resources = container.get("resources") or {}
            for name, qty in {**(resources.get("limits") or {}),
                              **(resources.get("requests") or {})}.items():
                total[name] = total.get(name, 0) + count * _count(qty)
    return total


def _usage(status: Obj) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for flavor in status.get("flavorsReservation") or status.get("flavorsUsage") or ():
        for resource in flavor.get("resources") or ():
            key = (str(flavor.get("name")), str(resource.get("name")))
            out[key] = _count(resource.get("total"))
    return out


def _admitted_in_queue(workload: Obj, workloads: Sequence[Obj], cq_name: str | None) -> list[str]:
    own = (workload.get("metadata") or {}).get("uid")
    out = []
    for wl in workloads:
        admission = (wl.get("status") or {}).get("admission") or {}
        meta = wl.get("metadata") or {}
        if admission.get("clusterQueue") == cq_name and meta.get("uid") != own and (
                is_true(wl, "QuotaReserved") and not is_true(wl, "Finished")):
            out.append(f"{meta.get('namespace')}/{meta.get('name')}")
    return sorted(out)


def _count(quantity: object) -> int:
    """A whole-number quantity ("32", 32, "1k"); fractions and odd forms count as 0."""
    text = str(quantity or "0")
    scale = {"k": 1000, "Ki": 1024, "M": 10**6, "Mi": 2**20, "G": 10**9, "Gi": 2**30}
    for suffix, factor in scale.items():
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(text[: -len(suffix)]) * factor
    return int(text) if text.isdigit() else 0
