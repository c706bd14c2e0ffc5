"""TPU slice math for GKE: the accelerator catalog, `TpuSlice`, slice-pool specs, plans and rules.

Pure: no Pulumi, no cloud calls, nothing else of ours imported.
"""

from jobset_infra.tpu.catalog import ACCELERATORS, Accelerator, TpuShapeError, resolve_accelerator
from jobset_infra.tpu.pools import (
    PlacementDomain,
    SlicePool,
    SlicePoolsPlan,
    check_jobset_fits,
    check_quota,
    plan_slice_pools,
    replacement_fingerprint,
    replacement_warnings,
)
from jobset_infra.tpu.slice import Taint, TpuSlice
from jobset_infra.tpu.spec import (
    Autoscaling,
    Capacity,
    HostMaintenance,
    SlicePoolsError,
    SlicePoolsSpec,
)

__all__ = [
    "ACCELERATORS",
    "Accelerator",
    "Autoscaling",
    "Capacity",
    "HostMaintenance",
    "PlacementDomain",
    "SlicePool",
    "SlicePoolsError",
    "SlicePoolsPlan",
    "SlicePoolsSpec",
    "Taint",
    "TpuShapeError",
    "TpuSlice",
    "check_jobset_fits",
    "check_quota",
    "plan_slice_pools",
    "replacement_fingerprint",
    "replacement_warnings",
    "resolve_accelerator",
]
