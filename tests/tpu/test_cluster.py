"""validate_cluster_spec: rule 14-15 cluster prerequisites, each naming its argument."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from jobset_infra.tpu.cluster import (
    ClusterSpecError,
    GkeClusterSpec,
    validate_cluster_spec,
    vcpus_of,
)

SPEC = GkeClusterSpec(project="my-project", location="us-west4")


@pytest.mark.parametrize(
    ("overrides", "want_field", "want_message"),
    [
        pytest.param({"project": "X"}, "project", "is not a GCP project id", id="a bad project id"),
        pytest.param({"location": "us-west4-a-b"}, "location", "not a GCP region or zone",
                     id="a malformed location"),
        pytest.param({"name": "Train_1"}, "name", "lowercase letters", id="a bad cluster name"),
        pytest.param({"release_channel": "FAST"}, "release_channel", "not one of RAPID",
                     id="an unknown release channel"),
        pytest.param({"release_channel": None, "version": "1.27.9"}, "version",
                     "older than 1.28", id="a version that needs privileged TPU pods"),
        pytest.param({"system_pool_machine_type": "e2-small"}, "system_pool_machine_type",
                     "too small", id="a shared-core system pool"),
        pytest.param({"system_pool_machine_type": "n2-standard-1"}, "system_pool_machine_type",
                     "too small", id="a one-vCPU system pool"),
        pytest.param({"system_pool_machine_type": "custom"}, "system_pool_machine_type",
                     "not a predefined machine type", id="an unparseable machine type"),
        pytest.param({"system_pool_zones": ("us-east1-b",)}, "system_pool_zones",
                     "not a zone of the cluster's region us-west4", id="a system zone elsewhere"),
        pytest.param({"private_nodes": True, "master_ipv4_cidr_block": "172.16.0.0/24"},
                     "master_ipv4_cidr_block", "must be a /28", id="a control plane range not /28"),
    ],
)  # fmt: skip
def test_invalid_specs_name_the_argument(
    overrides: dict[str, Any], want_field: str, want_message: str
) -> None:
    with pytest.raises(ClusterSpecError, match=re.escape(want_message)) as caught:
        validate_cluster_spec(replace(SPEC, **overrides))
    assert caught.value.field == want_field


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({}, id="the defaults"),
        pytest.param({"private_nodes": True, "create_cloud_nat": False, "existing_egress": True},
                     id="private nodes behind an existing NAT"),
        pytest.param({"location": "us-west4-a", "system_pool_zones": ("us-west4-a",)},
                     id="a zonal cluster"),
        pytest.param({"release_channel": None, "version": "1.33"}, id="a pinned minor version"),
        pytest.param({"system_pool_machine_type": "n2-highmem-2"}, id="a two-vCPU highmem pool"),
    ],
)  # fmt: skip
def test_valid_specs_pass(overrides: dict[str, Any]) -> None:
    validate_cluster_spec(replace(SPEC, **overrides))


@pytest.mark.parametrize(
    ("machine_type", "want"),
    [
        pytest.param("e2-standard-4", 4, id="e2 standard"),
        pytest.param("n2d-highcpu-16", 16, id="n2d highcpu"),
        pytest.param("c3-highmem-8", 8, id="c3 highmem"),
        pytest.param("e2-medium", 0, id="shared core"),
    ],
)
def test_vcpus_of(machine_type: str, want: int) -> None:
    assert vcpus_of(machine_type) == want


def test_derived_values() -> None:
    assert SPEC.region == "us-west4"
    assert replace(SPEC, location="us-west4-b").region == "us-west4"
    assert SPEC.workload_pool == "my-project.svc.id.goog"
    assert SPEC.auto_upgrade is True
    assert replace(SPEC, release_channel=None, version="1.33").auto_upgrade is False
