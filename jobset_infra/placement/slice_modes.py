"""Does a JobSet ask for the placement its stack gives, and could its slices ever be placed?

Pure; for preview (the JobSet component) and `jobset-infra validate --stack`, which report the
same sentences. A JobSet's TPU slices are placed by exactly one mechanism (`tpu.placer.Placer`):
our controller (the exclusive-topology annotation) or Kueue's Topology-Aware Scheduling (slice
topology annotations on the pod templates, admitted through a queue whose flavors name a
Topology). `slice_placement_problems` says, per replicated job, when a JobSet asks for both, asks
for the one its queue cannot give, leaves its slices free to straddle pools, or could never fit
the declared pools, whatever else runs: with the controller, the allocator's own check
(`feasibility.placement_problems`); with TAS, whether enough pools can each hold a whole slice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api import kueue_tas as tas
from jobset_infra.placement.domains import DeclaredDomain, domains_from_nodes
from jobset_infra.placement.feasibility import placement_problems
from jobset_infra.placement.fit import fit
from jobset_infra.placement.jobs import pod_requests, request_from_job_manifest
from jobset_infra.placement.scheduling_terms import QuantityError, parse_quantity
from jobset_infra.placement.strategy import child_job_annotations, exclusive_topology
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import SLICE_DOMAIN_LABEL, Placer

__all__ = ["asks_for_tas", "slice_placement_problems"]

_TEMPLATE = "spec.template.metadata.annotations"


def _rjobs(jobset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = (jobset.get("spec") or {}).get("replicatedJobs") or []
    return [r for r in found if isinstance(r, Mapping)]


def _pod_annotations(rjob: Mapping[str, Any]) -> Mapping[str, str]:
    pod = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
    return (pod.get("metadata") or {}).get("annotations") or {}


def _pod_spec(rjob: Mapping[str, Any]) -> Mapping[str, Any]:
    pod = ((rjob.get("template") or {}).get("spec") or {}).get("template") or {}
    return pod.get("spec") or {}


def _exclusive_key(jobset: Mapping[str, Any], rjob: Mapping[str, Any]) -> str | None:
    own = ((rjob.get("template") or {}).get("metadata") or {}).get("annotations") or {}
    top = (jobset.get("metadata") or {}).get("annotations") or {}
    return exclusive_topology(child_job_annotations(top, own))


def _tas_keys(rjob: Mapping[str, Any]) -> list[str]:
    annotations = _pod_annotations(rjob)
    return [key for key in tas.TAS_ANNOTATIONS if key in annotations]


def asks_for_tas(jobset: Mapping[str, Any]) -> bool:
    """Return whether any pod template of the JobSet asks Kueue for topology-aware placement."""
    return any(_tas_keys(rjob) for rjob in _rjobs(jobset))


def _requests_tpu(rjob: Mapping[str, Any]) -> bool:
    for container in _pod_spec(rjob).get("containers") or ():
        resources = (container or {}).get("resources") or {}
        if any(tpu.TPU_RESOURCE in (resources.get(kind) or {}) for kind in ("requests", "limits")):
            return True
    return False


def _pods_per_job(rjob: Mapping[str, Any]) -> int:
    spec = (rjob.get("template") or {}).get("spec") or {}
    parallelism = spec.get("parallelism", 1)
    completions = spec.get("completions", parallelism)
    if not (_is_count(parallelism) and _is_count(completions)):
        return 0
    return max(0, min(int(parallelism), int(completions)))


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def slice_placement_problems(
    jobset: Mapping[str, Any], declared: Sequence[DeclaredDomain], placer: Placer | str
) -> list[str]:
    """Return why the JobSet's slices would not be placed one per pool by `placer` (pure)."""
    queued = bool(((jobset.get("metadata") or {}).get("labels") or {}).get(
        c.KUEUE_QUEUE_NAME_LABEL))
    problems: list[str] = []
    for index, rjob in enumerate(_rjobs(jobset)):
        where = f"spec.replicatedJobs[{index}] ({rjob.get('name')})"
        problems += (_mode_problems(where, jobset, rjob, Placer(placer), queued)
                     or _request_problems(where, jobset, rjob, declared))
    if problems:
        return problems
    if Placer(placer) is Placer.KUEUE_TAS and queued:
        return _tas_fit_problems(jobset, declared)
    return placement_problems(jobset, declared)


def _mode_problems(
    where: str, jobset: Mapping[str, Any], rjob: Mapping[str, Any], placer: Placer, queued: bool
) -> list[str]:
    exclusive, asked = _exclusive_key(jobset, rjob), _tas_keys(rjob)
    if exclusive and asked:
        return [f"{where}: asks for both placements: {c.EXCLUSIVE_KEY} (the controller gives each "
                f"child Job a pool of its own) and {_TEMPLATE}[{asked[0]}] (Kueue TAS places the "
                "pods); a JobSet has one placer, remove one of them"]
    if asked and not queued:
        return [f"{where}: {_TEMPLATE}[{asked[0]}] asks Kueue for topology-aware placement, but "
                f"the JobSet has no {c.KUEUE_QUEUE_NAME_LABEL} label, so Kueue never sees it and "
                "nothing places its slices; queue it or drop the annotation"]
    if not queued or not _requests_tpu(rjob):
        return []
    if placer is Placer.CONTROLLER and asked:
        return [f"{where}: {_TEMPLATE}[{asked[0]}] asks Kueue for topology-aware placement, but "
                "the stack places slices with the controller (placement: controller): its Kueue "
                "flavors name no Topology, so Kueue would never admit it; drop the annotation "
                f"and set {c.EXCLUSIVE_KEY}: {SLICE_DOMAIN_LABEL}, or use placement: kueue-tas"]
    if placer is Placer.KUEUE_TAS:
        return _tas_slice_problems(where, rjob, exclusive)
    return []


def _tas_slice_problems(where: str, rjob: Mapping[str, Any], exclusive: str | None) -> list[str]:
    hosts = _pods_per_job(rjob)
    fix = (f"set {_TEMPLATE}[{tas.PODSET_SLICE_REQUIRED_TOPOLOGY}]: {SLICE_DOMAIN_LABEL} and "
           f"[{tas.PODSET_SLICE_SIZE}]: \"{hosts}\" (one slice = one child Job's pods)")
    if exclusive:
        return [f"{where}: {c.EXCLUSIVE_KEY} on a stack whose queue places slices with Kueue TAS "
                "(placement: kueue-tas): Kueue places every pod of a TAS flavor, against the "
                f"controller's choice of pool; drop the annotation and {fix}"]
    annotations = _pod_annotations(rjob)
    domain = annotations.get(tas.PODSET_SLICE_REQUIRED_TOPOLOGY)
    size = annotations.get(tas.PODSET_SLICE_SIZE)
    if domain != SLICE_DOMAIN_LABEL:
        got = f"it asks for {domain!r}" if domain else "without it"
        return [f"{where}: under Kueue TAS each slice must stay inside one node pool ({got}, "
                f"a slice's pods may land in different pools); {fix}"]
    if size != str(hosts):
        return [f"{where}: {_TEMPLATE}[{tas.PODSET_SLICE_SIZE}] is {size!r}, but each child "
                f"Job (one slice) has {hosts} pods; set it to \"{hosts}\""]
    return []


def _request_problems(
    where: str, jobset: Mapping[str, Any], rjob: Mapping[str, Any],
    declared: Sequence[DeclaredDomain],
) -> list[str]:
    """A TPU pod's selector, chips and (for a slice) pod count against the declared pools."""
    pools = [d for d in declared if d.topology_key == SLICE_DOMAIN_LABEL]
    if not pools or not _requests_tpu(rjob):
        return []
    pod = _pod_spec(rjob)
    selector = {k: v for k, v in (pod.get("nodeSelector") or {}).items()
                if k != SLICE_DOMAIN_LABEL}
    matching = [d for d in pools if all(d.labels.get(k) == v for k, v in selector.items())]
    if not matching:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(selector.items())) or "(none)"
        return [f"{where}: nodeSelector {shown} matches no TPU node pool; the pools are "
                f"{_describe(pools)}"]
    try:
        asked = pod_requests(pod, f"{where}: spec.template.spec").get(tpu.TPU_RESOURCE, 0)
    except QuantityError as err:
        return [str(err)]
    chips = {_chips(d) for d in matching}
    if len(chips) == 1 and asked not in chips and None not in chips:
        [have] = chips
        return [f"{where}: each pod asks for {asked // 1000} {tpu.TPU_RESOURCE}, but a node of "
                f"{_describe(matching)} has {(have or 0) // 1000}: a TPU pod takes every chip of "
                f"its VM (one pod per VM); ask for {(have or 0) // 1000}"]
    hosts = {d.node_count for d in matching}
    is_slice = bool(_exclusive_key(jobset, rjob) or _tas_keys(rjob))
    pods = _pods_per_job(rjob)
    if is_slice and len(hosts) == 1 and pods not in hosts:
        [want] = hosts
        return [f"{where}: each child Job (one slice) runs {pods} pod(s), but a slice of "
                f"{_describe(matching)} has {want} host(s), one pod each; set parallelism and "
                f"completions to {want}"]
    return []


def _chips(domain: DeclaredDomain) -> int | None:
    quantity = (getattr(domain, "allocatable", None) or {}).get(tpu.TPU_RESOURCE)
    return None if quantity is None else parse_quantity(str(quantity))


def _describe(pools: Sequence[DeclaredDomain]) -> str:
    """Pools grouped by shape: "v5e-0..v5e-3 (tpu-v5-lite-podslice 2x4, 2 hosts)"."""
    shapes: dict[str, list[str]] = {}
    for pool in pools:
        shape = " ".join(v for k, v in sorted(pool.labels.items())
                         if k in (tpu.ACCELERATOR_LABEL, tpu.TOPOLOGY_LABEL))
        shapes.setdefault(f"{shape}, {pool.node_count} host(s)", []).append(pool.name)
    return "; ".join(f"{_names(names)} ({shape})" for shape, names in shapes.items())


def _names(names: list[str]) -> str:
    if len(names) <= 4:
        return ", ".join(names)
    return f"{names[0]}, {names[1]}, ..., {names[-1]} ({len(names)} pools)"


def _tas_fit_problems(jobset: Mapping[str, Any], declared: Sequence[DeclaredDomain]) -> list[str]:
    """Whether enough declared pools can each hold a whole slice (Kueue TAS capacity)."""
    domains = domains_from_nodes(None, SLICE_DOMAIN_LABEL, declared)
    if not domains:
        return []  # nothing declared: only the cluster's Nodes can tell
    problems = []
    for index, rjob in enumerate(_rjobs(jobset)):
        size = _pods_per_job(rjob)
        if not _tas_keys(rjob) or size < 1:
            continue
        job = {"metadata": {"name": str(rjob.get("name"))},
               "spec": {**((rjob.get("template") or {}).get("spec") or {}),
                        "parallelism": size, "completions": size}}
        try:
            request = request_from_job_manifest(job, SLICE_DOMAIN_LABEL)
        except QuantityError as err:
            problems.append(f"spec.replicatedJobs[{index}]: {err}")
            continue
        fits = {d.name: fit(request, d) for d in domains}
        slices = sum(f.room // size for f in fits.values())
        wanted = int(rjob.get("replicas", 1) or 0)
        if slices < wanted:
            reasons: dict[str, list[str]] = {}
            for name, found in fits.items():
                reason = found.problem or f"room for {found.room // size} slice(s)"
                reasons.setdefault(reason, []).append(name)
            why = "; ".join(f"{', '.join(names)}: {reason}" for reason, names in reasons.items())
            problems.append(
                f"spec.replicatedJobs[{index}] ({rjob.get('name')}): Kueue TAS can never place "
                f"{wanted} slice(s) of {size} pod(s), each inside one {SLICE_DOMAIN_LABEL}: the "
                f"declared pools hold {slices} ({why})")
    return problems
