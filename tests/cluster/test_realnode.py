"""The real nodes' plan (pure): addresses, the network rule, each component's configuration."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from jobset_infra.cluster import pki
from jobset_infra.cluster.binaries import Tools
from jobset_infra.cluster.layout import Layout, Ports, plan_processes
from jobset_infra.cluster.realnode import (
    MAX_NODES,
    POD_NETWORK,
    SERVICE_NETWORK,
    RealNodeError,
    RealNodes,
    cni_config,
    collisions,
    containerd_config,
    corefile,
    footprint,
    from_state,
    kube_proxy_config,
    kubelet_config,
    needed_ports,
    node_network,
    plan,
    process_specs,
)
from jobset_infra.cluster.stale import Record, is_stale

LAYOUT = Layout(Path("/c"), Ports(1, 2, 3, 4, 5, 6), "t")


def _plan(count: int = 2) -> RealNodes:
    return plan(LAYOUT.folder, count, list(range(100, 100 + needed_ports(count))))


def test_each_node_owns_a_slash_20_of_the_benchmarking_range_and_services_the_last() -> None:
    real = _plan(3)
    assert [str(n.subnet) for n in real.nodes] == ["198.18.0.0/20", "198.18.16.0/20",
                                                   "198.18.32.0/20"]
    assert [n.gateway for n in real.nodes] == ["198.18.0.1", "198.18.16.1", "198.18.32.1"]
    assert real.bridges == ("jsi0", "jsi1", "jsi2")
    assert real.apiserver_address == "198.18.0.1"
    assert real.kubernetes_service_ip == "198.19.240.1"
    assert SERVICE_NETWORK.subnet_of(POD_NETWORK)
    assert not any(n.subnet.overlaps(SERVICE_NETWORK) for n in _plan(MAX_NODES).nodes)


@pytest.mark.parametrize("count", [0, MAX_NODES + 1])
def test_a_node_count_out_of_range_is_refused_naming_the_flag(count: int) -> None:
    with pytest.raises(RealNodeError, match="--real-nodes must be between 1 and 31"):
        plan(LAYOUT.folder, count, list(range(needed_ports(max(count, 1)))))


def test_the_plan_survives_the_state_file() -> None:
    real = _plan(2)
    assert from_state(LAYOUT.folder, real.to_state()) == real


def test_an_address_or_route_of_the_host_in_the_range_is_a_collision() -> None:
    real = _plan(1)
    host = [("192.0.2.2/24", "address of eth0"), ("0.0.0.0/0", "route via eth0"),
            ("198.19.0.0/16", "route via tun0"), ("10.0.0.0/8", "route via x")]
    assert collisions(real, host) == ["198.19.0.0/16 (route via tun0)"]
    assert collisions(real, [("198.18.0.1/20", "address of jsi0")]) == [
        "198.18.0.0/20 (address of jsi0)"]


def test_pods_get_one_route_to_the_pod_network_no_default_and_no_masquerade() -> None:
    node = _plan(1).nodes[0]
    conf = cni_config(node)
    bridge = conf["plugins"][0]
    assert bridge["bridge"] == "jsi0"
    # Gateway address and forwarding are ours to set, on our bridge only: not the plugin's.
    assert bridge["isGateway"] is False and bridge["isDefaultGateway"] is False
    assert bridge["ipMasq"] is False
    assert bridge["ipam"]["routes"] == [{"dst": "198.18.0.0/15", "gw": "198.18.0.1"}]
    assert bridge["ipam"]["ranges"] == [[{"subnet": "198.18.0.0/20", "gateway": "198.18.0.1"}]]


def test_coredns_serves_cluster_local_on_the_gateways_and_forwards_nothing() -> None:
    text = corefile(_plan(2), Path("/k"))
    assert "bind 198.18.0.1 198.18.16.1" in text
    assert "kubernetes cluster.local in-addr.arpa ip6.arpa" in text
    assert "forward" not in text and "proxy" not in text


def test_the_kubelet_runs_on_cgroup_v1_with_cgroupfs_and_no_host_resolver() -> None:
    node = _plan(1).nodes[0]
    config = kubelet_config(LAYOUT, node)
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["cgroupRoot"] == node.cgroup and node.cgroup.startswith("/jobset-infra-")
    assert config["clusterDNS"] == ["198.18.0.1"]
    assert config["resolvConf"] == ""
    assert config["authentication"]["anonymous"]["enabled"] is False
    assert config["containerRuntimeEndpoint"] == f"unix://{node.socket}"
    assert len(str(node.socket)) < 100  # a unix socket's path has at most 107 bytes


def test_containerd_uses_debians_runc_cgroupfs_our_cni_and_the_imported_pause() -> None:
    node = _plan(1).nodes[0]
    text = containerd_config(node, Path("/tools/cni"), "jobset-infra.local/pause:0.1.0")
    assert 'BinaryName = "/usr/sbin/runc"' in text
    assert "SystemdCgroup = false" in text
    assert 'bin_dirs = ["/tools/cni"]' in text
    assert 'sandbox = "jobset-infra.local/pause:0.1.0"' in text
    assert "netns_mounts_under_state_dir = true" in text


def test_kube_proxy_uses_nftables_and_node_ports_only_on_the_gateways() -> None:
    config = kube_proxy_config(LAYOUT, _plan(2))
    assert config["mode"] == "nftables"
    assert config["nodePortAddresses"] == ["198.18.0.1/32", "198.18.16.1/32"]
    assert config["conntrack"]["maxPerCore"] == 0


def test_processes_start_containerd_before_each_kubelet_then_proxy_and_dns() -> None:
    bins = {name: Path(f"/b/{name}") for name in ("containerd", "kubelet", "kube-proxy",
                                                  "coredns")}
    names = [s.name for s in process_specs(LAYOUT, _plan(2), bins)]
    assert names == ["containerd-0", "kubelet-0", "containerd-1", "kubelet-1", "kube-proxy",
                     "coredns"]


def test_with_real_nodes_the_api_server_listens_on_the_gateway_only_and_serves_the_endpoint(
) -> None:
    tools = Tools(*(Path(f"/b/{n}") for n in Tools.names()))
    loopback = plan_processes(LAYOUT, tools)[1].argv
    assert "--bind-address=127.0.0.1" in loopback
    assert "--endpoint-reconciler-type=none" in loopback
    assert LAYOUT.url == "https://127.0.0.1:3"
    layout = Layout(Path("/c"), LAYOUT.ports, "t", node_network(_plan(2)))
    argv = plan_processes(layout, tools)[1].argv
    assert "--advertise-address=198.18.0.1" in argv
    # one address, the first gateway (never 0.0.0.0), and every client of the machine dials it
    assert [a for a in argv if a.startswith("--bind-address=")] == [
        "--bind-address=198.18.0.1"]
    assert layout.url == "https://198.18.0.1:3"
    assert plan_processes(layout, tools)[1].health_url == "https://198.18.0.1:3/readyz"
    assert "--endpoint-reconciler-type=none" not in argv
    assert f"--service-cluster-ip-range={SERVICE_NETWORK}" in argv
    assert any(a.startswith("--kubelet-client-certificate=") for a in argv)


def test_the_serving_certificate_names_the_gateway_and_the_service_address(
        tmp_path: Path) -> None:
    import datetime

    from cryptography import x509

    made = pki.write_pki(tmp_path, datetime.datetime.now(datetime.UTC),
                         serving_ips=("198.18.0.1", "198.19.240.1"))
    cert = x509.load_pem_x509_certificate(made.serving_cert.read_bytes())
    ips = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value \
        .get_values_for_type(x509.IPAddress)
    assert {ipaddress.ip_address("198.18.0.1"), ipaddress.ip_address("198.19.240.1")} <= set(ips)


def test_beside_real_nodes_kwok_keeps_only_tainted_pools() -> None:
    from jobset_infra.cluster.realnode import beside_real_nodes
    from jobset_infra.tpu.node_pools import parse_nodes

    tpu = parse_nodes("v5e-2x4:2")
    assert beside_real_nodes(tpu) == tpu
    assert beside_real_nodes(()) == ()
    with pytest.raises(RealNodeError, match=r"untainted kwok pool 'default-pool'.*no --nodes"):
        beside_real_nodes(parse_nodes("v5e-2x4:1,cpu:3"))


def test_the_nodes_process_names_are_those_of_their_specs() -> None:
    real = _plan(2)
    bins = {name: Path(f"/b/{name}") for name in ("containerd", "kubelet", "kube-proxy",
                                                  "coredns")}
    assert real.process_names() == {s.name for s in process_specs(LAYOUT, real, bins)}


def test_a_cluster_is_stale_once_its_owner_or_every_process_it_started_is_gone() -> None:
    # owned (a test's process, a `cluster up` still running)
    assert is_stale(owner_alive=False, processes_alive=[True, True])  # orphaned: swept
    assert not is_stale(owner_alive=True, processes_alive=[])  # still starting
    assert not is_stale(owner_alive=True, processes_alive=[True, False])
    assert is_stale(owner_alive=True, processes_alive=[False, False])  # all killed
    # handed over by `cluster up`: only once nothing of it runs
    assert not is_stale(owner_alive=None, processes_alive=[True, False])
    assert is_stale(owner_alive=None, processes_alive=[False, False])


def test_a_record_survives_its_file_and_a_footprint_needs_no_ports() -> None:
    record = Record(Path("/c"), 2, (41, 12345))
    assert Record.from_json(record.to_json()) == record
    assert Record.from_json(Record(Path("/c"), 1, None).to_json()).owner is None
    left = footprint(Path("/c"), 2)
    assert left.bridges == _plan(2).bridges
    assert [n.cgroup for n in left.nodes] == [n.cgroup for n in _plan(2).nodes]
    assert left.runtime == _plan(2).runtime and left.folder == Path("/c")


def test_up_with_real_nodes_sweeps_killed_clusters_before_it_claims_its_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from jobset_infra.cluster import local, nodeup

    class SweptError(Exception):
        pass

    def sweep(progress: object) -> list[Path]:
        raise SweptError

    monkeypatch.setattr(nodeup, "node_binaries", lambda env=None: {})
    monkeypatch.setattr(local, "sweep_stale", sweep)
    tools = Tools(*(Path(f"/b/{n}") for n in Tools.names()))
    options = local.ClusterOptions(nodes="", folder=tmp_path / "c", real_nodes=1)
    with pytest.raises(SweptError):
        local.start_cluster(options, progress=lambda _line: None, tools=tools)
    assert not (tmp_path / "c").exists()
