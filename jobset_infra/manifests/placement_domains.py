"""Declared placement domains: the node pools Pulumi creates, told to the controller up front.

The controller learns domains from Nodes, but a pool scaled to zero (flex-start, autoscaled) has
no Nodes; declaring every pool in the config file lets exclusive placement count it anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

from jobset_infra.api.controller_config import (
    ControllerConfig,
    ControllerConfigError,
    Placement,
    PlacementDomain,
)
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.pools import SlicePoolsPlan

__all__ = ["pool_domains", "pool_plans", "with_pool_domains"]


def pool_plans(pools: Sequence[object], field: str = "pools") -> list[SlicePoolsPlan]:
    """Return the SlicePoolsPlans of `pools`: plans, or anything with a `.plan` (TpuSlicePools)."""
    plans = []
    for index, pool in enumerate(pools):
        plan = getattr(pool, "plan", pool)
        if not isinstance(plan, SlicePoolsPlan):
            raise ValueError(
                f"{field}[{index}]: expected a SlicePoolsPlan or a TpuSlicePools, got "
                f"{type(pool).__name__}"
            )
        plans.append(plan)
    return plans


def pool_domains(plans: Sequence[SlicePoolsPlan]) -> tuple[PlacementDomain, ...]:
    """Return one domain per pool: its name, size, node labels and per-node TPU chips."""
    return tuple(
        PlacementDomain(
            name=pool.name,
            topology_key=tpu.GKE_NODEPOOL_LABEL,
            node_count=plan.nodes_per_pool,
            labels={
                **plan.flavor_node_labels,
                **plan.capacity_node_labels,
                **pool.node_labels,
                tpu.GKE_NODEPOOL_LABEL: pool.name,
            },
            allocatable={tpu.TPU_RESOURCE: str(plan.slice.chips_per_host)},
        )
        for plan in plans
        for pool in plan.pools
    )


def with_pool_domains(
    config: ControllerConfig, plans: Sequence[SlicePoolsPlan]
) -> ControllerConfig:
    """Return `config` with the pools' domains added to any it already declares.

    Only `placement` changes, so which fields the user set explicitly is kept. Raises
    ControllerConfigError when a pool is declared twice (the config validator names it).
    """
    if not plans:
        return config
    domains = (*config.placement.domains, *pool_domains(plans))
    try:
        placement = Placement(mode=config.placement.mode, domains=domains)
    except ValidationError as err:
        problems = "; ".join(p["msg"].removeprefix("Value error, ") for p in err.errors())
        raise ControllerConfigError(f"placement.domains: {problems}") from None
    return config.model_copy(update={"placement": placement})
