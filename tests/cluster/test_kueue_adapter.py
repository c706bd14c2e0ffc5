"""The Kueue manager's Pod as a local process: its Configuration adapted, its command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.cluster import kueue_adapter
from jobset_infra.cluster.adapters import PodContext
from jobset_infra.cluster.kueue_adapter import KueueManagerAdapter, out_of_cluster_config

CHART_CONFIG: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
    "namespace": "kueue-system",
    "health": {"healthProbeBindAddress": ":8081"}, "metrics": {"bindAddress": ":8443"},
    "webhook": {"host": "127.0.0.1", "port": 19443},
    "leaderElection": {"leaderElect": True},
    "internalCertManagement": {"enable": False},
    "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
}


def _adapt(config: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return out_of_cluster_config(config, health_port=1001, metrics_port=1002, webhook_port=1003,
                                 cert_dir=Path("/p/certs"), namespace="kueue-system", **kw)


def test_probes_and_metrics_move_to_loopback_ports_of_ours() -> None:
    config = _adapt(CHART_CONFIG)
    assert config["health"]["healthProbeBindAddress"] == "127.0.0.1:1001"
    assert config["metrics"]["bindAddress"] == "127.0.0.1:1002"
    assert config["integrations"] == CHART_CONFIG["integrations"]


def test_a_loopback_webhook_keeps_the_port_its_webhook_configurations_call() -> None:
    assert _adapt(CHART_CONFIG)["webhook"] == {"host": "127.0.0.1", "port": 19443,
                                               "certDir": "/p/certs"}


def test_a_webhook_nothing_can_call_gets_a_private_port() -> None:
    config = _adapt({**CHART_CONFIG, "webhook": {"port": 9443}})
    assert config["webhook"] == {"host": "127.0.0.1", "port": 1003, "certDir": "/p/certs"}


def test_cert_rotation_is_off_and_leader_election_has_a_namespace() -> None:
    config = _adapt({**CHART_CONFIG, "internalCertManagement": {"enable": True}})
    assert config["internalCertManagement"] == {"enable": False}
    assert config["leaderElection"] == {"leaderElect": True, "resourceNamespace": "kueue-system"}


def test_the_visibility_server_is_off_in_the_config_or_on_the_flag() -> None:
    assert _adapt(CHART_CONFIG)["featureGates"] == {"VisibilityOnDemand": False}
    assert "featureGates" not in _adapt(CHART_CONFIG, gates_in_config=False)
    assert kueue_adapter._with_gates_off("--feature-gates=A=true") == (
        "--feature-gates=A=true,VisibilityOnDemand=false")


def test_the_command_runs_kueue_in_a_mount_namespace_with_the_adapted_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = tmp_path / "bin" / "kueue"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("JOBSET_INFRA_TOOLS", str(binary.parent))
    volume = tmp_path / "volumes" / "manager-config"
    volume.mkdir(parents=True)
    (volume / "controller_manager_config.yaml").write_text(yaml.safe_dump(CHART_CONFIG))
    cert, key = tmp_path / "s.crt", tmp_path / "s.key"
    cert.write_text("CERT")
    key.write_text("KEY")
    container = {"name": "manager", "args": ["--config=/controller_manager_config.yaml",
                                             "--zap-log-level=2"]}
    pod = {"metadata": {"name": "kueue-x", "namespace": "kueue-system", "uid": "u"},
           "spec": {"containers": [container]}}
    context = PodContext(
        mounts={"/controller_manager_config.yaml": volume / "controller_manager_config.yaml"},
        kubeconfig=tmp_path / "kubeconfig", ports=[1001, 1002, 1003, 1004], folder=tmp_path,
        serving=(cert, key))
    adapter = KueueManagerAdapter()
    assert adapter.container(pod) == container
    command = adapter.command(pod, container, context)
    assert command.argv[1:4] == ("--user", "--map-root-user", "--mount")
    kueue_at = command.argv.index(str(binary))
    assert command.argv[kueue_at + 1:] == (f"--config={tmp_path / 'kueue-config.yaml'}",
                                           "--zap-log-level=2",
                                           f"--kubeconfig={tmp_path / 'kubeconfig'}")
    assert command.binary == str(binary)
    assert command.ready_url == "http://127.0.0.1:1001/readyz"
    written = yaml.safe_load(command.files[tmp_path / "kueue-config.yaml"])
    assert written["webhook"]["certDir"] == str(tmp_path / "webhook-certs")
    assert command.files[tmp_path / "webhook-certs" / "tls.crt"] == b"CERT"
