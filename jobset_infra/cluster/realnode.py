"""Real nodes of the local cluster: what runs, with which configuration, on which addresses.

Pure: `plan(folder, count)` turns the cluster folder and the number of nodes into every address,
folder and port; `nodeconfig` turns that into each component's configuration and command line;
`nodehost` does the I/O (namespace, bridges, cgroups, image import, teardown) and `local` starts
the processes. Each node is a containerd 2 (with Debian's runc and the CNI reference plugins)
and a kubelet; the cluster has one kube-proxy and one CoreDNS, as its nodes share one network
namespace.

The network (docs/cluster.md "Real nodes"): every process of the cluster runs in a network
namespace of its own (`jsi-<key>`), reached from the machine over one veth pair whose /30 is a
slot of 198.51.100.0/24 (TEST-NET-2); every component listens on the namespace's end of it.
Inside, pods and Services live in 198.18.0.0/15, the benchmarking range of RFC 2544 that no
network routes; node i owns the /20 number i on a bridge of its own (`jsi<i>`, gateway `.1`),
Services take the last /20. Pods get one route, to 198.18.0.0/15 through their gateway: no
default route, no masquerade, nothing leaves the namespace. So two clusters may both use the
same pod network at once. CoreDNS answers cluster.local from the API server on every gateway
and forwards nothing.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jobset_infra.api.rbac import COREDNS_RULES
from jobset_infra.cluster import pki
from jobset_infra.cluster.layout import NodeNetwork
from jobset_infra.tpu.node_pools import PoolSpec

POD_NETWORK: Final = ipaddress.IPv4Network("198.18.0.0/15")
LINK_NETWORK: Final = ipaddress.IPv4Network("198.51.100.0/24")
"""TEST-NET-2 (RFC 5737, documentation only): the /30 of each cluster's veth pair. Not
TEST-NET-1: these machines' own network is 192.0.2.0/24."""
LINK_PREFIX: Final = 30
SLOTS: Final = 2 ** (LINK_PREFIX - LINK_NETWORK.prefixlen)
HOST_LINK_PREFIX: Final = "jsh"
NETNS_LINK: Final = "jsl0"
"""The namespace's end of the veth pair (a name inside the namespace: the same in each)."""
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
SYSTEM_NODE_LABEL: Final = "jobset-infra.dev/system-node"
"""Label and taint (`=true:NoSchedule`) of a cluster's system node (`ClusterOptions.system_node`):
only Pods that select and tolerate it (the controller's, Kueue's) run there, never a workload
meant for kwok's untainted pools."""
SYSTEM_POOL: Final = "system-pool"
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
    slot: int = 0  # its /30 of LINK_NETWORK (`choose_slot`)
    system: bool = False  # one tainted node for system Pods only (SYSTEM_NODE_LABEL)

    @property
    def netns(self) -> str:
        """The cluster's network namespace (`ip netns` name)."""
        return f"{BRIDGE_PREFIX}-{self.runtime.name}"

    @property
    def netns_path(self) -> str:
        return f"/run/netns/{self.netns}"

    @property
    def host_link(self) -> str:
        """The machine's end of the veth pair (at most 15 bytes: `jsh` and the 10-digit key)."""
        return f"{HOST_LINK_PREFIX}{self.runtime.name}"

    @property
    def link(self) -> ipaddress.IPv4Network:
        return list(LINK_NETWORK.subnets(new_prefix=LINK_PREFIX))[self.slot]

    @property
    def host_address(self) -> str:
        return str(self.link[1])

    @property
    def address(self) -> str:
        """The namespace's end of the veth pair: every component listens there (the machine
        reaches them over the pair), and the API server is the `kubernetes` Service's endpoint
        there (a pod's packet to the Service address is turned into a local one)."""
        return str(self.link[2])

    @property
    def apiserver_address(self) -> str:
        """Where pods reach the API server (the `kubernetes` Service's endpoint)."""
        return self.address

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
        return {"count": len(self.nodes), "slot": self.slot, "system": self.system, "ports": {
            "kubelet": [[n.kubelet_port, n.kubelet_healthz_port] for n in self.nodes],
            "proxy": [self.proxy_healthz_port, self.proxy_metrics_port],
            "dns": [self.dns_health_port, self.dns_ready_port]}}


def runtime_folder(cluster_folder: Path) -> Path:
    key = hashlib.sha256(str(cluster_folder.resolve()).encode()).hexdigest()[:10]
    return RUNTIME_ROOT / key


def node_name(index: int) -> str:
    return f"real-node-{index}"


def plan(folder: Path, count: int, ports: list[int], slot: int = 0,
         system: bool = False) -> RealNodes:
    """The nodes of the cluster in `folder` with `count` real nodes; `ports` are free
    ports, two per node then four (`needed_ports(count)` of them); `slot` its veth's /30."""
    if not 0 <= slot < SLOTS:
        raise ValueError(f"slot {slot} is not one of the {SLOTS} of {LINK_NETWORK}")
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
    return RealNodes(folder, nodes, runtime, rest[0], rest[1], rest[2], rest[3], slot, system)


def footprint(folder: Path, count: int) -> RealNodes:
    """What `count` nodes of the cluster in `folder` leave on the machine (bridges, cgroups,
    folders), without their ports: enough to tear down a cluster whose state file is gone."""
    return plan(folder, count, [0] * needed_ports(count))


def needed_ports(count: int) -> int:
    return 2 * count + 4


def from_state(folder: Path, state: Mapping[str, Any]) -> RealNodes:
    ports = state["ports"]
    flat = [p for pair in ports["kubelet"] for p in pair] + ports["proxy"] + ports["dns"]
    return plan(folder, int(state["count"]), [int(p) for p in flat], int(state.get("slot", 0)),
                bool(state.get("system", False)))


def node_network(real: RealNodes) -> NodeNetwork:
    """The control plane's side of the node network: the namespace every process runs in, the
    address they all listen on (the API server too: `Layout.url`), and the Services' range."""
    return NodeNetwork(real.address, str(SERVICE_NETWORK), real.netns_path)


def choose_slot(host_networks: list[tuple[str, str]], reserved: set[int]) -> int:
    """The lowest /30 of LINK_NETWORK that no cluster holds (`reserved`, and the addresses of
    our `jsh` links) and nothing else of the machine overlaps. `host_networks` is every
    address and route of the machine as (network, where); RealNodeError when the machine
    itself uses the range (naming what) or every slot is taken."""
    slots = list(LINK_NETWORK.subnets(new_prefix=LINK_PREFIX))
    taken = set(reserved)
    foreign: list[str] = []
    for network, where in host_networks:
        try:
            net = ipaddress.ip_network(network, strict=False)
        except ValueError:
            continue
        if not isinstance(net, ipaddress.IPv4Network) or net.prefixlen == 0 \
                or not net.overlaps(LINK_NETWORK):
            continue
        if where.split()[-1].startswith(HOST_LINK_PREFIX) and net.prefixlen >= LINK_PREFIX:
            taken |= {i for i, s in enumerate(slots) if s.overlaps(net)}  # a cluster's link
        else:
            foreign.append(f"{net} ({where})")
    if foreign:
        raise RealNodeError(
            f"this machine uses {', '.join(foreign)}, inside {LINK_NETWORK}, the range the "
            "real-node clusters' links come from: real nodes cannot start here")
    free = [i for i in range(len(slots)) if i not in taken]
    if not free:
        raise RealNodeError(f"all {len(slots)} real-node clusters this machine can hold run "
                            "(`jobset-infra cluster down --name NAME` stops one)")
    return free[0]


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
