"""Kueue queue objects from slice pools: flavors, quota, queues, priorities, flex-start check."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.kueue_crds import kueue_errors
from jobset_infra.manifests.kueue_queues import QueueError, plan_flavors, queue_objects
from jobset_infra.manifests.kueue_spec import KueueSpecError, QueueSpec, parse_queue_spec
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan
from jobset_infra.tpu.spec import Capacity, SlicePoolsError
from tests.manifests.pools import queued_v6e_pools, v5e_pools

FOUR_V5E = v5e_pools()


def _quotas(cq: dict[str, Any]) -> dict[str, int]:
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    return {f["name"]: int(f["resources"][0]["nominalQuota"]) for f in flavors}


def test_four_v5e_2x4_pools_make_one_flavor_with_32_chips() -> None:
    objects = queue_objects(QueueSpec(), [FOUR_V5E])
    (flavor,) = objects.resource_flavors
    assert flavor["metadata"]["name"] == "tpu-v5-lite-podslice-2x4"
    assert flavor["spec"]["nodeLabels"] == dict(FOUR_V5E.flavor_node_labels)
    assert flavor["spec"]["tolerations"] == [dict(t) for t in FOUR_V5E.tolerations]
    assert _quotas(objects.cluster_queue) == {"tpu-v5-lite-podslice-2x4": 32}
    # A quantity as the API server gives it back, so the next diff finds nothing to change.
    [quota] = objects.cluster_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert quota["nominalQuota"] == "32"
    assert objects.cluster_queue["spec"]["resourceGroups"][0]["coveredResources"] == [
        "google.com/tpu"
    ]


def test_hot_spare_pools_add_no_quota() -> None:
    from jobset_infra.tpu.pools import plan_slice_pools
    from tests.tpu.builders import make_spec

    plan = plan_slice_pools(make_spec(capacity="on-demand", spares=2))
    objects = queue_objects(QueueSpec(), [plan])
    assert _quotas(objects.cluster_queue) == {"tpu-v5-lite-podslice-2x4": 32}  # 4 slices, not 6


def test_flavor_labels_are_the_pool_node_labels_gke_sets() -> None:
    (flavor,) = plan_flavors([FOUR_V5E])
    assert flavor.node_labels == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    assert flavor.pools == ("v5e-0", "v5e-1", "v5e-2", "v5e-3")


def test_every_object_has_only_documented_kueue_fields() -> None:
    spec = QueueSpec(namespaces=("team-a", "team-b"), cohort="tpus")
    plans = [FOUR_V5E, v5e_pools("flex", 2, capacity=Capacity.FLEX_START), queued_v6e_pools()]
    for placer in Placer:
        for manifest in queue_objects(spec, plans, placer).in_apply_order():
            assert kueue_errors(manifest) == [], manifest["kind"]


def test_kueue_tas_makes_a_topology_of_gke_node_pools_then_hosts_named_by_every_flavor() -> None:
    plans = [FOUR_V5E, v5e_pools("spot", 2, capacity=Capacity.SPOT)]
    objects = queue_objects(QueueSpec(), plans, Placer.KUEUE_TAS)
    [topology] = objects.topologies
    assert topology["metadata"]["name"] == "tpu-slices"
    assert topology["spec"]["levels"] == [
        {"nodeLabel": "cloud.google.com/gke-nodepool"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    assert [f["spec"]["topologyName"] for f in objects.resource_flavors] == ["tpu-slices"] * 2
    order = [m["kind"] for m in objects.in_apply_order()]
    assert order.index("Topology") < order.index("ResourceFlavor")


def test_controller_placement_makes_no_topology_and_plain_flavors() -> None:
    objects = queue_objects(QueueSpec(), [FOUR_V5E])
    assert objects.topologies == ()
    assert all("topologyName" not in f["spec"] for f in objects.resource_flavors)


def test_the_schema_check_catches_a_v1beta1_field() -> None:
    cq = queue_objects(QueueSpec(), [FOUR_V5E]).cluster_queue
    cq["spec"]["cohort"] = "old-spelling"
    assert kueue_errors(cq) != []


def test_cluster_queue_admits_only_from_the_local_queue_namespaces() -> None:
    objects = queue_objects(QueueSpec(namespaces=("team-a", "team-b")), [FOUR_V5E])
    selector = objects.cluster_queue["spec"]["namespaceSelector"]
    assert selector["matchExpressions"][0]["values"] == ["team-a", "team-b"]
    queues = objects.local_queues
    assert [(q["metadata"]["namespace"], q["spec"]["clusterQueue"]) for q in queues] == [
        ("team-a", "tpu-cluster-queue"),
        ("team-b", "tpu-cluster-queue"),
    ]


def test_priority_classes_carry_value_at_the_top_level() -> None:
    objects = queue_objects(QueueSpec(priority_classes={"batch": 10, "prod": 900}), [FOUR_V5E])
    assert [(p["metadata"]["name"], p["value"]) for p in objects.priority_classes] == [
        ("batch", 10),
        ("prod", 900),
    ]
    assert all("spec" not in p for p in objects.priority_classes)


def test_queued_provisioning_pools_get_a_provisioning_request_check_on_their_flavor_only() -> None:
    queued = queued_v6e_pools()
    objects = queue_objects(QueueSpec(), [FOUR_V5E, queued])
    prc, check = objects.provisioning
    assert prc["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert check["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    assert check["spec"]["parameters"]["name"] == prc["metadata"]["name"]
    strategy = objects.cluster_queue["spec"]["admissionChecksStrategy"]["admissionChecks"]
    assert strategy == [
        {"name": check["metadata"]["name"], "onFlavors": ["tpu-v6e-slice-2x4-queued"]}
    ]
    assert _quotas(objects.cluster_queue) == {
        "tpu-v5-lite-podslice-2x4": 32,
        "tpu-v6e-slice-2x4-queued": 16,
    }
    [_, flavor] = objects.resource_flavors
    # GKE taints queued nodes cloud.google.com/gke-queued=true:NoSchedule; the flavor selects
    # them by the label and its pods tolerate the taint.
    assert flavor["spec"]["nodeLabels"]["cloud.google.com/gke-queued"] == "true"
    assert {"key": "cloud.google.com/gke-queued", "operator": "Equal", "value": "true",
            "effect": "NoSchedule"} in flavor["spec"]["tolerations"]


def test_flex_start_pools_without_queued_provisioning_get_no_check() -> None:
    # A ProvisioningRequest of class queued-provisioning.gke.io is served only by pools with
    # queued provisioning: a check on plain flex-start pools would hold workloads forever.
    flex = v5e_pools("flex", 2, capacity=Capacity.FLEX_START)
    objects = queue_objects(QueueSpec(), [FOUR_V5E, flex])
    assert objects.provisioning == ()
    assert "admissionChecksStrategy" not in objects.cluster_queue["spec"]
    assert _quotas(objects.cluster_queue)["tpu-v5-lite-podslice-2x4-flex-start"] == 16


def test_without_flex_start_pools_there_is_no_admission_check() -> None:
    objects = queue_objects(QueueSpec(), [FOUR_V5E])
    assert objects.provisioning == ()
    assert "admissionChecksStrategy" not in objects.cluster_queue["spec"]


def test_spot_pools_are_a_separate_flavor_selected_by_the_spot_label() -> None:
    spot = v5e_pools("spot", 2, capacity=Capacity.SPOT)
    flavors = {f.name: f for f in plan_flavors([FOUR_V5E, spot])}
    assert (
        flavors["tpu-v5-lite-podslice-2x4-spot"].node_labels["cloud.google.com/gke-spot"] == "true"
    )
    assert flavors["tpu-v5-lite-podslice-2x4-spot"].chips == 16


def test_pools_of_the_same_shape_and_capacity_share_a_flavor() -> None:
    (flavor,) = plan_flavors([FOUR_V5E, v5e_pools("more", 2)])
    assert flavor.chips == 48
    assert len(flavor.pools) == 6


def test_a_smaller_quota_is_used_as_given() -> None:
    spec = QueueSpec(tpu_quota={"tpu-v5-lite-podslice-2x4": 24})
    assert _quotas(queue_objects(spec, [FOUR_V5E]).cluster_queue) == {
        "tpu-v5-lite-podslice-2x4": 24
    }


@pytest.mark.parametrize(
    ("quota", "want_message"),
    [
        pytest.param({"tpu-v5-lite-podslice-2x4": 40}, "exceed the 32 chips", id="more than exist"),
        pytest.param({"v5e-2x4": 8}, "no flavor named v5e-2x4", id="unknown flavor"),
    ],
)
def test_a_quota_that_does_not_fit_the_pools_is_an_error(
    quota: dict[str, int], want_message: str
) -> None:
    with pytest.raises(QueueError, match=want_message):
        queue_objects(QueueSpec(tpu_quota=quota), [FOUR_V5E])


def test_no_pools_is_an_error() -> None:
    with pytest.raises(QueueError, match="pools"):
        queue_objects(QueueSpec(), [])


@pytest.mark.parametrize(
    ("fields", "want_message"),
    [
        pytest.param({"namespaces": ()}, "at least one namespace", id="no namespaces"),
        pytest.param({"namespaces": ("a", "a")}, "twice", id="namespace twice"),
        pytest.param({"namespaces": ("Team_A",)}, "namespaces", id="namespace not a DNS label"),
        pytest.param({"tpu_quota": {"f": -1}}, "negative", id="negative quota"),
        pytest.param({"priority_classes": {"p": 2**31}}, "int32", id="priority out of range"),
        pytest.param(
            {"preemption_within_cluster_queue": "Always"}, "LowerPriority", id="bad preemption"
        ),
        pytest.param({"queueing_strategy": "FIFO"}, "StrictFIFO", id="bad queueing strategy"),
        pytest.param({"cluster_queue_name": "TPU"}, "cluster_queue_name", id="bad queue name"),
        pytest.param({"clusterQueueName": "x"}, "clusterQueueName", id="unknown field"),
    ],
)
def test_bad_queue_arguments_are_named(fields: dict[str, Any], want_message: str) -> None:
    with pytest.raises(KueueSpecError, match=want_message):
        parse_queue_spec(**fields)


_CAPACITIES = st.sampled_from([Capacity.ON_DEMAND, Capacity.SPOT, Capacity.FLEX_START])


@st.composite
def pool_groups(draw: st.DrawFn) -> list[SlicePoolsPlan]:
    plans = []
    for index in range(draw(st.integers(1, 4))):
        topology = draw(st.sampled_from(["2x4", "4x4"]))
        try:
            slices = draw(st.integers(1, 4))
            plans.append(v5e_pools(f"g{index}", slices, topology, draw(_CAPACITIES)))
        except SlicePoolsError:
            continue
    return plans


@given(pool_groups())
def test_flavors_partition_the_pools_and_their_chips(plans: list[SlicePoolsPlan]) -> None:
    if not plans:
        return
    flavors = plan_flavors(plans)
    names = [f.name for f in flavors]
    assert len(names) == len(set(names))
    pools = [pool for f in flavors for pool in f.pools]
    assert sorted(pools) == sorted(p for plan in plans for p in plan.pool_names)
    assert sum(f.chips for f in flavors) == sum(plan.total_chips for plan in plans)
    cq = queue_objects(QueueSpec(), plans).cluster_queue
    assert sum(_quotas(cq).values()) == sum(plan.total_chips for plan in plans)
    for flavor in flavors:
        assert flavor.chips % 8 == 0 and flavor.tolerations
