"""Stack config: every committed file loads; any bad config is a clear error naming the key."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.stack.config import (
    StackConfig,
    StackConfigError,
    load_stack_config,
)
from jobset_infra.tpu.cluster import validate_cluster_spec
from jobset_infra.tpu.parse import parse_cluster_spec, parse_slice_pools_spec
from jobset_infra.tpu.pools import plan_slice_pools
from jobset_infra.tpu.spec import SlicePoolsError
from tests.stacks.stack_runs import STACK_NAMES, committed_config

NS = "jobset-infra"
FLEX_V6E = json.loads(committed_config("v6e-flex")[f"{NS}:slices"])
WORKLOAD = json.loads(committed_config("v6e-flex")[f"{NS}:workload"])


def _with(stack: str, **changes: Any) -> dict[str, Any]:
    config = committed_config(stack)
    for key, value in changes.items():
        full = f"{NS}:{key}"
        if value is None:
            config.pop(full, None)
        else:
            config[full] = value if isinstance(value, str) else json.dumps(value)
    return config


def _problems(config: dict[str, Any]) -> list[str]:
    with pytest.raises(StackConfigError) as caught:
        load_stack_config(config)
    return list(caught.value.problems)


@pytest.mark.parametrize("stack", [pytest.param(s, id=f"stack {s}") for s in STACK_NAMES])
def test_committed_stack_config_loads(stack: str) -> None:
    assert isinstance(load_stack_config(committed_config(stack)), StackConfig)


def test_multislice_config_plans_four_two_vm_slices_and_a_queued_workload() -> None:
    config = load_stack_config(committed_config("v5e-multislice"))
    plan = config.slice_pools_plan()
    assert (plan.slices, plan.nodes_per_pool, plan.total_chips) == (4, 2, 32)
    assert config.queued


GENERATION_STACKS = [
    # (stack, a topology the generation does not offer, a shape the message lists)
    pytest.param("v5e-multislice", "3x3", "1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16",
                 id="v5e 3x3 lists the v5e shapes"),
    pytest.param("v6e-multislice", "4x16", "1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16",
                 id="v6e 4x16 lists the v6e shapes"),
    pytest.param("v5p-multislice", "2x4x3", "2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4",
                 id="v5p 2x4x3 lists the v5p shapes and their rule"),
    pytest.param("tpu7x-multislice", "4x4x6", "2x2x1, 2x2x2, 2x2x4, 2x4x4, 4x4x4",
                 id="TPU7x 4x4x6 lists the TPU7x shapes and their rule"),
]


@pytest.mark.parametrize(("stack", "topology", "shapes"), GENERATION_STACKS)
def test_a_wrong_shape_for_each_generation_names_the_key_and_the_valid_shapes(
    stack: str, topology: str, shapes: str
) -> None:
    slices = json.loads(committed_config(stack)[f"{NS}:slices"])
    [problem] = _problems(_with(stack, slices={**slices, "topology": topology}))
    assert problem.startswith(f"{NS}:slices.topology: topology {topology!r} does not exist for "
                              f"{slices['accelerator']}; valid topologies"), problem
    assert shapes in problem


@pytest.mark.parametrize(
    ("stack", "want"),
    [
        pytest.param("v6e-multislice", (4, 4, 64, "ct6e-standard-4t"), id="v6e 4 x 4x4"),
        pytest.param("v5p-multislice", (2, 8, 64, "ct5p-hightpu-4t"), id="v5p 2 x 2x4x4"),
        pytest.param("tpu7x-multislice", (2, 4, 32, "tpu7x-standard-4t"), id="TPU7x 2 x 2x2x4"),
    ],
)
def test_each_generation_stack_plans_multislice_pools(
    stack: str, want: tuple[int, int, int, str]
) -> None:
    config = load_stack_config(committed_config(stack))
    plan = config.slice_pools_plan()
    assert (plan.slices, plan.nodes_per_pool, plan.total_chips, plan.slice.vm_type) == want
    assert plan.slice.is_multi_host and config.queued


def test_other_namespaces_pass_through() -> None:
    config = {**committed_config("local"), "kubernetes:enableServerSideApply": "true"}
    assert load_stack_config(config).platform == "local"


SLICES = {
    "name": "v5e", "accelerator": "v5e", "topology": "2x4", "machine_type": "ct5lp-hightpu-4t"
}


@pytest.mark.parametrize(
    ("stack", "changes", "expected"),
    [
        pytest.param(
            "v5e-multislice", {"projct": "p"}, f"{NS}:projct: unknown key; valid keys: platform",
            id="misspelled top-level key",
        ),
        pytest.param(
            "v5e-multislice", {"platform": "aws"}, f"{NS}:platform: Input should be 'local'",
            id="unknown platform",
        ),
        pytest.param(
            "v5e-multislice", {"zone": None}, f"{NS}:zone: required on platform gke",
            id="gke without a zone",
        ),
        pytest.param(
            "v5e-multislice",
            {"slices": {**SLICES, "topology": "3x3"}},
            f"{NS}:slices.topology: topology '3x3' does not exist",
            id="impossible topology",
        ),
        pytest.param(
            "v5e-multislice",
            {"slices": {**SLICES, "machine_type": "ct5lp-hightpu-8t", "slices": 4}},
            f"{NS}:slices.slices:",
            id="multislice of single-host slices",
        ),
        pytest.param(
            "v5e-multislice",
            {"cluster": {"private_nodez": True}},
            f"{NS}:cluster.private_nodez: unknown field; did you mean 'private_nodes'?",
            id="misspelled cluster field with a suggestion",
        ),
        pytest.param(
            "v5e-multislice",
            {"workload": {"image": "python:3.11", "command": ["python"], "slices": 5}},
            f"{NS}:workload.slices: 5 slices requested but the stack has 4",
            id="workload wants more slices than the stack has",
        ),
        pytest.param(
            "v5e-multislice",
            {"workload": {"image": "python:3.11", "command": ["python"], "namespace": "team-a"}},
            f"{NS}:workload.namespace: 'team-a' has no LocalQueue",
            id="queued workload in a namespace without a LocalQueue",
        ),
        pytest.param(
            "v5e-multislice",
            {"workload": {"image": "python:3.11", "command": ["python"], "replicaz": 2}},
            f"{NS}:workload.replicaz: unknown key; valid keys: enabled",
            id="misspelled workload key",
        ),
        pytest.param(
            "v5e-multislice",
            {"controller": {"image": "x/jobset-controller:latest"}},
            f"{NS}:controller: image: 'x/jobset-controller:latest' has no pinned tag",
            id="unpinned controller image",
        ),
        pytest.param(
            "v5e-multislice", {"controller": {}}, f"{NS}:controller: give exactly one of image",
            id="controller without image or build",
        ),
        pytest.param(
            "v5e-multislice", {"kueue": {"install": {"version": "v0.19.2"}}},
            f"{NS}:kueue.install.version: 'v0.19.2': Helm chart versions have no leading 'v'",
            id="kueue version with a v",
        ),
        pytest.param(
            "v5e-multislice", {"context": "kind-x"}, f"{NS}:context: GKE stacks build their own",
            id="a context on gke without a kubeconfig",
        ),
        pytest.param(
            "v5e-multislice", {"kubeconfig": "/k", "controller": {"build": {"tag": "0.1"}}},
            f"{NS}:controller.build: with kubeconfig set the stack creates no GCP resources",
            id="an image build on gke onto an existing cluster",
        ),
        pytest.param(
            "v5e-multislice", {"nodes": "v5e-2x4:4"}, f"{NS}:nodes: GKE stacks plan their pools",
            id="nodes on gke",
        ),
        pytest.param(
            "local", {"nodes": "v5e-3x3:1"}, f"{NS}:nodes: entry 'v5e-3x3:1'",
            id="local nodes that cannot be planned",
        ),
        pytest.param(
            "v5e-multislice", {"slices": "{not json"}, f"{NS}:slices: not valid JSON",
            id="broken JSON value",
        ),
        pytest.param(
            "local", {"project": "p"}, f"{NS}:project: the local platform uses an existing cluster",
            id="gcp key on local",
        ),
        pytest.param(
            "local", {"controller": {"build": {"tag": "0.1.0"}}},
            f"{NS}:controller.build: local has no registry",
            id="image build on local",
        ),
        pytest.param(
            "local",
            {"nodes": "cpu:2",
             "workload": {"image": "python:3.11", "command": ["python"], "queued": True}},
            f"{NS}:workload.queued: the stack has no TPU pools (nodes)",
            id="a queued workload on a local cluster without TPU pools",
        ),
        pytest.param(
            "local", {"workload": {"image": "python:3.11", "command": ["python"], "slices": 5}},
            f"{NS}:workload.slices: 5 slices requested but the stack has 4 ({NS}:nodes)",
            id="more slices than the local TPU pools have",
        ),
        pytest.param(
            "v5e-multislice", {"slices": {**SLICES, "slices": True}},
            f"{NS}:slices.slices: expected an integer, got true",
            id="a boolean slice count is not one slice",
        ),
        pytest.param(
            "v5e-multislice",
            {"workload": {"image": "python:3.11", "command": ["python"], "slices": True}},
            f"{NS}:workload.slices: expected an integer, got true",
            id="a boolean workload slice count",
        ),
        pytest.param(
            "local", {"workload": {"image": "python:3.11", "command": ["python"], "cpu": "lots"}},
            f"{NS}:workload.cpu: 'lots' is not a Kubernetes quantity",
            id="a cpu that is not a quantity",
        ),
        pytest.param(
            "local",
            {"workload": {"image": "python:3.11", "command": ["python"], "memory": "-1Gi"}},
            f"{NS}:workload.memory: '-1Gi' is negative",
            id="a negative memory request",
        ),
        pytest.param(
            "v6e-flex", {"placement": "kueue"}, f"{NS}:placement: Input should be 'controller' or "
            "'kueue-tas'", id="an unknown placement mode lists both",
        ),
        pytest.param(
            "v6e-flex", {"slices": {**FLEX_V6E, "queued_provisioning": False}},
            f"{NS}:placement: kueue-tas: pools v6e-flex start with no nodes (flex-start or "
            "autoscaling from 0), and Kueue TAS counts only Ready nodes",
            id="Kueue TAS on flex-start pools without queued provisioning would never admit",
        ),
        pytest.param(
            "v6e-flex", {"kueue": {"enabled": False}},
            f"{NS}:placement: kueue-tas: Kueue's Topology-Aware Scheduling places the slices, "
            "but kueue.enabled is false", id="Kueue TAS without Kueue",
        ),
        pytest.param(
            "v6e-flex", {"kueue": {"enabled": False}, "placement": "controller"},
            f"{NS}:kueue.enabled: false, but slices.queued_provisioning: the pools get nodes only "
            "through ProvisioningRequests", id="queued provisioning without Kueue",
        ),
        pytest.param(
            "v6e-flex", {"workload": {**WORKLOAD, "queued": False}},
            f"{NS}:workload.queued: false, but slices.queued_provisioning",
            id="queued provisioning for a workload outside the queue",
        ),
        pytest.param(
            "v6e-flex", {"slices": {**FLEX_V6E, "capacity": "spot"}},
            f"{NS}:slices.queued_provisioning: GKE queues provisioning only for flex-start node "
            f'pools, capacity is "spot"; set {NS}:slices.capacity: flex-start',
            id="queued provisioning on Spot pools names the stack key",
        ),
        pytest.param(
            "v5e-multislice",
            {"slices": {"name": "v5e", "accelerator": "v5e", "topology": "2x4",
                        "machine_type": "ct5lp-hightpu-4t", "slices": 4,
                        "capacity": "flex-start", "queued_provisioning": True}},
            f"{NS}:slices.queued_provisioning: GKE runs flex-start with queued provisioning for "
            "TPU v6e (tpu-v6e-slice), TPU7x (tpu7x), not tpu-v5-lite-podslice",
            id="queued provisioning for v5e names the generations that have it",
        ),
    ],
)
def test_bad_config_names_the_key(stack: str, changes: dict[str, Any], expected: str) -> None:
    problems = _problems(_with(stack, **changes))
    assert any(p.startswith(expected) for p in problems), problems


def test_a_misspelt_namespace_is_refused_with_the_key_it_meant() -> None:
    config = committed_config("v5e-multislice")
    config["jobset-infr:slices"] = config.pop(f"{NS}:slices")
    expected = "unknown config namespace 'jobset-infr'; did you mean jobset-infra:slices?"
    assert f"jobset-infr:slices: {expected}" in _problems(config)


def test_a_malformed_kueue_key_does_not_hide_the_other_problems() -> None:
    config = _with(
        "v5e-multislice",
        kueue={"queues": {"local_queue_name": "Not A Name"}},
        slices={"name": "v5e", "accelerator": "v5e", "topology": "3x3", "slices": 4},
    )
    problems = _problems(config)
    assert any(p.startswith(f"{NS}:kueue.queues.local_queue_name:") for p in problems), problems
    assert any(p.startswith(f"{NS}:slices.topology:") for p in problems), problems


@pytest.mark.parametrize(
    ("changes", "stack_fix", "python_fix"),
    [
        pytest.param(
            {"slices": {**SLICES, "machine_type": "ct5lp-hightpu-8t", "slices": 4}},
            f"set {NS}:slices.multislice: false for independent single-host pools",
            "set multislice=False for independent single-host pools",
            id="a multislice of single-host slices suggests the multislice key",
        ),
        pytest.param(
            {"slices": {**SLICES, "node_count": 3}},
            f"set {NS}:slices.node_count: 2 or leave it unset", "set node_count=2 or",
            id="a wrong node count suggests the node_count key",
        ),
        pytest.param(
            {"slices": {**SLICES, "autoscaling": {"min_nodes": 1, "max_nodes": 2}}},
            f"set {NS}:slices.autoscaling: {{min_nodes: 0, max_nodes: 2}} or "
            f"{NS}:slices.autoscaling: {{min_nodes: 2, max_nodes: 2}}",
            "set autoscaling=Autoscaling(0, 2) or autoscaling=Autoscaling(2, 2)",
            id="partial autoscaling suggests a mapping, not a Python constructor",
        ),
        pytest.param(
            {"slices": {**SLICES, "capacity": "reservation"}},
            f"set {NS}:slices.reservation: <reservation name>",
            'set reservation="<reservation name>"',
            id="a reservation capacity without a name suggests the reservation key",
        ),
        pytest.param(
            {"cluster": {"release_channel": "REGULAR", "version": "1.33"}},
            f"set {NS}:cluster.release_channel: null when pinning version",
            "set release_channel=None when pinning version",
            id="a channel and a version suggest null, not None",
        ),
    ],
)
def test_fixes_are_worded_as_stack_keys_for_a_stack_and_as_arguments_in_python(
    changes: dict[str, Any], stack_fix: str, python_fix: str
) -> None:
    """The same rule fires for `TpuSlicePools(...)` and for `Pulumi.<stack>.yaml`; each user
    reads the fix in what they wrote."""
    problems = _problems(_with("v5e-multislice", **changes))
    assert any(stack_fix in p for p in problems), problems
    assert not any(python_fix in p for p in problems)
    with pytest.raises(SlicePoolsError) as caught:
        _python_surface(changes)
    assert python_fix in str(caught.value) and f"{NS}:" not in str(caught.value)


def _python_surface(changes: dict[str, Any]) -> object:
    """What a Python program passing the same fields to the tpu specs runs into."""
    ((key, fields),) = changes.items()
    if key == "slices":
        spec = parse_slice_pools_spec({**fields, "zone": "us-west4-a"})
        return plan_slice_pools(replace(spec, cluster_location="us-west4"))
    cluster = {**fields, "project": "my-project", "location": "us-west4"}
    validate_cluster_spec(parse_cluster_spec(cluster))
    return None


def test_every_problem_is_one_line() -> None:
    problems = _problems({f"{NS}:zone": "us-west4-a", f"{NS}:kueue": '{"enabled": "maybe"}'})
    assert len(problems) >= 3  # platform, controller missing; kueue.enabled not a bool
    assert all("\n" not in p and p.startswith(f"{NS}:") for p in problems)


_KEYS = st.sampled_from(
    ["platform", "project", "region", "zone", "slices", "controller", "kueue", "workload",
     "cluster", "kubeconfig", "context", "unknown"]
)
_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@given(
    stack=st.sampled_from(STACK_NAMES),
    changes=st.dictionaries(_KEYS, _JSONISH, max_size=3),
)
def test_any_config_loads_or_fails_with_named_keys(
    stack: str, changes: dict[str, Any]
) -> None:
    config = committed_config(stack)
    for key, value in changes.items():
        config[f"{NS}:{key}"] = value if isinstance(value, str) else json.dumps(value)
    try:
        load_stack_config(config)
    except StackConfigError as exc:
        assert exc.problems
        assert all(p.startswith(f"{NS}:") and "\n" not in p for p in exc.problems)


@given(
    topology=st.sampled_from(["1x1", "2x2", "2x4", "4x4", "3x3", "2x2x2"]),
    machine_type=st.sampled_from(
        ["ct5lp-hightpu-1t", "ct5lp-hightpu-4t", "ct5lp-hightpu-8t", "n2-standard-4"]
    ),
    slices=st.integers(-1, 6),
    capacity=st.sampled_from(["on-demand", "spot", "reservation", "flex-start", "cheap"]),
    workload_slices=st.none() | st.integers(0, 7),
)
def test_any_slice_config_loads_or_names_its_keys(
    topology: str, machine_type: str, slices: int, capacity: str, workload_slices: int | None
) -> None:
    workload = {"image": "python:3.11", "command": ["python"], "slices": workload_slices}
    config = _with(
        "v5e-multislice",
        slices={**SLICES, "topology": topology, "machine_type": machine_type, "slices": slices,
                "capacity": capacity},
        workload=workload,
    )
    try:
        loaded = load_stack_config(config)
    except StackConfigError as exc:
        assert all(p.startswith(f"{NS}:") and "\n" not in p for p in exc.problems)
        return
    plan = loaded.slice_pools_plan()
    assert plan.slices == slices
    assert workload_slices is None or 1 <= workload_slices <= slices


def test_the_stack_plans_its_pools_in_the_cluster_as_the_component_does() -> None:
    # One plan for both (tpu.cluster.pools_in_cluster): a cluster pinned below TPU7x's minimum
    # GKE version fails at config load, as TpuSlicePools would at preview.
    cluster = {"name": "jobset-tpu7x", "release_channel": None, "version": "1.33.5-gke.1080000"}
    problems = _problems(_with("tpu7x-multislice", cluster=cluster))
    assert any("needs GKE 1.34.0-gke.2201000 or later, got 1.33.5-gke.1080000" in p
               for p in problems), problems
    config = load_stack_config(committed_config("tpu7x-multislice"))
    assert config.slice_pools_plan().auto_upgrade is False  # the pinned version, no channel


@pytest.mark.parametrize(("stack", "changes", "expected"), [
    pytest.param("v5e-multislice", {"kwok_pools": "v5e-2x4:1"},
                 f"{NS}:kwok_pools: GKE stacks plan their pools from slices; remove it",
                 id="kwok pools are the local platform's"),
    pytest.param("local", {"kwok_pools": "cpu:2"}, f"{NS}:kwok_pools: only TPU slice pools",
                 id="the CPU pool stays the cluster's"),
    pytest.param("local", {"kwok_pools": "v5e-2x4:1"},
                 f"{NS}:kwok_pools: pool 'v5e-2x4-0' is also in nodes",
                 id="a kwok pool may not take the name of one of the cluster's"),
    pytest.param("local", {"drain_jobsets": "sometimes"}, f"{NS}:drain_jobsets:",
                 id="the drain opt-in is a boolean"),
])
def test_pool_change_keys_are_checked(stack: str, changes: dict[str, Any],
                                      expected: str) -> None:
    assert any(p.startswith(expected) for p in _problems(_with(stack, **changes)))


def test_kwok_pools_are_planned_beside_the_clusters_own() -> None:
    config = load_stack_config(_with("local", kwok_pools="mine=v5e-2x4:2", drain_jobsets=True))
    assert [plan.name for plan in config.pool_plans()] == ["v5e-2x4", "mine"]
    assert config.drain_jobsets
