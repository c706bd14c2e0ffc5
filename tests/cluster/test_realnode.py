"""The real nodes' plan and configuration (pure): addresses, the network rule, each component's
configuration (cluster/realnode.py, cluster/nodeconfig.py)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from jobset_infra.cluster import pki
from jobset_infra.cluster.binaries import Tools
from jobset_infra.cluster.layout import Layout, Ports, plan_processes
from jobset_infra.cluster.nodeconfig import (
    cni_config,
    containerd_config,
    corefile,
    kube_proxy_config,
    kubelet_config,
    process_specs,
)
from jobset_infra.cluster.realnode import (
    MAX_NODES,
    POD_NETWORK,
    SERVICE_NETWORK,
    RealNodeError,
    RealNodes,
    choose_slot,
    footprint,
    from_state,
    needed_ports,
    node_network,
    plan,
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
    assert real.apiserver_address == "198.51.100.2"  # the namespace's end of its link
    assert real.kubernetes_service_ip == "198.19.240.1"
    assert SERVICE_NETWORK.subnet_of(POD_NETWORK)
    assert not any(n.subnet.overlaps(SERVICE_NETWORK) for n in _plan(MAX_NODES).nodes)


@pytest.mark.parametrize("count", [0, MAX_NODES + 1])
def test_a_node_count_out_of_range_is_refused_naming_the_flag(count: int) -> None:
    with pytest.raises(RealNodeError, match="--real-nodes must be between 1 and 31"):
        plan(LAYOUT.folder, count, list(range(needed_ports(max(count, 1)))))


def test_the_plan_survives_the_state_file() -> None:
    real = plan(LAYOUT.folder, 2, list(range(100, 100 + needed_ports(2))), slot=5)
    assert from_state(LAYOUT.folder, real.to_state()) == real


def test_each_cluster_has_a_namespace_and_a_slash_30_link_of_test_net_2() -> None:
    real = plan(LAYOUT.folder, 1, list(range(100, 100 + needed_ports(1))), slot=3)
    key = real.runtime.name
    assert (real.netns, real.host_link) == (f"jsi-{key}", f"jsh{key}")
    assert len(real.host_link) <= 15  # a Linux interface name
    assert (str(real.link), real.host_address, real.address) == (
        "198.51.100.12/30", "198.51.100.13", "198.51.100.14")
    # the pod network is the same in every cluster: it lives in the cluster's namespace
    assert real.nodes[0].gateway == _plan(1).nodes[0].gateway == "198.18.0.1"


def test_a_slot_is_the_lowest_no_cluster_holds_and_the_machine_may_not_use_the_range() -> None:
    host = [("192.0.2.2/24", "address of eth0"), ("198.51.100.1/30", "address of jsh0a1b2c3d4e"),
            ("198.51.100.0/30", "route via jsh0a1b2c3d4e"), ("0.0.0.0/0", "route via eth0")]
    assert choose_slot(host, reserved=set()) == 1
    assert choose_slot(host, reserved={1, 2}) == 3
    with pytest.raises(RealNodeError, match=r"198\.51\.100\.0/24 \(route via tun0\)"):
        choose_slot([("198.51.100.0/24", "route via tun0")], reserved=set())
    with pytest.raises(RealNodeError, match="all 64 real-node clusters"):
        choose_slot([], reserved=set(range(64)))


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


def test_with_real_nodes_every_component_listens_on_the_namespaces_link_address_only(
) -> None:
    tools = Tools(*(Path(f"/b/{n}") for n in Tools.names()))
    loopback = plan_processes(LAYOUT, tools)[1].argv
    assert "--bind-address=127.0.0.1" in loopback
    assert "--endpoint-reconciler-type=none" in loopback
    assert LAYOUT.url == "https://127.0.0.1:3"
    assert {s.netns for s in plan_processes(LAYOUT, tools)} == {None}
    real = _plan(2)
    layout = Layout(Path("/c"), LAYOUT.ports, "t", node_network(real))
    specs = plan_processes(layout, tools)
    argv = specs[1].argv
    assert "--advertise-address=198.51.100.2" in argv
    # one address, the namespace's end of its link (never 0.0.0.0), which the machine dials
    assert [a for a in argv if a.startswith("--bind-address=")] == [
        "--bind-address=198.51.100.2"]
    assert layout.url == "https://198.51.100.2:3"
    assert [s.health_url.split("/")[2] for s in specs] == [
        f"198.51.100.2:{p}" for p in (1, 3, 4, 5, 6)]
    bins = {name: Path(f"/b/{name}") for name in ("containerd", "kubelet", "kube-proxy",
                                                  "coredns")}
    nodes = process_specs(layout, real, bins)
    assert {s.netns for s in (*specs, *nodes)} == {f"/run/netns/jsi-{real.runtime.name}"}
    assert {s.health_url.split("/")[2].split(":")[0] for s in nodes if s.health_url} == {
        "198.51.100.2"}
    assert "--endpoint-reconciler-type=none" not in argv
    assert f"--service-cluster-ip-range={SERVICE_NETWORK}" in argv
    assert any(a.startswith("--kubelet-client-certificate=") for a in argv)
    # An aggregation layer (Kueue's visibility API from its Pod), whose proxy identity alone may
    # name users in headers, and Services of APIServices and webhooks dialled at their Pods.
    assert "--requestheader-allowed-names=front-proxy-client" in argv
    assert "--proxy-client-cert-file=/c/pki/front-proxy-client.crt" in argv
    assert "--enable-aggregator-routing=true" in argv
    assert not any(a.startswith(("--requestheader", "--proxy-client", "--enable-aggregator"))
                   for a in plan_processes(LAYOUT, tools)[1].argv)  # kwok only: none


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


def test_a_system_node_registers_tainted_and_labelled_and_workload_nodes_do_not() -> None:
    from jobset_infra.cluster.nodeconfig import kubelet_argv

    ports = list(range(100, 100 + needed_ports(1)))
    system = plan(LAYOUT.folder, 1, ports, system=True)
    assert from_state(LAYOUT.folder, system.to_state()) == system
    argv = kubelet_argv(system.nodes[0], Path("/b/kubelet"), system.system)
    assert "--register-with-taints=jobset-infra.dev/system-node=true:NoSchedule" in argv
    assert ("--node-labels=jobset-infra.dev/real-node=true,jobset-infra.dev/system-node=true,"
            "cloud.google.com/gke-nodepool=system-pool") in argv
    workload = kubelet_argv(_plan(1).nodes[0], Path("/b/kubelet"))
    assert not any(a.startswith("--register-with-taints") for a in workload)
    assert not any("system-node" in a for a in workload)


def test_the_controller_on_a_system_node_selects_and_tolerates_it() -> None:
    from jobset_infra.cluster.install import system_node_install
    from jobset_infra.manifests.controller import deployment

    image = "jobset-infra.local/jobset-controller@sha256:" + "0" * 64
    pod = deployment(system_node_install(image, replicas=1))["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"jobset-infra.dev/system-node": "true"}
    assert pod["tolerations"] == [{"key": "jobset-infra.dev/system-node", "operator": "Equal",
                                   "value": "true", "effect": "NoSchedule"}]
    assert pod["containers"][0]["image"] == image
