"""Slice health in placement: record failed slices against their pool, assign healthy pools first.

Pure; no I/O, no clock. Two decisions of one reconcile pass:

* `domain_failures`: when child Jobs fail, each Job that held a topology domain (a node pool,
  through the nodeSelector exclusive placement gave it) is recorded against that domain with
  its cause (`placement.failure_cause.diagnose` over the Job's failure condition and the Nodes
  of the pool). The runtime merges the records into the slice-health ledger it keeps in the
  cluster; `placement.pool_health` decides from the ledger which domains are kept out, and
  for how long.
* `allocate_healthy_first`: an assignment leaves the kept-out domains aside, and waits for busy
  healthy ones; when a pool is lost it takes hot-spare pools; only when the healthy domains
  and spares could not hold the Jobs even if all were free does it use kept-out ones (a
  restart on a recently failed pool beats no restart at all): `placement.recovery`.
  The `TopologyDomainsKeptOut` condition (and its event) names each domain left aside and why,
  and the spares taken.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from jobset_infra.api import resilience as r
from jobset_infra.api.resilience import Cause
from jobset_infra.controller.core.classify import job_failure
from jobset_infra.controller.core.conditions import ConditionSpec
from jobset_infra.controller.core.pod_view import PodView
from jobset_infra.controller.core.types import ChildJob
from jobset_infra.placement import (
    Assignment,
    Domain,
    NoFit,
    Occupancy,
    PlacementRequest,
    SlimNode,
)
from jobset_infra.placement.failure_cause import Diagnosis, FailureEvidence, diagnose
from jobset_infra.placement.inputs import PlacementInputs
from jobset_infra.placement.pool_health import DomainFailure, KeptOut
from jobset_infra.placement.recovery import Recovery, allocate_recovering
from jobset_infra.placement.strategy import exclusive_topology

__all__ = ["allocate_healthy_first", "domain_failures", "kept_out_condition", "unchanged_quiet"]


def domain_failures(
    failed: Sequence[ChildJob],
    inputs: PlacementInputs | None,
    now: datetime,
    pods: Sequence[PodView] | None = None,
) -> tuple[DomainFailure, ...]:
    """Return a record for each failing Job that held a domain, with the cause of its failure.

    `pods`: the JobSet's Pods when the runtime watches them (None otherwise); a failed Job's
    pods' exit codes, DisruptionTarget reasons and nodes then count as evidence too."""
    out = []
    for job in failed:
        key = exclusive_topology(job.annotations)
        domain = job.node_selector.get(key) if key else None
        failure = job_failure(job)
        if key is None or not domain or failure is None:
            continue
        evidence = _evidence(job, pods, inputs)
        found = _diagnosis(failure.reason, failure.message, key, domain, inputs,
                           evidence=evidence)
        out.append(DomainFailure(
            topology_key=key,
            domain=domain,
            cause=found.cause,
            at=failure.since or now,
            job=f"{job.namespace}/{job.name}",
            job_uid=job.uid,
            detail=found.detail,
        ))
    return tuple(out)


def _diagnosis(
    reason: str, message: str, key: str, domain: str, inputs: PlacementInputs | None,
    *, evidence: FailureEvidence | None = None,
) -> Diagnosis:
    nodes = () if inputs is None else _real_nodes(inputs, key, domain)
    if inputs is not None and inputs.nodes is not None and not nodes:
        return Diagnosis(Cause.NODE_DELETED, f"pool {domain} has no nodes left")
    return diagnose(reason, message, evidence, nodes, domain)


def _evidence(
    job: ChildJob, pods: Sequence[PodView] | None, inputs: PlacementInputs | None
) -> FailureEvidence | None:
    """The failed Job's pods and the nodes they ran on (None: a Node that is gone), if known."""
    if pods is None:
        return None
    found = tuple(p.evidence for p in pods if p.job == job.name and p.evidence is not None)
    if not found:
        return None
    if inputs is None or inputs.nodes is None:  # Nodes unknown: no node evidence, never "gone"
        return FailureEvidence(found)
    known = {n.name: n for n in inputs.nodes}
    return FailureEvidence(found, {p.node: known.get(p.node) for p in found if p.node})


def _real_nodes(inputs: PlacementInputs, key: str, domain: str) -> tuple[SlimNode, ...]:
    for found in inputs.domains(key):
        if found.name == domain:
            return tuple(n for n in found.nodes if not n.placeholder)
    return ()


def allocate_healthy_first(
    requests: Sequence[PlacementRequest],
    domains: Sequence[Domain],
    occupancy: Occupancy,
    kept_out: Mapping[tuple[str, str], KeptOut],
) -> tuple[Assignment | NoFit, ConditionSpec]:
    """Return the assignment of `placement.recovery.allocate_recovering` (healthy pools, then
    hot spares when a pool was lost, then kept-out pools) and the condition naming the domains
    kept out and the spares taken (False: none of these requests' domains was kept out)."""
    found = allocate_recovering(requests, domains, occupancy, kept_out)
    return found.result, kept_out_condition(found.aside, found.used_kept_out, found)


def kept_out_condition(
    aside: Sequence[KeptOut], used: bool = False, recovery: Recovery | None = None
) -> ConditionSpec:
    """Return TopologyDomainsKeptOut: True naming each domain set aside (and whether no healthy
    domain fitted, so they were used anyway) and the hot spares that stood in for lost pools,
    else False (which only flips a True one)."""
    spares = recovery.spares if recovery is not None and not used else ()
    if not aside and not spares:
        return ConditionSpec(r.CONDITION_DOMAINS_KEPT_OUT, "False", r.NO_DOMAIN_KEPT_OUT_REASON,
                             "no topology domain is kept out")
    names = "; ".join(k.describe() for k in sorted(aside, key=lambda k: k.domain))
    if used:
        message = f"no healthy pool fits, so pools that failed recently may be used: {names}"
        return ConditionSpec(r.CONDITION_DOMAINS_KEPT_OUT, "True", r.KEPT_OUT_USED_REASON,
                             message, event_type="Warning")
    if spares:
        assert recovery is not None
        lost = ", ".join(recovery.lost)
        message = f"hot-spare pool(s) {', '.join(spares)} stand in for lost pool(s) {lost}"
        message += f"; kept out: {names}" if names else ""
        return ConditionSpec(r.CONDITION_DOMAINS_KEPT_OUT, "True", r.SPARES_USED_REASON,
                             message, event_type="Warning")
    message = f"kept out of the assignment after recent infrastructure failures: {names}"
    return ConditionSpec(r.CONDITION_DOMAINS_KEPT_OUT, "True", r.DOMAINS_KEPT_OUT_REASON,
                         message, event_type="Warning")


def unchanged_quiet(conditions: Sequence[ConditionSpec], shown: bool) -> tuple[ConditionSpec, ...]:
    """Return `conditions` without a False TopologyDomainsKeptOut unless the JobSet `shown` it
    True (a False one only flips a True one; leaving it out keeps the decision lean)."""
    return tuple(
        spec for spec in conditions
        if shown or spec.type != r.CONDITION_DOMAINS_KEPT_OUT or spec.status == "True"
    )
