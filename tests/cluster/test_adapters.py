"""How the pod runner turns our controller's Pod into a local command (cluster/adapters.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from jobset_infra.cluster.adapters import (
    JobSetControllerAdapter,
    PodContext,
    container_env,
    rewrite_path,
)
from jobset_infra.cluster.install import local_install
from jobset_infra.manifests.jobset_system import system_objects

MOUNTS = {"/etc/jobset-controller": Path("/run/pod/config"), "/tmp": Path("/run/pod/tmp")}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("--config=/etc/jobset-controller/config.yaml",
                     "--config=/run/pod/config/config.yaml", id="a flag's path under a mount"),
        pytest.param("/etc/jobset-controller", "/run/pod/config", id="the mount path itself"),
        pytest.param("/etc/jobset-controllers/x", "/etc/jobset-controllers/x",
                     id="a sibling path that only shares a prefix is left alone"),
        pytest.param("--v=2", "--v=2", id="a flag without a path is left alone"),
    ],
)
def test_rewrite_path(value: str, expected: str) -> None:
    assert rewrite_path(value, MOUNTS) == expected


def controller_pod() -> dict[str, object]:
    deployment = system_objects(local_install()).deployment
    template = deployment["spec"]["template"]
    return {"metadata": {**template["metadata"], "name": "jobset-controller-abc",
                         "namespace": "jobset-system", "uid": "u1"},
            "spec": {**template["spec"], "nodeName": "n1"}}


def test_the_controller_pod_runs_our_controller_with_its_config_and_token() -> None:
    pod = controller_pod()
    adapter = JobSetControllerAdapter()
    container = adapter.container(pod)
    assert container is not None
    context = PodContext(mounts=MOUNTS, kubeconfig=Path("/run/pod/kubeconfig"),
                         ports=[4001, 4002])
    command = adapter.command(pod, container, context)
    assert command.argv[:3] == (sys.executable, "-m", "jobset_infra.controller.runtime.main")
    assert "--config=/run/pod/config/config.yaml" in command.argv
    assert "--kubeconfig=/run/pod/kubeconfig" in command.argv
    assert "--health-probe-bind-address=127.0.0.1:4001" in command.argv
    assert command.env["POD_NAME"] == "jobset-controller-abc"
    assert command.env["POD_NAMESPACE"] == "jobset-system"


def test_a_pod_of_someone_else_is_not_ours() -> None:
    pod = {"metadata": {"name": "x"}, "spec": {"containers": [{"name": "app", "image": "a:1"}]}}
    assert JobSetControllerAdapter().container(pod) is None


def test_env_takes_values_and_downward_api_fields() -> None:
    pod = {"metadata": {"name": "p", "namespace": "n", "uid": "u"}, "spec": {"nodeName": "node"}}
    container = {"env": [
        {"name": "A", "value": "1"},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]}
    assert container_env(pod, container, "127.0.0.1") == {"A": "1", "NODE": "node",
                                                          "IP": "127.0.0.1"}
