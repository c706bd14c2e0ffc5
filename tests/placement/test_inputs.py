"""What the runtime hands the core: nodes, declared domains, occupancy and mode."""

from __future__ import annotations

import pytest

from jobset_infra.api.controller_config import PlacementDomain, PlacementMode
from jobset_infra.placement import job_view_from_manifest, placement_inputs
from tests.placement.builders import POOL_KEY, make_job, tpu_pools


@pytest.mark.parametrize(
    ("nodes", "declared", "want_known"),
    [
        pytest.param(None, (), False, id="no node access and nothing declared"),
        pytest.param([], (), True, id="node access with no nodes yet"),
        pytest.param(
            None,
            (PlacementDomain(name="p", node_count=1),),
            True,
            id="declared domains without node access",
        ),
    ],
)
def test_domains_known(
    nodes: object, declared: tuple[PlacementDomain, ...], want_known: bool
) -> None:
    inputs = placement_inputs(nodes, declared, [], "auto")  # type: ignore[arg-type]
    assert inputs.domains_known is want_known
    assert inputs.mode is PlacementMode.AUTO


def test_in_flight_views_override_the_cache() -> None:
    cached = job_view_from_manifest(make_job("j").on("pool-0").suspended().obj())
    in_flight = job_view_from_manifest(make_job("j").on("pool-1").obj())
    assert cached is not None and in_flight is not None
    inputs = placement_inputs(tpu_pools(2), (), [cached, in_flight], PlacementMode.EXCLUSIVE)
    assert [v.key for v in inputs.occupancy.holders_of(POOL_KEY, "pool-1")] == ["default/j"]
    assert inputs.occupancy.holders_of(POOL_KEY, "pool-0") == ()
    assert [d.name for d in inputs.domains(POOL_KEY)] == ["pool-0", "pool-1"]
