"""plan_slice_pools: pool names, node counts, labels, capacity, and what Kueue/JobSets read."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.tpu import (
    ACCELERATORS,
    Autoscaling,
    Capacity,
    SlicePoolsError,
    TpuSlice,
    check_jobset_fits,
    check_quota,
    plan_slice_pools,
    replacement_fingerprint,
    replacement_warnings,
)
from jobset_infra.tpu.catalog import SlicePlacement
from jobset_infra.tpu.pools import WorkloadPolicy
from tests.tpu.builders import make_spec


def test_four_multi_host_v5e_slices_on_spot() -> None:
    plan = plan_slice_pools(make_spec())
    assert plan.pool_names == ("train-0", "train-1", "train-2", "train-3")
    assert plan.slice == TpuSlice("tpu-v5-lite-podslice", "2x4", "ct5lp-hightpu-4t")
    assert (plan.nodes_per_pool, plan.total_nodes, plan.total_chips) == (2, 8, 32)
    assert (plan.initial_node_count, plan.autoscaling, plan.compact_placement) == (2, None, True)
    assert (plan.replicas, plan.parallelism, plan.tpu_request) == (4, 2, 4)
    assert plan.capacity is Capacity.SPOT
    assert plan.capacity_node_labels == {"cloud.google.com/gke-spot": "true"}
    assert plan.flavor_node_labels == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    assert plan.pools[2].node_selector == {"cloud.google.com/gke-nodepool": "train-2"}
    assert plan.pools[2].node_labels == {
        "jobset-infra/slice-group": "train",
        "jobset-infra/slice-index": "2",
    }
    assert [(d.pool, d.nodes) for d in plan.placement_domains] == [
        ("train-0", 2),
        ("train-1", 2),
        ("train-2", 2),
        ("train-3", 2),
    ]


def test_single_host_on_demand_has_no_placement() -> None:
    plan = plan_slice_pools(
        make_spec(topology="2x2", machine_type=None, slices=1, capacity=Capacity.ON_DEMAND)
    )
    assert (plan.compact_placement, plan.initial_node_count, plan.total_chips) == (False, 1, 4)
    assert plan.capacity_node_labels == {}


IRONWOOD = {"accelerator": "tpu7x", "topology": "2x2x2", "machine_type": None,
            "zone": "us-central1-c", "cluster_location": "us-central1"}


def test_multi_host_tpu7x_pools_share_one_workload_policy_of_their_topology() -> None:
    plan = plan_slice_pools(make_spec(**IRONWOOD))
    assert (plan.placement, plan.compact_placement) == (SlicePlacement.WORKLOAD_POLICY, False)
    assert plan.workload_policy == WorkloadPolicy(
        name="train-wp", region="us-central1", accelerator_topology="2x2x2", create=True)
    assert (plan.nodes_per_pool, plan.total_chips, plan.tpu_request) == (2, 32, 4)
    assert replacement_fingerprint(plan)["placement"] == "workload policy train-wp"


def test_an_existing_workload_policy_is_used_not_created() -> None:
    plan = plan_slice_pools(make_spec(**IRONWOOD, workload_policy="shared-2x2x2"))
    assert plan.workload_policy is not None
    assert (plan.workload_policy.name, plan.workload_policy.create) == ("shared-2x2x2", False)


def test_single_host_tpu7x_has_no_policy() -> None:
    plan = plan_slice_pools(make_spec(**{**IRONWOOD, "topology": "2x2x1"}, slices=1))
    assert (plan.placement, plan.workload_policy, plan.nodes_per_pool) == (None, None, 1)


def test_reservation_labels_use_the_short_name() -> None:
    plan = plan_slice_pools(
        make_spec(
            topology="4x4",
            slices=2,
            capacity=Capacity.RESERVATION,
            reservation="projects/p/reservations/v5e-res",
        )
    )
    assert plan.capacity_node_labels == {"cloud.google.com/reservation-name": "v5e-res"}
    assert (plan.nodes_per_pool, plan.total_chips) == (4, 32)


def test_flex_start_defaults_to_scale_from_zero_without_auto_repair() -> None:
    plan = plan_slice_pools(make_spec(capacity=Capacity.FLEX_START, max_run_duration_seconds=3600))
    assert plan.autoscaling == Autoscaling(0, 2)
    assert (plan.initial_node_count, plan.auto_repair) == (0, False)


@pytest.mark.parametrize(
    ("release_channel", "auto_upgrade", "want_auto_upgrade"),
    [
        pytest.param("REGULAR", None, True, id="a release channel keeps auto-upgrade on"),
        pytest.param(None, None, False, id="a pinned version turns auto-upgrade off"),
        pytest.param(None, True, True, id="explicit auto-upgrade with a pinned version"),
    ],
)
def test_auto_upgrade_follows_the_cluster(
    release_channel: str | None, auto_upgrade: bool | None, want_auto_upgrade: bool
) -> None:
    spec = make_spec(release_channel=release_channel, auto_upgrade=auto_upgrade)
    assert plan_slice_pools(spec).auto_upgrade is want_auto_upgrade


def test_quota_and_jobset_fit_checks() -> None:
    plan = plan_slice_pools(make_spec())
    check_quota(plan, 32)
    check_jobset_fits(plan, replicas=4, parallelism=2, tpu_request=4)
    with pytest.raises(SlicePoolsError, match="nominal_quota: 33 chips exceed the 32 chips"):
        check_quota(plan, 33)
    with pytest.raises(SlicePoolsError, match="replicas: 5 replicas need 5 slices"):
        check_jobset_fits(plan, replicas=5, parallelism=2, tpu_request=4)
    with pytest.raises(SlicePoolsError, match="parallelism: a 2x4 slice has 2 hosts"):
        check_jobset_fits(plan, replicas=4, parallelism=1, tpu_request=4)
    with pytest.raises(SlicePoolsError, match="resources: each pod must request all 4 chips"):
        check_jobset_fits(plan, replicas=4, parallelism=2, tpu_request=8)


def test_replacement_warnings_name_each_replacing_change() -> None:
    before = replacement_fingerprint(plan_slice_pools(make_spec()))
    same = plan_slice_pools(make_spec(slices=6))
    assert replacement_warnings(before, same) == ()  # adding slices replaces nothing
    fewer = replacement_warnings(before, plan_slice_pools(make_spec(slices=2)))
    assert fewer == (
        "reducing slices from 4 to 2 deletes pool(s) train-2, train-3: running workloads on "
        "them are evicted",
    )
    assert replacement_warnings(None, same) == ()
    changed = plan_slice_pools(make_spec(topology="4x4", max_pods_per_node=32))
    warnings = replacement_warnings(before, changed)
    assert len(warnings) == 3
    assert warnings[0].startswith("changing topology from '2x4' to '4x4' replaces all 4 slice")
    assert "initial_node_count from '2' to '4'" in warnings[1]
    assert "max_pods_per_node from '15' to '32'" in warnings[2]
    reserved = plan_slice_pools(make_spec(capacity=Capacity.RESERVATION, reservation="res-a"))
    (warning,) = replacement_warnings(before, reserved)
    assert warning.startswith("changing capacity from 'spot' to 'reservation res-a' replaces all 4")
    old_output = {k: v for k, v in before.items() if k != "capacity"}  # from an older deployment
    assert replacement_warnings(old_output, reserved) == ()


@st.composite
def valid_specs(draw: st.DrawFn) -> tuple[TpuSlice, int]:
    family = draw(st.sampled_from([a for a in ACCELERATORS.values() if a.multi_host]))
    topology = draw(st.sampled_from(list(family.topologies)))
    chips = draw(st.sampled_from(sorted(family.topologies[topology])))
    tpu_slice = TpuSlice(family.label, topology, family.machine_type_for(chips))
    slices = draw(st.integers(1, 12)) if tpu_slice.is_multi_host else 1
    return tpu_slice, slices


@given(valid_specs())
def test_plan_totals_add_up(case: tuple[TpuSlice, int]) -> None:
    tpu_slice, slices = case
    spec = make_spec(
        accelerator=tpu_slice.accelerator,
        topology=tpu_slice.topology,
        machine_type=tpu_slice.machine_type,
        slices=slices,
    )
    plan = plan_slice_pools(spec)
    assert plan.total_chips == slices * tpu_slice.chips
    assert plan.total_nodes == sum(d.nodes for d in plan.placement_domains)
    assert len(set(plan.pool_names)) == slices
    assert (plan.placement is not None) == tpu_slice.is_multi_host
    assert plan.compact_placement == (tpu_slice.placement is SlicePlacement.COMPACT)
    assert (plan.workload_policy is not None) == (
        tpu_slice.placement is SlicePlacement.WORKLOAD_POLICY)
    assert plan.initial_node_count == tpu_slice.hosts


@st.composite
def arbitrary_specs(draw: st.DrawFn) -> dict[str, object]:
    """Mostly valid specs with one or two odd values: the outcome is a plan or a named error."""
    family = draw(st.sampled_from(list(ACCELERATORS.values())))
    topology = draw(st.sampled_from([*list(family.topologies)[:8], "3x3"]))
    chips = sorted(family.topologies.get(topology, {4}))
    natural = family.machine_type_for(chips[0])
    machine_type = draw(st.sampled_from([natural] * 4 + [None] * 4 + ["ct6e-standard-4t"]))
    bounds = st.builds(Autoscaling, st.integers(0, 4), st.integers(0, 4))
    return {
        "name": draw(st.sampled_from(["train"] * 9 + ["Bad_Name"])),
        "accelerator": draw(st.sampled_from([family.label] * 9 + ["v9"])),
        "topology": topology,
        "machine_type": machine_type,
        "slices": draw(st.sampled_from([1, 1, 2, 4, 0])),
        "zone": draw(st.sampled_from(["us-west4-a"] * 9 + ["us-central1-a"])),
        "cluster_location": draw(st.sampled_from(["us-west4"] * 8 + ["us-west4-a", None])),
        "capacity": draw(st.sampled_from(list(Capacity))),
        "reservation": draw(st.sampled_from([None, "res"])) if draw(st.booleans()) else None,
        "autoscaling": draw(st.none() | st.none() | bounds),
        "max_run_duration_seconds": draw(st.sampled_from([None, None, 3600, 10**7])),
        "max_pods_per_node": draw(st.sampled_from([15, 15, 110, 4])),
        "release_channel": draw(st.sampled_from([None, "REGULAR", "FAST"])),
        "auto_upgrade": draw(st.sampled_from([None, None, True, False])),
        "gke_version": draw(st.sampled_from([None, None, "1.34", "1.27.1", "nope"])),
    }  # fmt: skip


@given(arbitrary_specs())
def test_any_request_yields_a_consistent_plan_or_a_named_error(fields: dict[str, object]) -> None:
    try:
        plan = plan_slice_pools(fields)
    except SlicePoolsError as error:
        assert str(error).startswith(f"{error.field}: ")
        return
    hosts = plan.slice.hosts
    assert plan.slices == fields["slices"]
    assert plan.slices >= 1
    assert (plan.placement is not None) == plan.slice.is_multi_host
    assert plan.slices == 1 or plan.slice.is_multi_host
    if plan.autoscaling is not None:
        assert plan.autoscaling.max_nodes == hosts
        assert plan.autoscaling.min_nodes in {0, hosts}
    assert (plan.reservation is not None) == (plan.capacity is Capacity.RESERVATION)
    assert plan.zone.startswith(str(fields["cluster_location"])[: len("us-west4")])


def test_spares_are_pools_beside_the_slices_that_quota_and_replicas_leave_out() -> None:
    plan = plan_slice_pools(make_spec(spares=2))
    assert plan.pool_names == ("train-0", "train-1", "train-2", "train-3", "train-spare-0",
                               "train-spare-1")
    assert (plan.slices, plan.spares, plan.replicas) == (4, 2, 4)
    assert (plan.total_nodes, plan.total_chips) == (12, 32)  # quota: the slices' chips only
    spare = plan.pools[5]
    assert spare.spare and not plan.pools[0].spare
    assert spare.node_labels == {"jobset-infra/slice-group": "train",
                                 "jobset-infra/spare-pool": "true"}
    assert "jobset-infra/spare-pool" not in plan.pools[0].node_labels
    assert [d.pool for d in plan.placement_domains][-2:] == ["train-spare-0", "train-spare-1"]
    with pytest.raises(SlicePoolsError, match="replicas: 5 replicas need 5 slices, only 4"):
        check_jobset_fits(plan, replicas=5, parallelism=2, tpu_request=4)


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        pytest.param({"spares": -1}, "spares", "must be 0 or more", id="negative spares"),
        pytest.param({"slices": 7000, "spares": 1000}, "spares",
                     "7000 slices and 1000 spares of 2 node\\(s\\) are 16000 nodes",
                     id="spares past a GKE cluster's node limit"),
        pytest.param({"name": "a" * 33, "spares": 10}, "name", "'a{33}-spare-9'",
                     id="a spare's pool name too long"),
    ],
)
def test_bad_spares_are_named(overrides: dict[str, object], field: str, message: str) -> None:
    with pytest.raises(SlicePoolsError, match=f"^{field}: .*{message}"):
        plan_slice_pools(make_spec(**overrides))


def test_fewer_spares_warn_of_the_pools_deleted() -> None:
    before = replacement_fingerprint(plan_slice_pools(make_spec(spares=2)))
    assert replacement_warnings(before, plan_slice_pools(make_spec(spares=3))) == ()
    assert replacement_warnings(before, plan_slice_pools(make_spec(spares=0))) == (
        "reducing spares from 2 to 0 deletes pool(s) train-spare-0, train-spare-1: running "
        "workloads on them are evicted",
    )
