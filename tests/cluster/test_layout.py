"""The control plane's command lines, as plain data (cluster/layout.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobset_infra.cluster import pki
from jobset_infra.cluster.binaries import Tools
from jobset_infra.cluster.layout import Layout, Ports, kubeconfig, plan_processes, scheduler_config

TOOLS = Tools(*(Path(f"/bin/{n}") for n in Tools.names()))
LAYOUT = Layout(Path("/c"), Ports(2379, 2380, 6443, 10257, 10259, 10247), "token")


def argv(name: str) -> tuple[str, ...]:
    return next(p.argv for p in plan_processes(LAYOUT, TOOLS) if p.name == name)


def test_components_start_in_dependency_order() -> None:
    assert [p.name for p in plan_processes(LAYOUT, TOOLS)] == [
        "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"]


@pytest.mark.parametrize(
    ("component", "flag"),
    [
        pytest.param("kube-apiserver", "--authorization-mode=Node,RBAC",
                     id="the API server authorizes with RBAC (and the Node authorizer)"),
        pytest.param("kube-apiserver", "--anonymous-auth=false",
                     id="the API server refuses anonymous requests"),
        pytest.param("kube-apiserver", "--client-ca-file=/c/pki/ca.crt",
                     id="the API server accepts client certificates of the cluster CA"),
        pytest.param("kube-apiserver", "--token-auth-file=/c/tokens.csv",
                     id="the API server accepts the admin bearer token"),
        pytest.param("kube-apiserver", "--service-account-signing-key-file=/c/pki/sa.key",
                     id="the API server signs ServiceAccount tokens"),
        pytest.param("kube-apiserver", "--bind-address=127.0.0.1",
                     id="the API server listens on loopback only"),
        pytest.param("kube-controller-manager", "--use-service-account-credentials=true",
                     id="each controller of the controller-manager uses its own ServiceAccount"),
        pytest.param("kube-controller-manager", "--service-account-private-key-file=/c/pki/sa.key",
                     id="the token controller signs with the API server's key"),
        pytest.param("kwok", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                     id="kwok manages only the Nodes we annotate"),
        pytest.param("etcd", "--listen-client-urls=http://127.0.0.1:2379",
                     id="etcd listens on loopback"),
    ],
)
def test_component_flags(component: str, flag: str) -> None:
    assert flag in argv(component)


def test_every_listener_is_on_loopback() -> None:
    for spec in plan_processes(LAYOUT, TOOLS):
        assert spec.health_url.split("//", 1)[1].startswith("127.0.0.1:"), spec


def test_component_kubeconfigs_use_their_own_client_certificates() -> None:
    config = kubeconfig(LAYOUT, pki.SCHEDULER)
    user = config["users"][0]["user"]  # type: ignore[index]
    assert user == {"client-certificate": "/c/pki/kube-scheduler.crt",
                    "client-key": "/c/pki/kube-scheduler.key"}
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"  # type: ignore[index]


def test_the_scheduler_is_not_throttled_below_the_cluster_it_schedules() -> None:
    connection = scheduler_config(LAYOUT)["clientConnection"]
    assert connection["qps"] >= 500 and connection["burst"] >= 500  # type: ignore[index]
