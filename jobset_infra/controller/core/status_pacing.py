"""Status pacing: how soon a large JobSet's status is written again when only its counts moved.

While a JobSet of hundreds of children starts (its Pods scheduled and started over minutes) or
recovers, its Jobs' events come every second or so, and each pass that finds one more Job ready
or active would write the status: about 5,400 status writes for ten JobSets of 1,000 Jobs while
their 10,000 Pods started on the real control plane, against upstream's 1,120 (its passes, which
walk every Job, come seldom), to an API server at a full core whose other writers (the
scheduler's binds, the kubelets' Pod status) the Pods wait on (benchmarks/RESULTS.md,
2026-12-07). So a write that moves nothing but the replicated jobs' counts of a JobSet of more
than `PACED_CHILDREN` children waits until `interval(children)` after our last status write: the
pass requeues itself for then, and a pass in between (a child event) finds it held again.
Everything else in the status (a condition, a restart, the terminal state, the start time) is
written at once, and so is a small JobSet's every count, so nothing a policy or a user acts on
waits: only the counts of a large JobSet lag its Jobs, by at most the interval.
"""

from __future__ import annotations

from typing import Final

from jobset_infra.controller.core.types import Plan, RequeueAfter, UpdateStatus

__all__ = ["MAX_INTERVAL", "PACED_CHILDREN", "SECONDS_PER_CHILD", "interval", "paced"]

PACED_CHILDREN: Final = 250
"""Children above which a count-only status write is paced."""
SECONDS_PER_CHILD: Final = 0.005
MAX_INTERVAL: Final = 5.0
"""The interval grows 5 ms per child up to 5 s (1,000 children and more): each of ten 1,000-Job
JobSets then writes its counts at most every 5 s, at most about 130 times while its Pods start
over 11 minutes, where upstream wrote 112 (49 each in the measured run of 2026-12-07 22:41,
benchmarks/RESULTS.md)."""


def interval(children: int) -> float:
    """The least time between two status writes of ours whose second only moves counts."""
    if children <= PACED_CHILDREN:
        return 0.0
    return min(children * SECONDS_PER_CHILD, MAX_INTERVAL)


def paced(plan: Plan, children: int, since_write: float | None) -> Plan:
    """`plan`, unless its one action is a count-only status write (`UpdateStatus.counts_only`,
    which the pass's draft decides) of a JobSet of `children` children whose last status write
    of ours was `since_write` seconds ago (None: none yet), less than `interval(children)`: then
    the plan that writes nothing and comes back when the interval is over."""
    wait = interval(children)
    update = plan.status_update
    if update is None or not update.counts_only or since_write is None or since_write >= wait:
        return plan
    if any(not isinstance(a, UpdateStatus | RequeueAfter) for a in plan.actions):
        return plan  # the write goes with Job or Service writes, events or metrics: as decided
    rest = tuple(a for a in plan.actions if not isinstance(a, UpdateStatus))
    return Plan((*rest, RequeueAfter(wait - since_write)))
