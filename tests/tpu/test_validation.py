"""validate_*: each static rule of reference gke-tpu.md §6 rejects its invalid case by name."""

from __future__ import annotations

import re
from typing import Any

import pytest

from jobset_infra.tpu import Autoscaling, Capacity, HostMaintenance, SlicePoolsError
from jobset_infra.tpu.validation import at_least_version, validate_spec
from tests.tpu.builders import make_spec

RESERVED = {"capacity": Capacity.RESERVATION, "reservation": "v5e-res"}
FLEX = {"capacity": Capacity.FLEX_START}
IRONWOOD = {"accelerator": "tpu7x", "topology": "2x2x2", "machine_type": None,
            "zone": "us-central1-c", "cluster_location": "us-central1"}

# Every invalid case of §6 rules 1-14: (overrides, want_field, want_message fragment).
INVALID_CASES = [
    pytest.param({"accelerator": "tpu8"}, "accelerator", "unknown TPU accelerator 'tpu8'",
                 id="rule 1: an accelerator outside the catalog"),
    pytest.param({"machine_type": "ct6e-standard-4t"}, "machine_type",
                 "belongs to accelerator tpu-v6e-slice, not tpu-v5-lite-podslice",
                 id="rule 1: a machine type from another family"),
    pytest.param({"machine_type": "ct5l-hightpu-4t"}, "machine_type",
                 "single-host serving devices",
                 id="rule 1: a ct5l device VM for a multi-host slice"),
    pytest.param({"topology": "2x2x2"}, "topology", "2-D topologies written AxB",
                 id="rule 2: a 3-D topology for v5e"),
    pytest.param({"accelerator": "v5p", "machine_type": None}, "topology",
                 "3-D topologies written AxBxC", id="rule 2: a 2-D topology for v5p"),
    pytest.param({"topology": "4x2"}, "topology", "valid topologies: 1x1, 2x2, 2x4, 4x4",
                 id="rule 3: a topology v5e does not offer"),
    pytest.param({"topology": "4x4", "machine_type": "ct5lp-hightpu-8t"}, "machine_type",
                 "use one of: ct5lp-hightpu-4t", id="rule 3: 8-chip VMs for a 4x4 slice"),
    pytest.param({"topology": "2x2", "machine_type": "ct5lp-hightpu-1t"}, "machine_type",
                 "'ct5lp-hightpu-1t' (1 chip per VM) cannot build a tpu-v5-lite-podslice 2x2 slice",
                 id="rule 4: 1-chip VMs for a 2x2 slice"),
    pytest.param({"workload_policy": "my-policy"}, "workload_policy",
                 "never a workload policy (that is for multi-host TPU7x slices)",
                 id="rule 5: COMPACT plus a workload policy"),
    pytest.param({**IRONWOOD, "compact_placement": True}, "compact_placement",
                 "is placed by a workload policy with accelerator topology 2x2x2",
                 id="rule 5: COMPACT placement for a multi-host TPU7x slice"),
    pytest.param({**IRONWOOD, "topology": "2x2x1", "slices": 1, "workload_policy": "wp"},
                 "workload_policy", "is single-host and takes no placement policy",
                 id="rule 5: a workload policy for a single-host TPU7x slice"),
    pytest.param({**IRONWOOD, "workload_policy": "My_Policy"}, "workload_policy",
                 "is not a resource policy name",
                 id="rule 5: a workload policy name Compute Engine refuses"),
    pytest.param({**IRONWOOD, "gke_version": "1.33.5-gke.1080000"}, "gke_version",
                 "TPU7x (tpu7x) needs GKE 1.34.0-gke.2201000 or later",
                 id="rule 14: TPU7x on a GKE older than Ironwood's first"),
    pytest.param({"compact_placement": False}, "compact_placement",
                 "needs COMPACT placement with tpu_topology=2x4",
                 id="rule 5: a multi-host slice without COMPACT placement"),
    pytest.param({"topology": "2x2", "machine_type": None, "slices": 1, "compact_placement": True},
                 "compact_placement", "must not carry a placement policy or tpu_topology",
                 id="rule 6: a single-host slice with a topology"),
    pytest.param({"node_count": 4}, "node_count", "has 2 node(s) per pool, got 4",
                 id="rule 7: a node count other than the slice's hosts"),
    pytest.param({"autoscaling": Autoscaling(1, 2)}, "autoscaling",
                 "scales atomically between 0 and 2 nodes, got min 1 max 2",
                 id="rule 7: autoscaling to a partial slice"),
    pytest.param({"autoscaling": Autoscaling(0, 4)}, "autoscaling",
                 "set autoscaling=Autoscaling(0, 2)",
                 id="rule 7: autoscaling beyond one slice per pool"),
    pytest.param({"zone": "us-west4"}, "zone", "is not a single GCP zone",
                 id="rule 8: a region instead of a zone"),
    pytest.param({"zone": "us-west4-a,us-west4-b"}, "zone", "is not a single GCP zone",
                 id="rule 8: more than one zone"),
    pytest.param({"zone": "us-central1-a"}, "zone", "is not in the cluster's region 'us-west4'",
                 id="rule 8: a zone outside the cluster's region"),
    pytest.param({"cluster_location": "us-west4-b"}, "zone",
                 "the cluster is zonal in 'us-west4-b'",
                 id="rule 8: another zone than a zonal cluster"),
    pytest.param({"cluster_location": None}, "cluster_location",
                 "zone cannot be checked against the cluster's region",
                 id="rule 8: pools for a cluster of unknown location"),
    pytest.param({"capacity": Capacity.RESERVATION}, "reservation",
                 'needs the reservation name; set reservation="<reservation name>"',
                 id="rule 9: a reservation capacity without a reservation"),
    pytest.param({"reservation": "v5e-res"}, "reservation", "use exactly one capacity",
                 id="rule 9: spot and a reservation together"),
    pytest.param({"preemptible": True}, "preemptible", 'not combinable with "spot"',
                 id="rule 9: spot and preemptible together"),
    pytest.param({**FLEX, "max_run_duration_seconds": 8 * 24 * 3600}, "max_run_duration_seconds",
                 "flex-start VMs run at most 7 days", id="rule 9: flex-start longer than 7 days"),
    pytest.param({"max_run_duration_seconds": 0}, "max_run_duration_seconds", "must be positive",
                 id="rule 9: a zero max run duration"),
    pytest.param({**FLEX, "autoscaling": Autoscaling(2, 2)}, "autoscaling",
                 "flex-start pools start empty", id="rule 9: flex-start with a minimum size"),
    pytest.param({**FLEX, "auto_repair": True}, "auto_repair", "auto-repair off",
                 id="rule 9: flex-start with auto-repair"),
    pytest.param({"queued_provisioning": True}, "queued_provisioning",
                 'GKE queues provisioning only for flex-start node pools, capacity is "spot"',
                 id="rule 9: queued provisioning without flex-start"),
    pytest.param({**FLEX, "queued_provisioning": True}, "queued_provisioning",
                 "for TPU v6e (tpu-v6e-slice), TPU7x (tpu7x), not tpu-v5-lite-podslice",
                 id="rule 9: queued provisioning for a generation GKE runs without it"),
    pytest.param({"host_maintenance_interval": HostMaintenance.PERIODIC},
                 "host_maintenance_interval", "PERIODIC applies only to VMs from a reservation",
                 id="rule 10: PERIODIC maintenance without a reservation"),
    pytest.param({"topology": "2x2", "machine_type": None}, "slices",
                 "cannot form a Multislice", id="rule 11: a Multislice of single-host slices"),
    pytest.param({"accelerator": "v5e-device", "topology": "2x4", "machine_type": None}, "slices",
                 "has no multi-host slices, use tpu-v5-lite-podslice",
                 id="rule 11: a Multislice of v5e serving devices"),
    pytest.param({"slices": 0}, "slices", "must be at least 1", id="rule 11: zero slices"),
    pytest.param({"slices": 10**30}, "slices", "use at most 7500 slices",
                 id="rule 11: more slices than a GKE cluster's node limit"),
    pytest.param({"max_pods_per_node": 4}, "max_pods_per_node", "must be between 8 and 256",
                 id="rule 13: too few pods per node"),
    pytest.param({"max_pods_per_node": 1000}, "max_pods_per_node", "must be between 8 and 256",
                 id="rule 13: too many pods per node"),
    pytest.param({"release_channel": "REGULAR", "auto_upgrade": False}, "auto_upgrade",
                 "auto-upgrade cannot be turned off", id="rule 14: no auto-upgrade on a channel"),
    pytest.param({"release_channel": "FAST"}, "release_channel", "not one of RAPID",
                 id="rule 14: an unknown release channel"),
    pytest.param({"gke_version": "1.27.3-gke.100"}, "gke_version",
                 "Multislice needs GKE 1.27.4-gke.900", id="rule 14: Multislice on too old a GKE"),
    pytest.param({**FLEX, "gke_version": "1.32.9-gke.1"}, "gke_version",
                 "flex-start TPUs needs GKE 1.33.0-gke.1712000",
                 id="rule 14: flex-start TPUs on too old a GKE"),
    pytest.param({"gke_version": "latest"}, "gke_version", "is not a GKE version",
                 id="rule 14: a malformed GKE version"),
    pytest.param({"name": "Train"}, "name", "must be lowercase", id="an upper-case pool name"),
    pytest.param({"name": "a" * 39}, "name", "at most 40 characters",
                 id="a pool name too long for its index suffix"),
]  # fmt: skip


@pytest.mark.parametrize(("overrides", "want_field", "want_message"), INVALID_CASES)
def test_each_rule_rejects_its_invalid_case(
    overrides: dict[str, Any], want_field: str, want_message: str
) -> None:
    with pytest.raises(SlicePoolsError, match=re.escape(want_message)) as caught:
        validate_spec(make_spec(**overrides))
    assert caught.value.field == want_field
    assert str(caught.value).startswith(f"{want_field}: ")


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({}, id="4 x v5e 2x4 multi-host on spot"),
        pytest.param({"topology": "2x2", "machine_type": None, "slices": 1,
                      "capacity": Capacity.ON_DEMAND}, id="1 x v5e 2x2 single-host on demand"),
        pytest.param({"topology": "4x4", "slices": 2, **RESERVED,
                      "host_maintenance_interval": HostMaintenance.PERIODIC},
                     id="2 x v5e 4x4 from a PERIODIC reservation"),
        pytest.param({**FLEX, "max_run_duration_seconds": 7 * 24 * 3600,
                      "gke_version": "1.33.0-gke.1712000"}, id="flex-start for exactly 7 days"),
        pytest.param({"topology": "2x2", "machine_type": None, "slices": 3,
                      "multislice": False}, id="independent single-host pools"),
        pytest.param({"autoscaling": Autoscaling(0, 2)}, id="scale a slice between 0 and all"),
        pytest.param({"cluster_location": "us-west4-a"}, id="a zonal cluster in the pool's zone"),
        pytest.param({"release_channel": "RAPID", "gke_version": "1.33"},
                     id="a version prefix on a channel"),
        pytest.param({"preemptible": True, "capacity": Capacity.ON_DEMAND},
                     id="legacy preemptible alone"),
        pytest.param({"slices": 7500}, id="as many 2-node slices as a GKE cluster holds"),
    ],
)  # fmt: skip
def test_valid_requests_pass(overrides: dict[str, Any]) -> None:
    assert validate_spec(make_spec(**overrides)).chips >= 4


@pytest.mark.parametrize(
    ("version", "minimum", "want"),
    [
        pytest.param("1.27.4-gke.900", "1.27.4-gke.900", True, id="equal versions"),
        pytest.param("1.27.4-gke.899", "1.27.4-gke.900", False, id="an older gke build"),
        pytest.param("1.28", "1.27.4-gke.900", True, id="a newer minor prefix"),
        pytest.param("1.27", "1.27.4-gke.900", True, id="the same minor prefix is undecided"),
        pytest.param("1.26.15", "1.27.4-gke.900", False, id="an older minor"),
        pytest.param("1.33.0-gke.1712000", "1.28", True, id="a full version over a prefix"),
    ],
)
def test_at_least_version(version: str, minimum: str, want: bool) -> None:
    assert at_least_version(version, minimum) is want
