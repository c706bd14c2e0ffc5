"""TpuSlice: every v5e machine type x topology, the node-count formula, other generations
(v4, v5p, v6e, TPU7x) with their placement, errors."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.tpu import ACCELERATORS, TpuShapeError, TpuSlice
from jobset_infra.tpu import constants as c
from jobset_infra.tpu.catalog import SlicePlacement, resolve_accelerator

V5E = "tpu-v5-lite-podslice"
V5E_TOPOLOGIES = ("1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")
V5E_TYPES = ("ct5lp-hightpu-1t", "ct5lp-hightpu-4t", "ct5lp-hightpu-8t")
# (topology, machine type) -> GKE nodes per slice, from reference gke-tpu.md §1.2; absent = invalid.
V5E_WANT_HOSTS = {
    ("1x1", "ct5lp-hightpu-1t"): 1,
    ("2x2", "ct5lp-hightpu-4t"): 1,
    ("2x4", "ct5lp-hightpu-4t"): 2,
    ("2x4", "ct5lp-hightpu-8t"): 1,
    ("4x4", "ct5lp-hightpu-4t"): 4,
    ("4x8", "ct5lp-hightpu-4t"): 8,
    ("8x8", "ct5lp-hightpu-4t"): 16,
    ("8x16", "ct5lp-hightpu-4t"): 32,
    ("16x16", "ct5lp-hightpu-4t"): 64,
}


def _v5e_cases() -> list[object]:
    cases: list[object] = []
    for topology in V5E_TOPOLOGIES:
        for machine_type in V5E_TYPES:
            hosts = V5E_WANT_HOSTS.get((topology, machine_type))
            verdict = f"is {hosts} node(s)" if hosts else "is rejected"
            cases.append(
                pytest.param(
                    topology, machine_type, hosts, id=f"v5e {topology} on {machine_type} {verdict}"
                )
            )
    return cases


@pytest.mark.parametrize(("topology", "machine_type", "want_hosts"), _v5e_cases())
def test_v5e_every_machine_type_and_topology(
    topology: str, machine_type: str, want_hosts: int | None
) -> None:
    if want_hosts is None:
        with pytest.raises(TpuShapeError, match=f"cannot build a {V5E} {topology} slice"):
            TpuSlice("v5e", topology, machine_type)
        return
    tpu_slice = TpuSlice("v5e", topology, machine_type)
    chips = {"1t": 1, "4t": 4, "8t": 8}[machine_type[-2:]]
    assert tpu_slice.hosts == want_hosts
    assert tpu_slice.chips_per_host == chips == tpu_slice.tpu_request
    assert tpu_slice.is_multi_host == (want_hosts > 1)
    assert tpu_slice.node_labels == {c.ACCELERATOR_LABEL: V5E, c.TOPOLOGY_LABEL: topology}


@pytest.mark.parametrize(
    ("topology", "want_machine_type", "want_hosts"),
    [
        pytest.param("1x1", "ct5lp-hightpu-1t", 1, id="1x1 defaults to the 1-chip VM"),
        pytest.param("2x2", "ct5lp-hightpu-4t", 1, id="2x2 defaults to one 4-chip VM"),
        pytest.param("2x4", "ct5lp-hightpu-8t", 1, id="2x4 defaults to one 8-chip VM"),
        pytest.param("4x4", "ct5lp-hightpu-4t", 4, id="4x4 defaults to four 4-chip VMs"),
        pytest.param("16x16", "ct5lp-hightpu-4t", 64, id="16x16 is 64 nodes"),
    ],
)
def test_default_machine_type_is_the_fewest_hosts(
    topology: str, want_machine_type: str, want_hosts: int
) -> None:
    tpu_slice = TpuSlice("v5e", topology)
    assert (tpu_slice.machine_type, tpu_slice.hosts) == (want_machine_type, want_hosts)


@pytest.mark.parametrize(
    ("accelerator", "topology", "machine_type", "want_hosts", "want_api_type"),
    [
        pytest.param("v5litepod", "4x4", None, 4, "v5litepod-16", id="v5litepod alias is v5e"),
        pytest.param("tpu-v5-lite-device", "2x4", None, 1, "v5litepod-8", id="v5e device 2x4"),
        pytest.param("v6e", "4x4", None, 4, "v6e-16", id="v6e 4x4 is four 4-chip VMs"),
        pytest.param("trillium", "2x4", "ct6e-standard-4t", 2, "v6e-8", id="v6e 2x4 two hosts"),
        pytest.param("v4", "2x2x1", None, 1, "v4-8", id="v4 2x2x1 is single-host"),
        pytest.param("v4", "2x2x2", None, 2, "v4-16", id="v4 2x2x2 is two hosts"),
        pytest.param("v5p", "4x4x8", None, 32, "v5p-256", id="v5p 4x4x8 is 32 hosts"),
        pytest.param("V5P", "16x16x24", None, 1536, "v5p-12288", id="v5p largest slice"),
        # Cloud TPU's v5p table: 2x2x1 1 host, 2x2x2 2, 2x4x4 8, 4x4x4 16 (one cube).
        pytest.param("v5p", "2x2x1", None, 1, "v5p-8", id="v5p 2x2x1 is single-host"),
        pytest.param("v5p", "2x4x4", None, 8, "v5p-64", id="v5p 2x4x4 is 8 hosts"),
        pytest.param("v5p", "4x4x4", None, 16, "v5p-128", id="v5p one cube is 16 hosts"),
        pytest.param("v6e", "1x1", None, 1, "v6e-1", id="v6e 1x1 is one 1-chip VM"),
        pytest.param("v6e", "16x16", None, 64, "v6e-256", id="v6e full pod is 64 hosts"),
        # TPU7x: 4-chip VMs, 2 TensorCores a chip (XPK names tpu7x-<cores>).
        pytest.param("tpu7x", "2x2x1", None, 1, "tpu7x-8", id="TPU7x 2x2x1 is single-host"),
        pytest.param("ironwood", "2x2x2", None, 2, "tpu7x-16", id="TPU7x 2x2x2 is two hosts"),
        pytest.param("tpu7x", "4x4x4", None, 16, "tpu7x-128", id="TPU7x cube is 16 hosts"),
        pytest.param("tpu7x", "16x24x24", None, 2304, "tpu7x-18432", id="TPU7x whole pod"),
    ],
)
def test_other_families(
    accelerator: str, topology: str, machine_type: str | None, want_hosts: int, want_api_type: str
) -> None:
    tpu_slice = TpuSlice(accelerator, topology, machine_type)
    assert tpu_slice.hosts == want_hosts
    assert tpu_slice.tpu_api_type == want_api_type
    assert (tpu_slice.placement is None) == (want_hosts == 1)


@pytest.mark.parametrize(
    ("accelerator", "want_placement"),
    [
        pytest.param("v5e", SlicePlacement.COMPACT, id="v5e multi-host is COMPACT + tpu_topology"),
        pytest.param("v6e", SlicePlacement.COMPACT, id="v6e multi-host is COMPACT + tpu_topology"),
        pytest.param("v5p", SlicePlacement.COMPACT, id="v5p multi-host is COMPACT + tpu_topology"),
        pytest.param("tpu7x", SlicePlacement.WORKLOAD_POLICY,
                     id="TPU7x multi-host takes a workload policy"),
    ],
)
def test_multi_host_placement_by_generation(accelerator: str,
                                            want_placement: SlicePlacement) -> None:
    family = resolve_accelerator(accelerator)
    multi = [t for t, chips in family.topologies.items()
             if TpuSlice(accelerator, t, family.machine_type_for(min(chips))).is_multi_host]
    assert multi
    for topology in multi[:6]:
        assert TpuSlice(accelerator, topology).placement in (want_placement, None)


def test_every_generation_cites_its_sources() -> None:
    for family in ACCELERATORS.values():
        assert family.sources, family.label
        assert all(s.startswith("https://") for s in family.sources), family.sources


@pytest.mark.parametrize(
    ("accelerator", "topology", "machine_type", "want_message"),
    [
        pytest.param(
            "v9",
            "2x2",
            None,
            "unknown TPU accelerator 'v9'; choose one of: tpu-v5-lite-podslice",
            id="unknown accelerator lists the catalog",
        ),
        pytest.param("v5e", "3x3", None, "valid topologies: 1x1, 2x2, 2x4, 4x4", id="3x3 v5e"),
        pytest.param(
            "v5e",
            "2x2x2",
            None,
            "uses 2-D topologies written AxB",
            id="3-D topology on v5e is malformed",
        ),
        pytest.param(
            "v5p",
            "2x4",
            None,
            "uses 3-D topologies written AxBxC",
            id="2-D topology on v5p is malformed",
        ),
        pytest.param("v5e", "2xfour", None, "malformed", id="non-numeric topology"),
        pytest.param(
            "v5e",
            "2x4",
            "ct6e-standard-4t",
            "belongs to accelerator tpu-v6e-slice",
            id="v6e machine type on v5e",
        ),
        pytest.param(
            "v5e",
            "4x4",
            "ct5l-hightpu-8t",
            "single-host serving devices",
            id="ct5l device VM for a multi-host v5e slice",
        ),
        pytest.param(
            "v5e-device",
            "4x4",
            None,
            "valid topologies: 1x1, 2x2, 2x4",
            id="v5e device has no multi-host topologies",
        ),
        pytest.param(
            "v5e", "2x2", "n2-standard-8", "not a known TPU VM type", id="CPU machine type"
        ),
        pytest.param(
            "v5e",
            "2x2",
            "tpu7x-standard-4t",
            "belongs to accelerator tpu7x, not tpu-v5-lite-podslice",
            id="TPU7x machine type for a v5e slice names its family",
        ),
        pytest.param(
            "tpu7x",
            "2x2x3",
            None,
            "multiples of 4 up to 256 a side and 9,216 chips",
            id="TPU7x odd dimension states the rule",
        ),
        pytest.param("tpu7x", "24x24x24", None, "does not exist for tpu7x",
                     id="TPU7x beyond 144 cubes"),
        pytest.param("v6e", "2x2x2", None, "2-D topologies written AxB", id="v6e 3-D topology"),
        pytest.param("v6e", "4x4", "ct6e-standard-8t", "use one of: ct6e-standard-4t",
                     id="v6e 8-chip VMs for a 4x4 slice"),
        pytest.param("v5p", "2x2", None, "3-D topologies written AxBxC", id="v5p 2-D topology"),
        pytest.param("v5p", "16x16x32", None, "6,144 chips", id="v5p beyond 96 cubes"),
        pytest.param(
            "v4", "3x3x3", None, "does not exist for tpu-v4-podslice", id="v4 odd dimensions"
        ),
        pytest.param("v4", "4x2x2", None, "does not exist", id="v4 decreasing dimensions"),
        pytest.param("v4", "16x16x24", None, "does not exist", id="v4 beyond 4096 chips"),
    ],
)
def test_impossible_shapes_list_the_choices(
    accelerator: str, topology: str, machine_type: str | None, want_message: str
) -> None:
    with pytest.raises(TpuShapeError, match=re.escape(want_message)):
        TpuSlice(accelerator, topology, machine_type)


def test_slice_is_normalised_frozen_and_hashable() -> None:
    friendly = TpuSlice("v5e", "2x4", "ct5lp-hightpu-4t")
    canonical = TpuSlice("tpu-v5-lite-podslice", "2x4", "ct5lp-hightpu-4t")
    assert friendly == canonical
    assert hash(friendly) == hash(canonical)
    assert friendly.accelerator == "tpu-v5-lite-podslice"
    with pytest.raises(AttributeError):
        friendly.topology = "4x4"  # type: ignore[misc]


def test_taint_and_toleration_match() -> None:
    tpu_slice = TpuSlice("v5e", "4x4")
    assert (tpu_slice.taint.key, tpu_slice.taint.value) == ("google.com/tpu", "present")
    assert (tpu_slice.taint.effect, tpu_slice.taint.gke_effect) == ("NoSchedule", "NO_SCHEDULE")
    assert tpu_slice.toleration == {
        "key": "google.com/tpu",
        "operator": "Exists",
        "effect": "NoSchedule",
    }


@st.composite
def valid_slices(draw: st.DrawFn) -> TpuSlice:
    family = draw(st.sampled_from(list(ACCELERATORS.values())))
    topology = draw(st.sampled_from(list(family.topologies)))
    chips = draw(st.sampled_from(sorted(family.topologies[topology])))
    return TpuSlice(family.label, topology, family.machine_type_for(chips))


@given(valid_slices())
def test_hosts_times_chips_per_host_is_chips(tpu_slice: TpuSlice) -> None:
    assert tpu_slice.hosts * tpu_slice.chips_per_host == tpu_slice.chips
    assert tpu_slice.hosts >= 1
    assert tpu_slice.is_multi_host == (tpu_slice.hosts > 1)
    assert TpuSlice(tpu_slice.accelerator, tpu_slice.topology, tpu_slice.machine_type) == tpu_slice


@given(
    st.sampled_from(list(ACCELERATORS.values())),
    st.lists(st.integers(1, 32), min_size=2, max_size=3).map(lambda d: "x".join(map(str, d))),
)
def test_any_topology_is_either_in_the_catalog_or_rejected(family: object, topology: str) -> None:
    from jobset_infra.tpu.catalog import Accelerator

    assert isinstance(family, Accelerator)
    if topology in family.topologies:
        assert TpuSlice(family.label, topology).chips >= 1
    else:
        with pytest.raises(TpuShapeError):
            TpuSlice(family.label, topology)
