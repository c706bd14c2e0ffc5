"""Small builders of slice-pool specs for tests: a valid default, overridden per case."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jobset_infra.tpu import SlicePoolsSpec


def make_spec(**overrides: Any) -> SlicePoolsSpec:
    """Return a valid spec (4 x v5e 2x4 multi-host on spot in us-west4-a) with ``overrides``."""
    spec = SlicePoolsSpec(
        name="train",
        accelerator="v5e",
        topology="2x4",
        machine_type="ct5lp-hightpu-4t",
        slices=4,
        zone="us-west4-a",
        cluster_location="us-west4",
        capacity="spot",  # type: ignore[arg-type]  # StrEnum accepts its value
    )
    return replace(spec, **overrides)
