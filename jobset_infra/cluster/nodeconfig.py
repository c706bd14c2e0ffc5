"""Each real-node component's configuration and command line (pure), from `realnode`'s plan.

kubelet (cgroup v1, cgroupfs, no host resolver), containerd 2 (Debian's runc, our CNI plugins,
the imported pause image as sandbox), the CNI bridge network (one route, no masquerade),
CoreDNS (cluster.local only, nothing forwarded) and kube-proxy (nftables); then every process in
start order, each in the cluster's network namespace. docs/cluster.md "Real nodes" says why.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jobset_infra.cluster.layout import Layout, ProcessSpec
from jobset_infra.cluster.realnode import (
    CLUSTER_DOMAIN,
    NODE_LABEL,
    NODE_POOL,
    NODE_POOL_LABEL,
    POD_NETWORK,
    PROXY_IDENTITY,
    RUNC,
    SYSTEM_NODE_LABEL,
    SYSTEM_POOL,
    Node,
    RealNodes,
)


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
        "healthzBindAddress": layout.bind_host,
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


def kubelet_argv(node: Node, kubelet: Path, system: bool = False) -> tuple[str, ...]:
    """kubelet's flags; a system node (`RealNodes.system`) registers labelled and tainted."""
    labels = (f"{NODE_LABEL}=true,{SYSTEM_NODE_LABEL}=true,{NODE_POOL_LABEL}={SYSTEM_POOL}"
              if system else f"{NODE_LABEL}=true,{NODE_POOL_LABEL}={NODE_POOL}")
    return (
        str(kubelet), f"--config={node.kubelet_config}", f"--kubeconfig={node.kubeconfig}",
        f"--root-dir={node.folder / 'kubelet'}", f"--cert-dir={node.folder / 'kubelet-pki'}",
        f"--hostname-override={node.name}", f"--node-ip={node.gateway}",
        f"--node-labels={labels}", "--v=1",
        *((f"--register-with-taints={SYSTEM_NODE_LABEL}=true:NoSchedule",) if system else ()),
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
        f"    health {real.address}:{real.dns_health_port}",
        f"    ready {real.address}:{real.dns_ready_port}",
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
        "bindAddress": real.address,
        "healthzBindAddress": f"{real.address}:{real.proxy_healthz_port}",
        "metricsBindAddress": f"{real.address}:{real.proxy_metrics_port}",
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
    at, netns = real.address, real.netns_path
    for node in real.nodes:
        specs.append(ProcessSpec(f"containerd-{node.index}", (
            str(bins["containerd"]), f"--config={node.containerd_config}",
        ), "", netns))
        kubelet = kubelet_argv(node, bins["kubelet"], real.system)
        specs.append(ProcessSpec(f"kubelet-{node.index}", kubelet,
                                 f"http://{at}:{node.kubelet_healthz_port}/healthz", netns))
    specs.append(ProcessSpec("kube-proxy", (
        str(bins["kube-proxy"]), f"--config={layout.folder / 'kube-proxy.yaml'}", "--v=1",
    ), f"http://{at}:{real.proxy_healthz_port}/healthz", netns))
    specs.append(ProcessSpec("coredns", (
        str(bins["coredns"]), "-conf", str(layout.folder / "Corefile"),
    ), f"http://{at}:{real.dns_ready_port}/ready", netns))
    return specs
