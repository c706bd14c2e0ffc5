"""Real nodes of the local cluster: what runs, with which configuration, on which addresses.

Pure: `plan(folder, count)` turns the cluster folder and the number of nodes into every address,
file and command line; `nodehost` does the I/O (bridges, cgroups, image import, teardown) and
`local` starts the processes. Each node is a containerd 2 (with Debian's runc and the CNI
reference plugins) and a kubelet; the cluster has one kube-proxy and one CoreDNS, as the nodes
share this machine's network namespace (a second kube-proxy would rewrite the first's table).

The network (docs/cluster.md "Real nodes"): pods and Services live in 198.18.0.0/15, the
benchmarking range of RFC 2544 that no network routes; node i owns the /20 number i on a bridge
of its own (`jsi<i>`, gateway `.1`), Services take the last /20. Pods get one route, to
198.18.0.0/15 through their gateway: no default route, no masquerade, nothing leaves the machine.
CoreDNS answers cluster.local from the API server on every gateway and forwards nothing.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jobset_infra.api.rbac import COREDNS_RULES
from jobset_infra.cluster import pki
from jobset_infra.cluster.layout import Layout, NodeNetwork, ProcessSpec
from jobset_infra.tpu.node_pools import PoolSpec

POD_NETWORK: Final = ipaddress.IPv4Network("198.18.0.0/15")
NODE_PREFIX: Final = 20
SERVICE_NETWORK: Final = ipaddress.IPv4Network("198.19.240.0/20")
"""The last /20 of POD_NETWORK: pods reach Services through the one route they have."""
MAX_NODES: Final = 2 ** (NODE_PREFIX - POD_NETWORK.prefixlen) - 1
CLUSTER_DOMAIN: Final = "cluster.local"
BRIDGE_PREFIX: Final = "jsi"
RUNTIME_ROOT: Final = Path("/run/jobset-infra")
"""Sockets and containerd's state: a short path (a unix socket's path has 107 bytes at most,
and test folders are long); one folder per cluster, removed by `down`."""
CGROUP_PREFIX: Final = "jobset-infra-"
RUNC: Final = "/usr/sbin/runc"  # Debian's runc package
NODE_LABEL: Final = "jobset-infra.dev/real-node"
NODE_POOL_LABEL: Final = "cloud.google.com/gke-nodepool"
NODE_POOL: Final = "real-pool"
COREDNS_IDENTITY: Final = pki.Identity("coredns", "system:coredns")
PROXY_IDENTITY: Final = pki.Identity("kube-proxy", "system:kube-proxy")
APISERVER_KUBELET_CLIENT: Final = pki.Identity("apiserver-kubelet-client",
                                               "kube-apiserver-kubelet-client")
NODE_BINARIES: Final = ("kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr",
                        "bridge", "host-local", "loopback", "coredns")


class RealNodeError(ValueError):
    """A real-node request that cannot work here; the message names the fix."""


@dataclass(frozen=True)
class Node:
    """One real node: its name, subnet, bridge and folders."""

    index: int
    name: str
    subnet: ipaddress.IPv4Network
    folder: Path  # configs, kubelet's root, containerd's root (images)
    runtime: Path  # containerd's state and socket (short path)
    kubelet_port: int
    kubelet_healthz_port: int

    @property
    def gateway(self) -> str:
        return str(self.subnet[1])

    @property
    def bridge(self) -> str:
        return f"{BRIDGE_PREFIX}{self.index}"

    @property
    def cgroup(self) -> str:
        """kubelet's cgroupRoot, made in every v1 hierarchy before it starts."""
        return f"/{CGROUP_PREFIX}{self.runtime.parent.name}-{self.index}"

    @property
    def identity(self) -> pki.Identity:
        return pki.Identity(f"kubelet-{self.name}", f"system:node:{self.name}", ("system:nodes",))

    @property
    def socket(self) -> Path:
        return self.runtime / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.folder / "containerd.toml"

    @property
    def kubelet_config(self) -> Path:
        return self.folder / "kubelet.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig.yaml"

    @property
    def cni_conf_dir(self) -> Path:
        return self.folder / "cni"


@dataclass(frozen=True)
class RealNodes:
    """Every real node of one cluster, and the cluster-wide kube-proxy and CoreDNS ports."""

    folder: Path  # the cluster's folder
    nodes: tuple[Node, ...]
    runtime: Path
    proxy_healthz_port: int
    proxy_metrics_port: int
    dns_health_port: int
    dns_ready_port: int

    @property
    def apiserver_address(self) -> str:
        """Where pods reach the API server (the `kubernetes` Service's endpoint)."""
        return self.nodes[0].gateway

    @property
    def kubernetes_service_ip(self) -> str:
        return str(SERVICE_NETWORK[1])

    @property
    def bridges(self) -> tuple[str, ...]:
        return tuple(n.bridge for n in self.nodes)

    def process_names(self) -> frozenset[str]:
        """The names `process_specs` gives the nodes' processes."""
        return frozenset({*(f"{kind}-{n.index}" for n in self.nodes
                            for kind in ("containerd", "kubelet")), "kube-proxy", "coredns"})

    def to_state(self) -> dict[str, Any]:
        return {"count": len(self.nodes), "ports": {
            "kubelet": [[n.kubelet_port, n.kubelet_healthz_port] for n in self.nodes],
            "proxy": [self.proxy_healthz_port, self.proxy_metrics_port],
            "dns": [self.dns_health_port, self.dns_ready_port]}}


def runtime_folder(cluster_folder: Path) -> Path:
    key = hashlib.sha256(str(cluster_folder.resolve()).encode()).hexdigest()[:10]
    return RUNTIME_ROOT / key


def node_name(index: int) -> str:
    return f"real-node-{index}"


def plan(folder: Path, count: int, ports: list[int]) -> RealNodes:
    """The nodes of the cluster in `folder` with `count` real nodes; `ports` are free loopback
    ports, two per node then four (`needed_ports(count)` of them)."""
    if not 1 <= count <= MAX_NODES:
        raise RealNodeError(f"--real-nodes must be between 1 and {MAX_NODES}, not {count}")
    if len(ports) != needed_ports(count):
        raise ValueError(f"{needed_ports(count)} ports needed, {len(ports)} given")
    runtime = runtime_folder(folder)
    subnets = list(POD_NETWORK.subnets(new_prefix=NODE_PREFIX))
    nodes = tuple(
        Node(i, node_name(i), subnets[i], folder / "nodes" / node_name(i),
             runtime / str(i), ports[2 * i], ports[2 * i + 1])
        for i in range(count)
    )
    rest = ports[2 * count:]
    return RealNodes(folder, nodes, runtime, rest[0], rest[1], rest[2], rest[3])


def footprint(folder: Path, count: int) -> RealNodes:
    """What `count` nodes of the cluster in `folder` leave on the machine (bridges, cgroups,
    folders), without their ports: enough to tear down a cluster whose state file is gone."""
    return plan(folder, count, [0] * needed_ports(count))


def needed_ports(count: int) -> int:
    return 2 * count + 4


def from_state(folder: Path, state: Mapping[str, Any]) -> RealNodes:
    ports = state["ports"]
    flat = [p for pair in ports["kubelet"] for p in pair] + ports["proxy"] + ports["dns"]
    return plan(folder, int(state["count"]), [int(p) for p in flat])


def node_network(real: RealNodes) -> NodeNetwork:
    """The control plane's side of the node network: where the API server listens for pods
    (and for every client: `Layout.url`), and the Services' range."""
    return NodeNetwork(real.apiserver_address, str(SERVICE_NETWORK))


def collisions(real: RealNodes, host_networks: list[tuple[str, str]]) -> list[str]:
    """The host's addresses or routes (network, where) that overlap POD_NETWORK: each one a
    reason to refuse, as pods would shadow or be shadowed by them."""
    found: dict[ipaddress.IPv4Network, str] = {}
    for network, where in host_networks:
        try:
            net = ipaddress.ip_network(network, strict=False)
        except ValueError:
            continue
        if isinstance(net, ipaddress.IPv4Network) and net.overlaps(POD_NETWORK) \
                and net.prefixlen != 0 and not any(net.subnet_of(n) for n in found):
            found.setdefault(net, where)
    return [f"{net} ({where})" for net, where in found.items()]


def beside_real_nodes(pools: tuple[PoolSpec, ...]) -> tuple[PoolSpec, ...]:
    """kwok's pools of a cluster with real nodes: tainted ones only. The real nodes are the
    untainted pool that system Pods (our controller's) and workloads land on; an untainted kwok
    pool would take Pods it can never run."""
    untainted = sorted({pool.name for pool in pools if not pool.taints})
    if untainted:
        raise RealNodeError(
            f"--nodes asks for the untainted kwok pool {untainted[0]!r} beside real nodes: "
            "kwok's Nodes run no containers, and Pods meant for the real nodes would land "
            "there. Give only TPU pools (tainted) with --real-nodes, or no --nodes")
    return pools


# --- configuration files -----------------------------------------------------------------------


def kubelet_config(layout: Layout, node: Node) -> dict[str, Any]:
    """The KubeletConfiguration of one node (cgroup v1, cgroupfs, no host DNS or sysctls)."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # This machine boots cgroup v1 (hybrid) and has no systemd as PID 1: kubelet 1.35+
        # refuses v1 unless told, and only the cgroupfs driver can work without systemd.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": True,
        "cgroupRoot": node.cgroup,
        "containerRuntimeEndpoint": f"unix://{node.socket}",
        "address": node.gateway,
        "port": node.kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": node.kubelet_healthz_port,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(layout.pki.ca_cert)},
        },
        # Only the API server holds a certificate of the cluster CA that it presents here.
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [node.gateway],
        # No host resolver entries in pods: cluster.local only, nothing forwarded.
        "resolvConf": "",
        "podLogsDir": str(node.folder / "pod-logs"),
        "staticPodPath": "",
        "failSwapOn": False,
        # No registry to pull an image back from: never collect the imported ones.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "serializeImagePulls": False,
        "syncFrequency": "10s",
        "fileCheckFrequency": "10s",
        "nodeStatusReportFrequency": "20s",
        "maxPods": 110,
    }


def kubelet_argv(node: Node, kubelet: Path) -> tuple[str, ...]:
    return (
        str(kubelet), f"--config={node.kubelet_config}", f"--kubeconfig={node.kubeconfig}",
        f"--root-dir={node.folder / 'kubelet'}", f"--cert-dir={node.folder / 'kubelet-pki'}",
        f"--hostname-override={node.name}", f"--node-ip={node.gateway}",
        f"--node-labels={NODE_LABEL}=true,{NODE_POOL_LABEL}={NODE_POOL}", "--v=1",
    )


def containerd_config(node: Node, cni_bin: Path, sandbox_image: str) -> str:
    """containerd 2's config (version 3) for one node, as TOML text."""
    # runc's own state beside containerd's, not in the machine's /run/containerd.
    runtime_opts = {"BinaryName": RUNC, "SystemdCgroup": False,
                    "Root": str(node.runtime / "runc")}
    lines = [
        "version = 3",
        f"root = {_q(node.folder / 'containerd')}",
        f"state = {_q(node.runtime / 'state')}",
        # Nothing the nodes use; NRI would listen on a fixed socket of the machine's.
        'disabled_plugins = ["io.containerd.nri.v1.nri", '
        '"io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs"]',
        "[grpc]", f"  address = {_q(node.socket)}",
        "[ttrpc]", f"  address = {_q(node.runtime / 'containerd.sock.ttrpc')}",
        "[metrics]", '  address = ""',
        "[plugins.'io.containerd.internal.v1.opt']", f"  path = {_q(node.folder / 'opt')}",
        "[plugins.'io.containerd.grpc.v1.cri']",
        "  disable_tcp_service = true",
        '  stream_server_address = "127.0.0.1"',
        '  stream_server_port = "0"',
        "[plugins.'io.containerd.cri.v1.images']",
        '  snapshotter = "overlayfs"',
        "[plugins.'io.containerd.cri.v1.images'.pinned_images]",
        f"  sandbox = {_q(sandbox_image)}",
        "[plugins.'io.containerd.cri.v1.runtime']",
        "  enable_selinux = false",
        "  disable_apparmor = true",
        "  netns_mounts_under_state_dir = true",
        # These machines withhold CAP_SYS_RESOURCE even from root, so no process may lower its
        # oom_score_adj: the CRI's -998 for sandboxes (and -997 for Guaranteed pods) made runc
        # fail ("failed to update /proc/self/oom_score_adj: Permission denied"). Scores below
        # containerd's own are raised to it instead, as for rootless containerd.
        "  restrict_oom_score_adj = true",
        "[plugins.'io.containerd.cri.v1.runtime'.cni]",
        f"  bin_dirs = [{_q(cni_bin)}]",
        f"  conf_dir = {_q(node.cni_conf_dir)}",
        "  max_conf_num = 1",
        "[plugins.'io.containerd.cri.v1.runtime'.containerd]",
        '  default_runtime_name = "runc"',
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]",
        '  runtime_type = "io.containerd.runc.v2"',
        "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]",
        *(f"  {k} = {json.dumps(v)}" for k, v in runtime_opts.items()),
    ]
    return "\n".join(lines) + "\n"


def _q(value: object) -> str:
    return json.dumps(str(value))


def cni_config(node: Node) -> dict[str, Any]:
    """The node's CNI network: its own bridge (made beforehand, with the gateway address, so
    the plugin neither sets addresses nor turns on forwarding), addresses from the node's /20,
    and one route: the pod network through the gateway. No default route, no masquerade."""
    return {
        "cniVersion": "1.0.0",
        "name": f"jobset-infra-{node.bridge}",
        "plugins": [
            {
                "type": "bridge", "bridge": node.bridge, "isGateway": False,
                "isDefaultGateway": False, "ipMasq": False, "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": str(node.subnet), "gateway": node.gateway}]],
                    "routes": [{"dst": str(POD_NETWORK), "gw": node.gateway}],
                    "dataDir": str(node.folder / "cni-ipam"),
                },
            },
            {"type": "loopback"},
        ],
    }


def corefile(real: RealNodes, kubeconfig: Path) -> str:
    """CoreDNS: cluster.local (and reverse zones) from the API server, on every gateway; no
    forward plugin, so a name outside cluster.local gets no answer from beyond the machine."""
    gateways = " ".join(n.gateway for n in real.nodes)
    return "\n".join([
        ".:53 {",
        f"    bind {gateways}",
        "    errors",
        f"    health 127.0.0.1:{real.dns_health_port}",
        f"    ready 127.0.0.1:{real.dns_ready_port}",
        f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{",
        f"        kubeconfig {kubeconfig}",
        "        pods insecure",
        "        ttl 5",
        "    }",
        "    cache 5",
        "}",
    ]) + "\n"


def kube_proxy_config(layout: Layout, real: RealNodes) -> dict[str, Any]:
    """kube-proxy in nftables mode (its own table; no iptables), for the node network."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "nftables",
        "clientConnection": {"kubeconfig": str(layout.component_kubeconfig(PROXY_IDENTITY))},
        "hostnameOverride": real.nodes[0].name,
        "clusterCIDR": str(POD_NETWORK),
        "bindAddress": "127.0.0.1",
        "healthzBindAddress": f"127.0.0.1:{real.proxy_healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{real.proxy_metrics_port}",
        # Node ports only on the gateways, never on the host's own interfaces.
        "nodePortAddresses": [f"{n.gateway}/32" for n in real.nodes],
        # Leave the machine's conntrack table size alone.
        "conntrack": {"maxPerCore": 0, "min": 0},
    }


def process_specs(layout: Layout, real: RealNodes, bins: Mapping[str, Path]) -> list[
    ProcessSpec
]:
    """containerd and kubelet of each node, then kube-proxy and CoreDNS: start order."""
    specs: list[ProcessSpec] = []
    for node in real.nodes:
        specs.append(ProcessSpec(f"containerd-{node.index}", (
            str(bins["containerd"]), f"--config={node.containerd_config}",
        ), ""))
        specs.append(ProcessSpec(f"kubelet-{node.index}", kubelet_argv(node, bins["kubelet"]),
                                 f"http://127.0.0.1:{node.kubelet_healthz_port}/healthz"))
    specs.append(ProcessSpec("kube-proxy", (
        str(bins["kube-proxy"]), f"--config={layout.folder / 'kube-proxy.yaml'}", "--v=1",
    ), f"http://127.0.0.1:{real.proxy_healthz_port}/healthz"))
    specs.append(ProcessSpec("coredns", (
        str(bins["coredns"]), "-conf", str(layout.folder / "Corefile"),
    ), f"http://127.0.0.1:{real.dns_ready_port}/ready"))
    return specs


def coredns_rbac() -> list[dict[str, Any]]:
    """What CoreDNS's kubernetes plugin reads (as kubeadm grants it), for its identity."""
    name = "system:coredns"
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": name},
         "rules": [rule.to_dict() for rule in COREDNS_RULES]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": name},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": name},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                       "name": COREDNS_IDENTITY.user}]},
    ]
