"""GkeCluster under Pulumi mocks: secure defaults, system pool, provider, and errors at preview."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
import yaml

from jobset_infra.components.gke_cluster import GkeCluster
from jobset_infra.plan.offline import MOCK_CA_B64, MOCK_GKE_ENDPOINT, ProgramError
from jobset_infra.tpu.cluster import NODE_OAUTH_SCOPES, GkeClusterSpec
from tests.components.pulumi_harness import (
    GCP_CLUSTER,
    GCP_IAM_MEMBER,
    GCP_NODE_POOL,
    GCP_SERVICE_ACCOUNT,
    K8S_PROVIDER,
    ComponentRun,
    run_component,
)

SPEC = GkeClusterSpec(project="my-project", location="us-west4", name="train")
NODE_SA = "train-nodes@my-project.iam.gserviceaccount.com"
OUTPUTS = ["name", "endpoint", "kubeconfig", "node_service_account"]


def _build(spec: GkeClusterSpec = SPEC) -> ComponentRun[GkeCluster]:
    return run_component(lambda: GkeCluster("gke", spec), outputs=OUTPUTS)


def _want_node_config() -> dict[str, Any]:
    return {
        "machineType": "e2-standard-4",
        "serviceAccount": NODE_SA,
        "oauthScopes": list(NODE_OAUTH_SCOPES),
        "shieldedInstanceConfig": {"enableSecureBoot": True, "enableIntegrityMonitoring": True},
        "labels": {"jobset-infra/pool": "system"},
        "workloadMetadataConfig": {"mode": "GKE_METADATA"},
    }


def test_default_cluster_inputs_pin_the_secure_defaults() -> None:
    result = _build()
    assert dict(result.inputs(GCP_CLUSTER, "gke")) == {
        "name": "train",
        "project": "my-project",
        "location": "us-west4",
        "network": "default",
        "removeDefaultNodePool": True,
        "initialNodeCount": 1,
        "nodeConfig": _want_node_config(),
        "releaseChannel": {"channel": "REGULAR"},
        "networkingMode": "VPC_NATIVE",
        "ipAllocationPolicy": {},
        "datapathProvider": "ADVANCED_DATAPATH",
        "addonsConfig": {
            "gcsFuseCsiDriverConfig": {"enabled": True},
            "gcePersistentDiskCsiDriverConfig": {"enabled": True},
        },
        "masterAuth": {"clientCertificateConfig": {"issueClientCertificate": False}},
        "enableLegacyAbac": False,
        "enableShieldedNodes": True,
        "deletionProtection": True,
        "workloadIdentityConfig": {"workloadPool": "my-project.svc.id.goog"},
    }  # never enable_tpu / tpu_config: those are the legacy TPU-node integration


def test_system_pool_runs_the_controllers_on_secure_nodes() -> None:
    result = _build()
    assert dict(result.inputs(GCP_NODE_POOL, "gke-system")) == {
        "name": "system",
        "project": "my-project",
        "cluster": "train",
        "location": "us-west4",
        "nodeCount": 1,
        "management": {"autoRepair": True, "autoUpgrade": True},
        "nodeConfig": _want_node_config(),
    }


def test_node_service_account_has_only_least_privilege_roles() -> None:
    result = _build()
    account = result.resource(GCP_SERVICE_ACCOUNT, "gke-nodes")
    assert account.inputs["accountId"] == "train-nodes"
    roles = sorted(
        (m.inputs["role"], m.inputs["member"]) for m in result.of_type(GCP_IAM_MEMBER)
    )
    assert roles == [
        ("roles/artifactregistry.reader", f"serviceAccount:{NODE_SA}"),
        ("roles/container.defaultNodeServiceAccount", f"serviceAccount:{NODE_SA}"),
    ]
    assert result.values["node_service_account"] == NODE_SA


def test_an_existing_node_service_account_is_used_as_is() -> None:
    result = _build(replace(SPEC, node_service_account="mine@p.iam.gserviceaccount.com"))
    assert result.of_type(GCP_SERVICE_ACCOUNT) == []
    assert result.of_type(GCP_IAM_MEMBER) == []
    pool = result.inputs(GCP_NODE_POOL, "gke-system")
    assert pool["nodeConfig"]["serviceAccount"] == "mine@p.iam.gserviceaccount.com"


def test_outputs_and_a_secret_exec_plugin_kubeconfig() -> None:
    result = _build()
    assert result.values["name"] == "train"
    assert result.values["endpoint"] == MOCK_GKE_ENDPOINT
    assert result.secret["kubeconfig"] is True
    kubeconfig = yaml.safe_load(result.values["kubeconfig"])
    assert kubeconfig["current-context"] == "gke_my-project_us-west4_train"
    assert kubeconfig["clusters"][0]["cluster"] == {
        "server": f"https://{MOCK_GKE_ENDPOINT}",
        "certificate-authority-data": MOCK_CA_B64,
    }
    user = kubeconfig["users"][0]["user"]
    assert "auth-provider" not in user
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert user["exec"]["apiVersion"] == "client.authentication.k8s.io/v1beta1"


def test_provider_uses_the_kubeconfig_after_the_system_pool_exists() -> None:
    result = _build()
    provider = result.resource(K8S_PROVIDER, "gke-k8s")
    assert provider.parent_type == "jobset-infra:index:GkeCluster"
    assert result.resource(GCP_NODE_POOL, "gke-system").urn in provider.dependencies
    assert "kubeconfig" in provider.inputs
    assert "gke-gcloud-auth-plugin" in str(provider.inputs["kubeconfig"])
    every_child = [r for r in result.run.registrations if r.type != "jobset-infra:index:GkeCluster"]
    assert {r.parent_type for r in every_child} == {"jobset-infra:index:GkeCluster"}


def test_private_nodes_get_a_private_control_plane_peering_and_cloud_nat() -> None:
    spec = replace(SPEC, private_nodes=True, master_authorized_networks=("10.0.0.0/8",))
    result = _build(spec)
    cluster = result.inputs(GCP_CLUSTER, "gke")
    assert cluster["privateClusterConfig"] == {
        "enablePrivateNodes": True,
        "enablePrivateEndpoint": False,
        "masterIpv4CidrBlock": "172.16.0.32/28",
    }
    assert cluster["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [{"cidrBlock": "10.0.0.0/8", "displayName": "authorized-0"}]
    }
    nat = result.inputs("gcp:compute/routerNat:RouterNat", "gke-nat")
    assert (nat["region"], nat["router"], nat["natIpAllocateOption"]) == (
        "us-west4",
        "gke-router",
        "AUTO_ONLY",
    )


def test_a_pinned_version_has_no_channel_and_no_auto_upgrade() -> None:
    result = _build(replace(SPEC, release_channel=None, version="1.33.5-gke.1080000"))
    cluster = result.inputs(GCP_CLUSTER, "gke")
    assert cluster["releaseChannel"] == {"channel": "UNSPECIFIED"}
    assert cluster["minMasterVersion"] == "1.33.5-gke.1080000"
    pool = result.inputs(GCP_NODE_POOL, "gke-system")
    assert pool["version"] == "1.33.5-gke.1080000"
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": False}


@pytest.mark.parametrize(
    ("overrides", "want_message"),
    [
        pytest.param({"system_pool_machine_type": "e2-medium"},
                     "system_pool_machine_type: e2-medium is too small",
                     id="rule 15: a shared-core system pool"),
        pytest.param({"system_pool_node_count": 0}, "system_pool_node_count: the default node pool",
                     id="rule 15: no system nodes once the default pool is removed"),
        pytest.param({"workload_identity": False},
                     "gcs_fuse_csi_driver: the GCS FUSE CSI driver authenticates through Workload",
                     id="rule 15: GCS FUSE without Workload Identity"),
        pytest.param({"private_nodes": True, "create_cloud_nat": False},
                     "create_cloud_nat: private nodes have no route to registry.k8s.io",
                     id="rule 15: private nodes without egress"),
        pytest.param({"version": "1.33.5-gke.1080000"}, "release_channel: choose exactly one",
                     id="rule 14: a channel and a pinned version"),
        pytest.param({"release_channel": None}, "release_channel: choose exactly one",
                     id="rule 14: neither a channel nor a version"),
        pytest.param({"location": "mars"}, "location: 'mars' is not a GCP region",
                     id="a location that is not a region or zone"),
    ],
)  # fmt: skip
def test_invalid_cluster_fails_at_preview(overrides: dict[str, Any], want_message: str) -> None:
    with pytest.raises(ProgramError, match=f"^{re.escape(want_message)}"):
        _build(replace(SPEC, **overrides))


def test_a_config_mapping_builds_the_same_cluster() -> None:
    config = {"project": "my-project", "location": "us-west4", "name": "train"}
    from_config = run_component(lambda: GkeCluster("gke", config))
    assert from_config.inputs(GCP_CLUSTER, "gke") == _build().inputs(GCP_CLUSTER, "gke")
    with pytest.raises(ProgramError, match=r"^system_pool_nodes: unknown field; did you mean"):
        run_component(lambda: GkeCluster("gke", {**config, "system_pool_nodes": 3}))


# --- arguments wired in from other resources (Outputs) ------------------------------------------

VPC = "https://www.googleapis.com/compute/v1/projects/net-host/global/networks/vpc"
SUBNET = "https://www.googleapis.com/compute/v1/projects/net-host/regions/mock/subnetworks/tpu"


def test_a_vpcs_self_link_and_an_accounts_email_wire_into_the_cluster() -> None:
    """As in any Pulumi program: the VPC, subnet and node identity are other resources."""
    import pulumi_gcp as gcp

    def build() -> GkeCluster:
        vpc = gcp.compute.Network("vpc", project="net-host", auto_create_subnetworks=False)
        subnet = gcp.compute.Subnetwork("tpu", project="net-host", network=vpc.id,
                                        region="us-west4", ip_cidr_range="10.0.0.0/20")
        nodes = gcp.serviceaccount.Account("nodes", project="my-project", account_id="gke-nodes")
        spec = replace(SPEC, network=vpc.self_link, subnetwork=subnet.self_link,
                       node_service_account=nodes.email)
        return GkeCluster("gke", spec)

    result = run_component(build, outputs=["node_service_account"])
    cluster = result.inputs(GCP_CLUSTER, "gke")
    assert (cluster["network"], cluster["subnetwork"]) == (VPC, SUBNET)
    email = "gke-nodes@my-project.iam.gserviceaccount.com"
    assert cluster["nodeConfig"]["serviceAccount"] == email
    assert result.values["node_service_account"] == email
    # Given an account, the component makes none of its own.
    assert [r.name for r in result.run.of_type(GCP_SERVICE_ACCOUNT)] == ["nodes"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        pytest.param("project", "Not A Project", "project: 'Not A Project' is not a GCP project id",
                     id="a project id from another resource is checked when it resolves"),
        pytest.param("network", 5, "network: Input should be a valid string",
                     id="a network output of the wrong type is named"),
    ],
)
def test_a_wrong_wired_in_value_fails_when_it_resolves_naming_the_field(
    field: str, value: object, message: str
) -> None:
    import pulumi

    def build() -> GkeCluster:
        return GkeCluster("gke", replace(SPEC, **{field: pulumi.Output.from_input(value)}))

    with pytest.raises(ProgramError, match=re.escape(message)):
        run_component(build, outputs=["name"])


def test_a_wrong_plain_value_still_fails_before_anything_is_registered() -> None:
    with pytest.raises(ProgramError, match=re.escape("project: 'Not A Project' is not a GCP")):
        run_component(lambda: GkeCluster("gke", replace(SPEC, project="Not A Project")))
