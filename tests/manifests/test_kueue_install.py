"""Kueue's install: the JobSet integration is on, the chart is pinned, bad versions are named."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from jobset_infra.manifests.kueue_install import KUEUE_CHART, helm_values, manager_configuration
from jobset_infra.manifests.kueue_spec import (
    KueueInstall,
    KueueSpecError,
    QueueSpec,
    check_queue_namespaces,
    parse_kueue_install,
)


def test_configuration_enables_the_jobset_integration() -> None:
    config = manager_configuration(KueueInstall())
    assert config["apiVersion"] == "config.kueue.x-k8s.io/v1beta2"
    assert config["kind"] == "Configuration"
    assert "jobset.x-k8s.io/jobset" in config["integrations"]["frameworks"]


def test_helm_values_carry_the_configuration_as_yaml_text() -> None:
    install = KueueInstall(replicas=2, manage_jobs_without_queue_name=True)
    values = helm_values(install)
    text = values["managerConfig"]["controllerManagerConfigYaml"]
    assert isinstance(text, str)
    assert yaml.safe_load(text) == manager_configuration(install)
    assert values["controllerManager"]["replicas"] == 2
    assert values["controllerManager"]["podDisruptionBudget"]["enabled"] is True
    single = helm_values(KueueInstall())["controllerManager"]
    assert single["podDisruptionBudget"]["enabled"] is False  # one pod: a PDB would block drains
    assert yaml.safe_load(text)["manageJobsWithoutQueueName"] is True


def test_the_chart_is_kueues_oci_chart_at_a_pinned_version() -> None:
    assert KUEUE_CHART == "oci://registry.k8s.io/kueue/charts/kueue"
    assert KueueInstall().version == "0.19.2"


def test_resource_prefixes_excluded_by_default_can_be_turned_off() -> None:
    default = manager_configuration(KueueInstall())
    assert default["resources"]["excludeResourcePrefixes"] == ["cpu", "memory", "ephemeral-storage"]
    assert "resources" not in manager_configuration(KueueInstall(exclude_resource_prefixes=()))


def test_configuration_leaves_cert_management_to_the_chart() -> None:
    # The chart fills internalCertManagement with its own Service/Secret names only when unset.
    assert "internalCertManagement" not in manager_configuration(KueueInstall())


def test_a_system_pool_install_pins_the_image_and_selects_and_tolerates_the_pool() -> None:
    digest = "sha256:" + "0" * 64
    toleration = {"key": "pool", "operator": "Equal", "value": "system", "effect": "NoSchedule"}
    manager = helm_values(KueueInstall(
        image=f"registry.example:5000/kueue/kueue:v0.19.2@{digest}",
        node_selector={"pool": "system"}, tolerations=(toleration,)))["controllerManager"]
    # The chart renders "repository:tag": the digest rides on the tag and pins the image.
    assert manager["manager"]["image"] == {
        "repository": "registry.example:5000/kueue/kueue", "tag": f"v0.19.2@{digest}",
        "pullPolicy": "IfNotPresent"}
    assert manager["nodeSelector"] == {"pool": "system"}
    assert manager["tolerations"] == [toleration]
    default = helm_values(KueueInstall())["controllerManager"]
    assert not {"manager", "nodeSelector", "tolerations"} & set(default)  # the chart's own


@pytest.mark.parametrize(
    ("fields", "want_message"),
    [
        pytest.param({"version": "v0.19.2"}, "no leading 'v'", id="leading v"),
        pytest.param({"version": "0.14.0"}, "0.16.0 or newer", id="too old for v1beta2"),
        pytest.param({"version": "latest"}, "exact Kueue release", id="not pinned"),
        pytest.param({"release_name": "queues"}, "must contain 'kueue'", id="release name"),
        pytest.param({"namespace": "Kueue"}, "namespace", id="namespace not a DNS label"),
        pytest.param({"replicas": 0}, "replicas", id="no replicas"),
        pytest.param({"image": "jobset-infra.local/kueue@sha256:" + "a" * 64},
                     "give repository:tag", id="image without the tag the chart joins"),
        pytest.param({"image": "kueue:0.1@sha256:abc"}, "give repository:tag",
                     id="image with a short digest"),
        pytest.param({"tolerations": [{"key": "k", "operator": "In"}]}, "Equal or Exists",
                     id="toleration operator"),
        pytest.param({"chart_path": "/c", "loopback_webhooks": {"port": 19443, "ca_file": "/ca"}},
                     "loopback_webhooks is gone: .* system node; drop the key",
                     id="a stack file from before the system node"),
    ],
)
def test_bad_install_arguments_are_named(fields: dict[str, Any], want_message: str) -> None:
    with pytest.raises(KueueSpecError, match=want_message):
        parse_kueue_install(**fields)


@pytest.mark.parametrize(
    "namespace",
    [
        pytest.param("kube-system", id="kube-system"),
        pytest.param("queues-system", id="kueue's own namespace"),
    ],
)
def test_local_queues_where_kueue_does_not_manage_jobs_are_an_error(namespace: str) -> None:
    install = KueueInstall(namespace="queues-system")
    with pytest.raises(KueueSpecError, match=f"does not manage jobs in {namespace}"):
        check_queue_namespaces(QueueSpec(namespaces=("default", namespace)), install)


def test_local_queues_in_workload_namespaces_are_fine() -> None:
    check_queue_namespaces(QueueSpec(namespaces=("default", "team-a")), KueueInstall())
