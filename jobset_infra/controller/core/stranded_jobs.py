"""Jobs stranded on a pool lost before their pods started: moved off it (pure).

Placement gives a Job its pool when it creates the Job, from the Nodes it sees then. A pool
that goes NotReady, is cordoned or loses its Nodes after that (or just before, while the Node
cache still showed it Ready) leaves the Job's pods Pending there for as long as the pool is
down: the Job has not failed, so no failure policy and no restart ever moves it.

`stranded_jobs` names the Jobs to move: each holds a pool by the controller's placement
(not one the user pinned), the pool is lost (a Node of it not ready or cordoned, or none
left), and none of its pods has started; and the assignment a restart would make
(`slice_health.allocate_healthy_first`: healthy pools, then hot spares for the lost pool)
has room for all of them now. Reconcile deletes them; the next pass creates them again
(same names, same attempt: nothing ran, so no restart is counted) and placement puts them
on that room. Without room they stay: deleting them would only make them wait elsewhere.

"Not started": no pod of the Job ready, succeeded or failed (its status counts) and none past
Pending (a pod bound to a Node whose kubelet never started it, as on a host that died after
the scheduler bound it, is still Pending). The status alone cannot tell: a pod running when its
Node went NotReady is marked unready too, and such a slice is left to its failure policy (its
pods' eviction fails it). So `stranded_candidates` names the Jobs whose status allows it, the
runtime looks up their Pods (the Pod cache when it has one, else one list of those Jobs'
Pods), and a Job moves only when none of its Pods has started. Without Pods to go by, nothing
moves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from jobset_infra.api.models import JobSet
from jobset_infra.controller.core.exclusive_placement import resume_request
from jobset_infra.controller.core.slice_health import allocate_healthy_first
from jobset_infra.controller.core.types import ChildJob, CoreConfig, Observed
from jobset_infra.placement import Assignment, Occupancy, QuantityError
from jobset_infra.placement.inputs import PlacementInputs
from jobset_infra.placement.strategy import Strategy, exclusive_topology, strategy_for

__all__ = ["stranded_candidates", "stranded_jobs"]


def stranded_candidates(
    jobs: Sequence[ChildJob], inputs: PlacementInputs | None, config: CoreConfig
) -> tuple[ChildJob, ...]:
    """Return the running Jobs on a lost pool whose status counts no pod ready, succeeded or
    failed. Whether a pod of theirs has started their status cannot tell (a pod running
    when its Node went NotReady is unready too): the runtime looks up these Jobs' Pods."""
    if not config.exclusive_placement or inputs is None or inputs.nodes is None:
        return ()
    waiting = [(job, key, pool) for job in jobs
               if (key := _placed_key(job, inputs)) and (pool := job.node_selector.get(key))
               and not (job.ready or job.succeeded or job.failed)]
    if not waiting:  # the common case: Nodes are not walked
        return ()
    healthy = {(d.topology_key, d.name): d.healthy
               for key in {key for _, key, _ in waiting} for d in inputs.domains(key)}
    return tuple(job for job, key, pool in waiting if not healthy.get((key, pool), False))


def stranded_jobs(
    jobs: Sequence[ChildJob], observed: Observed[JobSet], config: CoreConfig
) -> tuple[ChildJob, ...]:
    """Return the running Jobs of `jobs` to delete so that they are placed again elsewhere."""
    inputs = observed.placement
    pods = observed.pods
    if pods is None or inputs is None:  # no Pods to go by: none moves
        return ()
    started = {(pod.namespace, pod.job) for pod in pods if pod.started}
    found = tuple(job for job in stranded_candidates(jobs, inputs, config)
                  if (job.namespace, job.name) not in started)
    if not found:
        return ()
    try:
        requests = [replace(resume_request(job, observed), previous=None) for job in found]
    except QuantityError:
        return ()
    if any(r.pinned for r in requests):  # the user chose that pool: theirs to change
        return ()
    keys = {r.key for r in requests}
    occupancy = Occupancy({
        slot: kept for slot, views in inputs.occupancy.holders.items()
        if (kept := tuple(v for v in views if v.key not in keys))
    }, inputs.occupancy.draining)
    domains = tuple(d for key in sorted({r.topology_key for r in requests})
                    for d in inputs.domains(key))
    result, _ = allocate_healthy_first(requests, domains, occupancy, inputs.kept_out)
    return found if isinstance(result, Assignment) else ()


def _placed_key(job: ChildJob, inputs: PlacementInputs) -> str | None:
    """The topology key of a running Job the controller's placement gave a pool, else None."""
    key = exclusive_topology(job.annotations)
    if (key is None or job.suspend or job.deletion_timestamp is not None
            or strategy_for(job.annotations, inputs.mode, inputs.domains_known)
            is not Strategy.DOMAINS):
        return None
    return key
