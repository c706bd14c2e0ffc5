"""Nodes that look like GKE TPU slice node pools, from a `--nodes` spec string."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.tpu import SlicePoolsSpec, TpuSlice, plan_slice_pools, resolve_accelerator
from jobset_infra.tpu.catalog import accelerator_for_machine_type
from jobset_infra.tpu.node_pools import (
    CPU_MACHINE_TYPE,
    VM_SIZES,
    NodeSpecError,
    PoolSpec,
    node_manifests,
    parse_nodes,
    vm_size,
)

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("spec", "want_pools"),
    [
        pytest.param(
            "v5e-2x4:4", [("v5e-2x4-0", 2), ("v5e-2x4-1", 2), ("v5e-2x4-2", 2), ("v5e-2x4-3", 2)],
            id="four v5e 2x4 slices are four pools of two 4-chip nodes",
        ),
        pytest.param("cpu:3", [("default-pool", 3)], id="cpu nodes form the default pool"),
        pytest.param(
            "v5e-4x4:1, cpu:1", [("v5e-4x4-0", 4), ("default-pool", 1)],
            id="pools of several shapes can be mixed",
        ),
        pytest.param(
            "v5e-2x4@ct5lp-hightpu-8t:2", [("v5e-2x4-0", 1), ("v5e-2x4-1", 1)],
            id="an explicit machine type picks the single-host form",
        ),
        pytest.param(
            "tpu-v5-lite-podslice-1x1:1", [("v5e-1x1-0", 1)], id="the GKE label works as a name",
        ),
        pytest.param("v5p-2x2x2:1", [("v5p-2x2x2-0", 2)], id="3-D topologies of v5p are accepted"),
    ],
)
def test_a_spec_becomes_pools_of_the_right_size(
    spec: str, want_pools: list[tuple[str, int]]
) -> None:
    assert [(p.name, p.nodes) for p in parse_nodes(spec)] == want_pools


@pytest.mark.parametrize(
    ("spec", "want_in_message"),
    [
        pytest.param("v5e-3x3:2", "valid topologies: 1x1, 2x2, 2x4", id="an unknown topology"),
        pytest.param("v5e-2x4", "needs a positive count", id="a missing count"),
        pytest.param("v5e-2x4:0", "needs a positive count", id="a zero count"),
        pytest.param("v9-2x4:1", "unknown TPU accelerator 'v9'", id="an unknown accelerator"),
        pytest.param("v5e:2", "has no '<accelerator>-<topology>'", id="a missing topology"),
        pytest.param(
            "v5e-2x4@ct5lp-hightpu-1t:1", "use one of: ct5lp-hightpu-4t, ct5lp-hightpu-8t",
            id="a machine type too small for the topology",
        ),
        pytest.param("cpu:1,cpu:2", "listed twice", id="the same pool twice"),
    ],
)
def test_a_bad_spec_is_refused_with_a_message_naming_the_entry(
    spec: str, want_in_message: str
) -> None:
    with pytest.raises(NodeSpecError) as caught:
        parse_nodes(spec)
    assert want_in_message in str(caught.value)
    assert "--nodes" in str(caught.value)


def test_tpu_nodes_carry_gke_labels_the_tpu_taint_and_chips_as_allocatable() -> None:
    nodes = node_manifests(parse_nodes("v5e-2x4:2"), T0)
    assert [n["metadata"]["name"] for n in nodes] == [
        "gke-sim-v5e-2x4-0-node-0", "gke-sim-v5e-2x4-0-node-1",
        "gke-sim-v5e-2x4-1-node-0", "gke-sim-v5e-2x4-1-node-1",
    ]
    node = nodes[2]
    labels = node["metadata"]["labels"]
    assert labels["cloud.google.com/gke-nodepool"] == "v5e-2x4-1"
    assert labels["cloud.google.com/gke-tpu-accelerator"] == "tpu-v5-lite-podslice"
    assert labels["cloud.google.com/gke-tpu-topology"] == "2x4"
    assert labels["node.kubernetes.io/instance-type"] == "ct5lp-hightpu-4t"
    assert labels["kubernetes.io/hostname"] == node["metadata"]["name"]
    assert node["spec"]["taints"] == [
        {"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}
    ]
    assert node["status"]["allocatable"]["google.com/tpu"] == "4"
    ready = node["status"]["conditions"][0]
    assert (ready["type"], ready["status"]) == ("Ready", "True")


def test_simulated_pools_match_what_the_tpu_slice_pools_plan_creates() -> None:
    plan = plan_slice_pools(SlicePoolsSpec(
        name="v5e-2x4", accelerator="v5e", topology="2x4", zone="us-west4-a",
        cluster_location="us-west4", machine_type="ct5lp-hightpu-4t", slices=3,
    ))
    pools = parse_nodes("v5e-2x4:3")
    assert tuple(p.name for p in pools) == plan.pool_names
    assert all(p.nodes == plan.nodes_per_pool for p in pools)
    for pool, planned in zip(pools, plan.pools, strict=True):
        assert dict(planned.node_labels).items() <= dict(pool.labels).items()


def test_cpu_nodes_have_no_taint_and_no_tpu() -> None:
    node = node_manifests(parse_nodes("cpu:1"), T0)[0]
    assert "taints" not in node["spec"]
    assert "google.com/tpu" not in node["status"]["allocatable"]


def test_node_addresses_are_unique() -> None:
    pools = [PoolSpec(name=f"p{i}", nodes=300, machine_type="m", labels={}) for i in range(2)]
    nodes = node_manifests(pools, T0)
    ips = [n["status"]["addresses"][0]["address"] for n in nodes]
    assert len(set(ips)) == len(ips) == 600


@given(
    accelerator=st.sampled_from(["v5e", "v6e", "v5p", "v4"]),
    pick=st.integers(0, 1000),
    slices=st.integers(1, 3),
)
def test_every_pool_of_a_valid_shape_holds_exactly_the_chips_of_one_slice(
    accelerator: str, pick: int, slices: int
) -> None:
    family = resolve_accelerator(accelerator)
    topologies = [t for t in family.topologies if TpuSlice(accelerator, t).chips <= 256]
    topology = topologies[pick % len(topologies)]
    pools = parse_nodes(f"{accelerator}-{topology}:{slices}")
    assert len(pools) == slices
    for pool in pools:
        nodes = node_manifests([pool], T0)
        chips = sum(int(n["status"]["allocatable"]["google.com/tpu"]) for n in nodes)
        assert pool.slice is not None and chips == pool.slice.chips
        assert {n["metadata"]["labels"]["cloud.google.com/gke-tpu-topology"] for n in nodes} == {
            topology}


DOCS = Path(__file__).resolve().parents[2] / "docs" / "tpu.md"


@pytest.mark.parametrize(
    "machine_type", [pytest.param(m, id=m) for m in VM_SIZES if m != CPU_MACHINE_TYPE]
)
def test_vm_sizes_are_the_catalogs_machine_types_as_the_docs_table_lists_them(
    machine_type: str,
) -> None:
    family = accelerator_for_machine_type(machine_type)
    chips, size = family.machine_types[machine_type], VM_SIZES[machine_type]
    row = next(line for line in DOCS.read_text(encoding="utf-8").splitlines()
               if line.startswith("|") and f"`{family.label}`" in line)
    assert f"{chips}, {size.vcpus}, {size.memory_gb} G" in row


@pytest.mark.parametrize("generation", [pytest.param(g, id=g) for g in
                                        ("v5e", "v6e", "v5p", "tpu7x")])
def test_every_machine_type_of_a_deployable_generation_has_a_vm_size(generation: str) -> None:
    family = resolve_accelerator(generation)
    assert all(machine_type in VM_SIZES for machine_type in family.machine_types)


@pytest.mark.parametrize(
    ("spec", "want_cpu", "want_memory"),
    [
        pytest.param("v5e-2x4:1", "112", "192Gi", id="a v5e 4-chip VM"),
        pytest.param("v6e-2x4:1", "180", "720Gi", id="a v6e 4-chip VM has its own size"),
        pytest.param("v5p-2x2x2:1", "208", "448Gi", id="a v5p 4-chip VM has its own size"),
        pytest.param("tpu7x-2x2x2:1", "224", "960Gi", id="a TPU7x 4-chip VM has its own size"),
        pytest.param("v4-2x2x2:1", "112", "192Gi", id="v4 without a listed size: v5e's 4-chip VM"),
        pytest.param("cpu:1", "8", "32Gi", id="the CPU pool's e2-standard-8"),
    ],
)
def test_nodes_get_their_machine_types_vm_size(
    spec: str, want_cpu: str, want_memory: str
) -> None:
    node = node_manifests(parse_nodes(spec), T0)[0]
    assert (node["status"]["allocatable"]["cpu"], node["status"]["allocatable"]["memory"]) == (
        want_cpu, want_memory)
    assert vm_size(node["metadata"]["labels"]["node.kubernetes.io/instance-type"]).vcpus == int(
        want_cpu)
