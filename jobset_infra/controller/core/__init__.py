"""The JobSet controller's pure core: `reconcile(observed, now, config) -> Plan`.

No I/O, no clock, no randomness: the runtime observes, calls `reconcile`, and carries out the plan.
The contract (Observed, ChildJob, Plan and its actions) is in `types`.
"""

from jobset_infra.controller.core.observe import MalformedJobSetError, observe, reconcile_malformed
from jobset_infra.controller.core.reconcile import reconcile
from jobset_infra.controller.core.types import (
    ChildJob,
    CoreConfig,
    Observed,
    Plan,
    child_job_from_manifest,
)

__all__ = [
    "ChildJob",
    "CoreConfig",
    "MalformedJobSetError",
    "Observed",
    "Plan",
    "child_job_from_manifest",
    "observe",
    "reconcile",
    "reconcile_malformed",
]
