"""Small builders of SlicePoolsPlans for the platform tests."""

from __future__ import annotations

from jobset_infra.tpu.pools import SlicePoolsPlan, plan_slice_pools
from jobset_infra.tpu.spec import Capacity, SlicePoolsSpec


def v5e_pools(
    name: str = "v5e",
    slices: int = 4,
    topology: str = "2x4",
    capacity: Capacity = Capacity.ON_DEMAND,
    reservation: str | None = None,
) -> SlicePoolsPlan:
    """`slices` multi-host v5e pools (ct5lp-hightpu-4t) in us-west4-a."""
    return plan_slice_pools(
        SlicePoolsSpec(
            name=name,
            accelerator="v5e",
            topology=topology,
            machine_type="ct5lp-hightpu-4t",
            zone="us-west4-a",
            cluster_location="us-west4",
            slices=slices,
            capacity=capacity,
            reservation=reservation,
        )
    )


def queued_v6e_pools(name: str = "qp", slices: int = 2) -> SlicePoolsPlan:
    """`slices` v6e 2x4 flex-start pools with GKE queued provisioning, in us-west4-a."""
    return plan_slice_pools(
        SlicePoolsSpec(
            name=name,
            accelerator="v6e",
            topology="2x4",
            machine_type="ct6e-standard-4t",
            zone="us-west4-a",
            cluster_location="us-west4",
            slices=slices,
            capacity=Capacity.FLEX_START,
            queued_provisioning=True,
        )
    )
