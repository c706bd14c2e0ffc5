"""What the local control plane consists of: every process, its command line and its files.

Pure: `plan_processes(layout, tools)` turns the folder, the ports and the binaries into the
command lines `cluster up` starts, in order. Nothing here starts a process or picks a port, so
the flags each component gets are visible (and tested) as plain data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from jobset_infra.cluster import pki as certs
from jobset_infra.cluster.binaries import Tools
from jobset_infra.tpu.node_pools import KWOK_NODE_ANNOTATION, KWOK_NODE_VALUE

SERVICE_CIDR: Final = "10.0.0.0/24"
POD_CIDR: Final = "10.244.0.0/16"
SERVICE_ACCOUNT_ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
# Client rate limits of the controller-manager and scheduler: GKE's control plane is far larger
# than the defaults (20 and 50 QPS) assume, and benchmarks should time controllers, not these.
COMPONENT_QPS: Final = 500
COMPONENT_BURST: Final = 1000
CONCURRENT_JOB_SYNCS: Final = 20


@dataclass(frozen=True)
class Tuning:
    """What a benchmark may turn (`ClusterOptions.tuning`); the defaults are what `cluster up`
    runs. `apiserver_args` are appended to kube-apiserver's flags (an audit policy, say)."""

    component_qps: int = COMPONENT_QPS
    component_burst: int = COMPONENT_BURST
    concurrent_job_syncs: int = CONCURRENT_JOB_SYNCS
    apiserver_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int


@dataclass(frozen=True)
class NodeNetwork:
    """Set when the cluster has real nodes (`realnode`): every process runs in the network
    namespace `netns` (a path under /run/netns) and listens on `advertise_address`, the
    namespace's end of its link to the machine; pods reach the API server there (the
    `kubernetes` Service's endpoint), and Services take `service_cidr`."""

    advertise_address: str
    service_cidr: str
    netns: str | None = None


@dataclass(frozen=True)
class Layout:
    """One cluster's folder and ports; every path a process uses derives from `folder`."""

    folder: Path
    ports: Ports
    admin_token: str
    node_network: NodeNetwork | None = None

    @property
    def service_cidr(self) -> str:
        return self.node_network.service_cidr if self.node_network else SERVICE_CIDR

    @property
    def pki(self) -> certs.Pki:
        return certs.Pki(self.folder / "pki")

    @property
    def apiserver_host(self) -> str:
        """The one address kube-apiserver listens on: loopback, or with real nodes the
        namespace's end of the cluster's link (pods reach it there through the `kubernetes`
        Service, the machine over the link). `--bind-address` takes one address."""
        return self.bind_host

    @property
    def bind_host(self) -> str:
        """Where every component listens: loopback, or the cluster namespace's link address
        (the machine reaches nothing on the namespace's own loopback)."""
        return self.node_network.advertise_address if self.node_network else "127.0.0.1"

    @property
    def netns(self) -> str | None:
        """The network namespace every process of the cluster runs in (None: the machine's)."""
        return self.node_network.netns if self.node_network else None

    @property
    def url(self) -> str:
        return f"https://{self.apiserver_host}:{self.ports.apiserver}"

    @property
    def kubeconfig(self) -> Path:
        return self.folder / "kubeconfig"

    @property
    def state_file(self) -> Path:
        return self.folder / "state.json"

    def component_kubeconfig(self, who: certs.Identity) -> Path:
        return self.folder / "kubeconfigs" / f"{who.file_stem}.yaml"

    def log(self, name: str) -> Path:
        return self.folder / "logs" / f"{name}.log"

    @property
    def token_file(self) -> Path:
        return self.folder / "tokens.csv"

    @property
    def scheduler_config(self) -> Path:
        return self.folder / "kube-scheduler.yaml"

    @property
    def kwok_config(self) -> Path:
        return self.folder / "kwok.yaml"


@dataclass(frozen=True)
class ProcessSpec:
    """One long-running process: a name for logs and errors, and its argv."""

    name: str
    argv: tuple[str, ...]
    health_url: str  # answers 200 when the component is up (https urls use the cluster CA)
    netns: str | None = None  # a network namespace (/run/netns/NAME) to run in


def plan_processes(layout: Layout, tools: Tools, tuning: Tuning = Tuning()) -> Sequence[
    ProcessSpec
]:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok: start order."""
    specs = (
        _etcd(layout, tools),
        _apiserver(layout, tools, tuning),
        _controller_manager(layout, tools, tuning),
        _scheduler(layout, tools),
        _kwok(layout, tools),
    )
    return tuple(dataclasses.replace(s, netns=layout.netns) for s in specs)


def _etcd(layout: Layout, tools: Tools) -> ProcessSpec:
    client = f"http://{layout.bind_host}:{layout.ports.etcd_client}"
    peer = f"http://{layout.bind_host}:{layout.ports.etcd_peer}"
    return ProcessSpec("etcd", (
        str(tools.etcd), "--name=local", f"--data-dir={layout.folder / 'etcd'}",
        f"--listen-client-urls={client}", f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=local={peer}",
        # A throwaway single-member store on one disk: fsync buys nothing and costs seconds.
        "--unsafe-no-fsync=true", "--log-level=warn", "--quota-backend-bytes=4294967296",
    ), f"{client}/health")


def _apiserver(layout: Layout, tools: Tools, tuning: Tuning) -> ProcessSpec:
    p = layout.pki
    return ProcessSpec("kube-apiserver", (
        str(tools.kube_apiserver),
        f"--etcd-servers=http://{layout.bind_host}:{layout.ports.etcd_client}",
        *_apiserver_network(layout), f"--secure-port={layout.ports.apiserver}",
        f"--tls-cert-file={p.serving_cert}", f"--tls-private-key-file={p.serving_key}",
        f"--client-ca-file={p.ca_cert}", f"--token-auth-file={layout.token_file}",
        "--authorization-mode=Node,RBAC", "--anonymous-auth=false",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={p.service_account_pub}",
        f"--service-account-signing-key-file={p.service_account_key}",
        f"--service-cluster-ip-range={layout.service_cidr}",
        "--allow-privileged=true", "--profiling=false",
        "--enable-admission-plugins=NodeRestriction", "--v=1", *tuning.apiserver_args,
    ), f"{layout.url}/readyz")


def _apiserver_network(layout: Layout) -> tuple[str, ...]:
    network = layout.node_network
    if network is None:
        # The endpoint reconciler refuses a loopback address; no Pod dials the Service here.
        return ("--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none")
    p, client = layout.pki, certs.APISERVER_KUBELET_CLIENT
    # Real nodes' pods dial the `kubernetes` Service, which kube-proxy sends to the namespace's
    # link address: the server listens there, and only there (`Layout.url`).
    return (f"--bind-address={layout.apiserver_host}",
            f"--advertise-address={network.advertise_address}",
            f"--kubelet-client-certificate={p.client_cert(client)}",
            f"--kubelet-client-key={p.client_key(client)}",
            "--kubelet-preferred-address-types=InternalIP",
            *_aggregation_layer(p))


def _aggregation_layer(p: certs.Pki) -> tuple[str, ...]:
    """An aggregation layer, as kubeadm configures one: the API server proxies an APIService's
    requests (Kueue's visibility API, served from its Pod) with the front-proxy client's
    certificate, naming the user in headers the aggregated server trusts from that name only.
    One CA signs it (the cluster's), held to that name by `--requestheader-allowed-names`.
    The API server calls an APIService's or a webhook's Service at its endpoints (the Pods on
    the nodes' bridges): its namespace has no route to the Service range, which only kube-proxy
    gives meaning to, and no default route (nothing leaves the machine)."""
    proxy = certs.FRONT_PROXY_CLIENT
    return ("--enable-aggregator-routing=true",
            f"--requestheader-client-ca-file={p.ca_cert}",
            f"--requestheader-allowed-names={proxy.user}",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={p.client_cert(proxy)}",
            f"--proxy-client-key-file={p.client_key(proxy)}")


def _controller_manager(layout: Layout, tools: Tools, tuning: Tuning) -> ProcessSpec:
    p, kubeconfig = layout.pki, layout.component_kubeconfig(certs.CONTROLLER_MANAGER)
    return ProcessSpec("kube-controller-manager", (
        str(tools.kube_controller_manager),
        f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={layout.bind_host}", f"--secure-port={layout.ports.controller_manager}",
        "--leader-elect=false", "--use-service-account-credentials=true",
        f"--service-account-private-key-file={p.service_account_key}",
        f"--root-ca-file={p.ca_cert}",
        f"--cluster-signing-cert-file={p.ca_cert}", f"--cluster-signing-key-file={p.ca_key}",
        f"--cluster-cidr={POD_CIDR}", f"--service-cluster-ip-range={layout.service_cidr}",
        f"--kube-api-qps={tuning.component_qps}", f"--kube-api-burst={tuning.component_burst}",
        f"--concurrent-job-syncs={tuning.concurrent_job_syncs}", "--concurrent-gc-syncs=50",
        "--profiling=false", "--v=1",
    ), f"https://{layout.bind_host}:{layout.ports.controller_manager}/healthz")


def _scheduler(layout: Layout, tools: Tools) -> ProcessSpec:
    kubeconfig = layout.component_kubeconfig(certs.SCHEDULER)
    return ProcessSpec("kube-scheduler", (
        str(tools.kube_scheduler), f"--config={layout.scheduler_config}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={layout.bind_host}", f"--secure-port={layout.ports.scheduler}",
        "--v=1",
    ), f"https://{layout.bind_host}:{layout.ports.scheduler}/healthz")


def _kwok(layout: Layout, tools: Tools) -> ProcessSpec:
    return ProcessSpec("kwok", (
        str(tools.kwok), f"--kubeconfig={layout.component_kubeconfig(certs.KWOK)}",
        f"--config={layout.kwok_config}", "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}={KWOK_NODE_VALUE}",
        f"--server-address={layout.bind_host}:{layout.ports.kwok}", f"--cidr={POD_CIDR}",
        "--node-ip=10.0.0.2", "--node-lease-duration-seconds=40",
    ), f"http://{layout.bind_host}:{layout.ports.kwok}/healthz")


def scheduler_config(layout: Layout, tuning: Tuning = Tuning()) -> dict[str, object]:
    """The KubeSchedulerConfiguration: no leader election, client limits as above."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {
            "kubeconfig": str(layout.component_kubeconfig(certs.SCHEDULER)),
            "qps": tuning.component_qps, "burst": tuning.component_burst,
        },
        "leaderElection": {"leaderElect": False},
    }


def kubeconfig(layout: Layout, who: certs.Identity, name: str = "jobset-infra-local") -> dict[
    str, object
]:
    """A kubeconfig for `who`'s client certificate against this cluster (paths, not data)."""
    p = layout.pki
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {
            "server": layout.url, "certificate-authority": str(p.ca_cert)}}],
        "users": [{"name": who.user, "user": {
            "client-certificate": str(p.client_cert(who)),
            "client-key": str(p.client_key(who))}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": who.user}}],
        "current-context": name,
    }


def token_kubeconfig(layout: Layout, user: str, token: str,
                     name: str = "jobset-infra-local") -> dict[str, object]:
    """A kubeconfig that authenticates with a bearer token (a ServiceAccount's, say)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {
            "server": layout.url, "certificate-authority": str(layout.pki.ca_cert)}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    }
