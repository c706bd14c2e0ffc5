"""TpuSlicePools under Pulumi mocks: the exact GCP node-pool inputs, and §6 errors at preview."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from jobset_infra.components.gke_cluster import GkeCluster
from jobset_infra.components.tpu_slice_pools import TpuSlicePools, TpuSlicePoolsArgs
from jobset_infra.plan.offline import ProgramError
from jobset_infra.tpu import Capacity, SlicePoolsSpec
from jobset_infra.tpu.cluster import NODE_OAUTH_SCOPES, GkeClusterSpec
from tests.components.pulumi_harness import (
    GCP_CLUSTER,
    GCP_NODE_POOL,
    GCP_RESOURCE_POLICY,
    ComponentRun,
    run_component,
)
from tests.tpu.builders import make_spec
from tests.tpu.test_validation import INVALID_CASES

SA = "tpu-nodes@my-project.iam.gserviceaccount.com"
TPU_TAINT = {"key": "google.com/tpu", "value": "present", "effect": "NO_SCHEDULE"}


def _build(spec: SlicePoolsSpec, **args: Any) -> ComponentRun[TpuSlicePools]:
    pool_args = TpuSlicePoolsArgs(
        cluster="train-cluster", spec=spec, project="my-project", service_account=SA, **args
    )
    return run_component(
        lambda: TpuSlicePools(spec.name, pool_args),
        outputs=["pool_names", "total_chips", "fingerprint"],
    )


def _want_node_config(group: str, index: int, machine_type: str, **capacity: Any) -> dict[str, Any]:
    return {
        "machineType": machine_type,
        "labels": {"jobset-infra/slice-group": group, "jobset-infra/slice-index": str(index)},
        "taints": [TPU_TAINT],
        "serviceAccount": SA,
        "oauthScopes": list(NODE_OAUTH_SCOPES),
        "gvnic": {"enabled": True},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        **capacity,
    }


def test_four_multi_host_v5e_2x4_slices_on_spot() -> None:
    result = _build(make_spec())  # 4 x v5e 2x4 on ct5lp-hightpu-4t, spot, us-west4-a

    pools = sorted(result.of_type(GCP_NODE_POOL), key=lambda p: p.name)
    assert [p.name for p in pools] == ["train-0", "train-1", "train-2", "train-3"]
    assert all(p.parent_type == "jobset-infra:index:TpuSlicePools" for p in pools)
    for index, pool in enumerate(pools):
        assert dict(pool.inputs) == {
            "name": f"train-{index}",
            "cluster": "train-cluster",
            "project": "my-project",
            "location": "us-west4",
            "nodeLocations": ["us-west4-a"],
            "nodeCount": 2,
            "maxPodsPerNode": 15,
            "management": {"autoRepair": True, "autoUpgrade": False},
            "placementPolicy": {"type": "COMPACT", "tpuTopology": "2x4"},
            "nodeConfig": _want_node_config("train", index, "ct5lp-hightpu-4t", spot=True),
        }
    assert result.values["pool_names"] == ["train-0", "train-1", "train-2", "train-3"]
    assert result.values["total_chips"] == 32
    assert result.component.plan.tpu_request == 4
    assert result.warnings() == []


def test_hot_spares_are_node_pools_labelled_as_spares_outside_the_quota() -> None:
    result = _build(make_spec(slices=2, spares=1))

    pools = sorted(result.of_type(GCP_NODE_POOL), key=lambda p: p.name)
    assert [p.name for p in pools] == ["train-0", "train-1", "train-spare-0"]
    spare = pools[2].inputs
    assert spare["nodeConfig"]["labels"] == {"jobset-infra/slice-group": "train",
                                             "jobset-infra/spare-pool": "true"}
    assert spare["nodeCount"] == 2 and spare["placementPolicy"] == pools[0].inputs[
        "placementPolicy"]
    assert result.values["pool_names"] == ["train-0", "train-1", "train-spare-0"]
    assert result.values["total_chips"] == 16  # what Kueue's quota counts: the 2 slices
    assert result.values["fingerprint"]["spares"] == "1"


def test_multi_host_tpu7x_slices_get_one_workload_policy_instead_of_tpu_topology() -> None:
    spec = make_spec(name="iw", accelerator="tpu7x", topology="4x4x4", machine_type=None,
                     slices=2, zone="us-central1-c", cluster_location="us-central1")
    result = _build(spec)

    [policy] = result.of_type(GCP_RESOURCE_POLICY)
    assert policy.parent_type == "jobset-infra:index:TpuSlicePools"
    assert dict(policy.inputs) == {
        "name": "iw-wp",
        "project": "my-project",
        "region": "us-central1",
        "workloadPolicy": {"type": "HIGH_THROUGHPUT", "acceleratorTopology": "4x4x4"},
    }
    pools = sorted(result.of_type(GCP_NODE_POOL), key=lambda p: p.name)
    assert [p.name for p in pools] == ["iw-0", "iw-1"]
    for pool in pools:
        assert pool.inputs["placementPolicy"] == {"type": "COMPACT", "policyName": "iw-wp"}
        assert pool.inputs["nodeCount"] == 16
        assert pool.inputs["nodeConfig"]["machineType"] == "tpu7x-standard-4t"
    assert result.values["total_chips"] == 128
    assert result.values["fingerprint"]["placement"] == "workload policy iw-wp"


def test_an_existing_workload_policy_is_named_and_not_created() -> None:
    spec = make_spec(name="iw", accelerator="tpu7x", topology="2x2x2", machine_type=None,
                     zone="us-central1-c", cluster_location="us-central1",
                     workload_policy="team-2x2x2")
    result = _build(spec)
    assert result.of_type(GCP_RESOURCE_POLICY) == []
    assert {p.inputs["placementPolicy"]["policyName"] for p in result.of_type(GCP_NODE_POOL)} == {
        "team-2x2x2"}


def test_one_single_host_v5e_2x2_slice_on_demand() -> None:
    spec = make_spec(
        name="serve", topology="2x2", machine_type=None, slices=1, capacity=Capacity.ON_DEMAND
    )
    result = _build(spec)

    assert dict(result.inputs(GCP_NODE_POOL, "serve-0")) == {
        "name": "serve-0",
        "cluster": "train-cluster",
        "project": "my-project",
        "location": "us-west4",
        "nodeLocations": ["us-west4-a"],
        "nodeCount": 1,
        "maxPodsPerNode": 15,
        "management": {"autoRepair": True, "autoUpgrade": False},
        "nodeConfig": _want_node_config("serve", 0, "ct5lp-hightpu-4t"),
    }  # no placementPolicy: a single-host pool carries no topology
    assert result.values["total_chips"] == 4


def test_two_v5e_4x4_slices_from_a_reservation() -> None:
    spec = make_spec(
        name="res",
        topology="4x4",
        slices=2,
        capacity=Capacity.RESERVATION,
        reservation="v5e-reservation",
        release_channel="REGULAR",
    )
    result = _build(spec)

    for index in (0, 1):
        inputs = result.inputs(GCP_NODE_POOL, f"res-{index}")
        assert inputs["nodeCount"] == 4
        assert inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "4x4"}
        assert inputs["management"] == {"autoRepair": True, "autoUpgrade": True}
        assert inputs["nodeConfig"] == _want_node_config(
            "res",
            index,
            "ct5lp-hightpu-4t",
            reservationAffinity={
                "consumeReservationType": "SPECIFIC_RESERVATION",
                "key": "compute.googleapis.com/reservation-name",
                "values": ["v5e-reservation"],
            },
        )
    assert result.values["total_chips"] == 32


def test_flex_start_pools_start_empty_and_scale_to_the_whole_slice() -> None:
    spec = make_spec(
        name="flex", capacity=Capacity.FLEX_START, max_run_duration_seconds=86400, slices=2
    )
    inputs = _build(spec).inputs(GCP_NODE_POOL, "flex-1")
    assert "nodeCount" not in inputs
    assert inputs["initialNodeCount"] == 0
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 2, "locationPolicy": "ANY"}
    assert inputs["management"] == {"autoRepair": False, "autoUpgrade": False}
    config = inputs["nodeConfig"]
    assert (config["flexStart"], config["maxRunDuration"]) == (True, "86400s")
    assert config["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert "spot" not in config


def test_queued_provisioning_pools_get_nodes_only_through_provisioning_requests() -> None:
    spec = make_spec(name="qp", accelerator="v6e", topology="4x4", machine_type=None, slices=2,
                     capacity=Capacity.FLEX_START, queued_provisioning=True)
    inputs = _build(spec).inputs(GCP_NODE_POOL, "qp-0")
    assert inputs["queuedProvisioning"] == {"enabled": True}
    assert inputs["autoscaling"] == {"minNodeCount": 0, "maxNodeCount": 4, "locationPolicy": "ANY"}
    config = inputs["nodeConfig"]
    assert config["flexStart"] is True
    assert config["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert config["labels"]["cloud.google.com/gke-queued"] == "true"
    assert config["taints"] == [TPU_TAINT]  # GKE adds the gke-queued taint itself


def test_plain_flex_start_pools_are_not_queued() -> None:
    inputs = _build(make_spec(name="flex", capacity=Capacity.FLEX_START)).inputs(
        GCP_NODE_POOL, "flex-0")
    assert "queuedProvisioning" not in inputs
    assert "cloud.google.com/gke-queued" not in inputs["nodeConfig"]["labels"]


def test_pinned_version_reaches_the_pools() -> None:
    inputs = _build(make_spec(gke_version="1.33.5-gke.1080000")).inputs(GCP_NODE_POOL, "train-0")
    assert inputs["version"] == "1.33.5-gke.1080000"


@pytest.mark.parametrize(("overrides", "want_field", "want_message"), INVALID_CASES)
def test_each_invalid_case_fails_construction_naming_the_argument(
    overrides: dict[str, Any], want_field: str, want_message: str
) -> None:
    with pytest.raises(ProgramError, match=f"^{want_field}: .*{re.escape(want_message)}"):
        _build(make_spec(**overrides))


def test_a_replacing_change_is_warned() -> None:
    previous = dict(_build(make_spec()).values["fingerprint"])
    result = _build(make_spec(topology="4x4"), previous_fingerprint=previous)
    warnings = result.warnings()
    assert warnings[0].startswith("changing topology from '2x4' to '4x4' replaces all 4 slice")
    assert any("initial_node_count from '2' to '4'" in w for w in warnings)
    assert _build(make_spec(), previous_fingerprint=previous).warnings() == []


def test_pools_for_a_gke_cluster_use_its_name_region_and_node_identity() -> None:
    def build() -> TpuSlicePools:
        cluster = GkeCluster(
            "gke", GkeClusterSpec(project="my-project", location="us-west4", release_channel=None,
                                  version="1.33.5-gke.1080000")
        )  # fmt: skip
        spec = replace(make_spec(), cluster_location=None)
        return TpuSlicePools("train", TpuSlicePoolsArgs.for_cluster(cluster, spec))

    result = run_component(build, outputs=["pool_names"])
    pool = result.resource(GCP_NODE_POOL, "train-0")
    cluster = result.resource(GCP_CLUSTER, "gke")
    assert cluster.urn in pool.dependencies  # the pool waits for the cluster
    assert pool.inputs["cluster"] == "gke"
    assert pool.inputs["location"] == "us-west4"
    assert pool.inputs["version"] == "1.33.5-gke.1080000"
    assert pool.inputs["nodeConfig"]["serviceAccount"] == (
        "gke-nodes@my-project.iam.gserviceaccount.com"
    )


def test_harness_runs_do_not_share_pulumi_state() -> None:
    import pulumi

    first = _build(make_spec(slices=1, topology="4x4"))
    second = _build(make_spec(slices=2, topology="4x4"))
    assert len(first.of_type(GCP_NODE_POOL)) == 1
    assert len(second.of_type(GCP_NODE_POOL)) == 2
    assert pulumi.get_stack() == "stack"  # reset after each run
    assert pulumi.runtime.settings.get_root_resource() is None


def test_pools_from_a_config_mapping_and_a_config_typo() -> None:
    config = {"name": "cfg", "accelerator": "v5e", "topology": "4x4", "zone": "us-west4-a",
              "cluster_location": "us-west4", "slices": "2", "capacity": "spot"}  # fmt: skip
    args = TpuSlicePoolsArgs(cluster="c", spec=config, service_account=SA)
    result = run_component(lambda: TpuSlicePools("cfg", args), outputs=["total_chips"])
    assert result.values["total_chips"] == 32
    assert result.inputs(GCP_NODE_POOL, "cfg-1")["nodeConfig"]["spot"] is True

    typo = TpuSlicePoolsArgs(cluster="c", spec={**config, "topolgy": "4x4"})
    with pytest.raises(ProgramError, match=r"^topolgy: unknown field; did you mean 'topology'"):
        run_component(lambda: TpuSlicePools("cfg", typo))
