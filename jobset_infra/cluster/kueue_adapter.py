"""The Kueue manager's Pod (from Kueue's chart) as a local `kueue` process: its adapter.

The binary is the one `make tools` builds (sigs.k8s.io/kueue, `kueue` in the tools folder). The
Pod's own Configuration (the chart's ConfigMap, mounted at /controller_manager_config.yaml) is
kept, with what running beside the API server instead of in a Pod changes
(reference kueue-out-of-cluster.md §0-1):

- health probes and metrics on loopback ports of ours; the webhook server on the host and port
  the Configuration names when that is 127.0.0.1 (a stack with `kueue.install.loopback_webhooks`,
  whose webhook configurations call exactly that URL), else on a port of ours (nothing calls it);
- the webhook server's certificate from the runner (`PodContext.serving`: 127.0.0.1, signed by
  the cluster CA the loopback webhook configurations trust), and Kueue's internal certificate
  rotation off: it expects kubelet to mount the Secret it fills and would replace that CA;
- leader election in the Pod's namespace (out of a Pod there is no namespace file to find it);
- the VisibilityOnDemand gate off: its aggregated API server needs a front proxy the local
  API server does not have (and the loopback chart leaves its APIServices out);
- the metrics server's certificate, which Kueue reads from the fixed path
  /etc/kueue/metrics/certs whenever its own rotation is off: the process runs in a user and
  mount namespace (`unshare`) whose /etc is an overlay holding that folder, so no file outside
  the Pod's folder is written and no root is needed where unprivileged user namespaces are on.

Pure apart from reading the mounted Configuration: the runner writes the returned files.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from jobset_infra.cluster.binaries import MissingBinaryError, find, which

if TYPE_CHECKING:  # adapters.py lists this adapter in ADAPTERS: import it back only lazily
    from jobset_infra.cluster.adapters import LocalCommand, PodContext

JsonObj = dict[str, Any]

CONTAINER: Final = "manager"
CONFIG_FLAG: Final = "--config="
GATES_FLAG: Final = "--feature-gates="
METRICS_CERT_DIR: Final = "/etc/kueue/metrics/certs"
LOOPBACK: Final = "127.0.0.1"
# Set on the process whatever the Pod asks: see the module docstring for each.
OFF_GATES: Final = {"VisibilityOnDemand": False}

# Mount an overlay on /etc holding the metrics certificate, then become the manager.
_ENTER = """set -e
rm -rf "$1/work"
mkdir -p "$1/upper" "$1/work"
mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/upper,workdir=$1/work" /etc
mkdir -p {certs}
cp "$2" {certs}/tls.crt
cp "$3" {certs}/tls.key
shift 3
exec "$@"
"""


class KueueManagerAdapter:
    """Kueue's controller-manager Pod (labels of Kueue's chart, container `manager`)."""

    name = "kueue"
    label_selector = "app.kubernetes.io/name=kueue,control-plane=controller-manager"

    def container(self, pod: Mapping[str, Any]) -> JsonObj | None:
        for item in (pod.get("spec") or {}).get("containers") or []:
            if item.get("name") == CONTAINER:
                found: JsonObj = item
                return found
        return None

    def command(self, pod: Mapping[str, Any], container: Mapping[str, Any],
                context: PodContext) -> LocalCommand:
        from jobset_infra.cluster import adapters

        if context.folder is None or context.serving is None:
            raise ValueError("the Kueue manager needs the Pod's folder and a serving pair")
        health, metrics, webhook = context.ports[0], context.ports[1], context.ports[2]
        args = [adapters.rewrite_path(a, context.mounts) for a in container.get("args") or []]
        config_path = _config_path(args)
        original = yaml.safe_load(Path(config_path).read_text()) or {}
        certs = context.folder / "webhook-certs"
        has_gate_flag = any(a.startswith(GATES_FLAG) for a in args)
        config = out_of_cluster_config(
            original, health_port=health, metrics_port=metrics, webhook_port=webhook,
            cert_dir=certs, namespace=pod["metadata"]["namespace"],
            gates_in_config=not has_gate_flag,
        )
        adapted = context.folder / "kueue-config.yaml"
        args = [(f"{CONFIG_FLAG}{adapted}" if a.startswith(CONFIG_FLAG) else
                 _with_gates_off(a) if a.startswith(GATES_FLAG) else a) for a in args]
        kueue = str(find("kueue"))
        cert, key = context.serving
        files = {
            adapted: yaml.safe_dump(config, sort_keys=False).encode(),
            certs / "tls.crt": cert.read_bytes(),
            certs / "tls.key": key.read_bytes(),
        }
        argv = (*_namespaced_entry(context.folder / "etc", cert, key), kueue, *args,
                f"--kubeconfig={context.kubeconfig}")
        env = adapters.container_env(pod, container, context.pod_ip)
        return adapters.LocalCommand(argv, env, files=files, binary=kueue,
                                     ready_url=f"http://{LOOPBACK}:{health}/readyz")


def out_of_cluster_config(
    config: Mapping[str, Any], *, health_port: int, metrics_port: int, webhook_port: int,
    cert_dir: Path, namespace: str, gates_in_config: bool = True,
) -> JsonObj:
    """The Pod's Kueue Configuration as a process beside the API server runs it (pure)."""
    out: JsonObj = {k: v for k, v in config.items()}
    out["health"] = {**(config.get("health") or {}),
                     "healthProbeBindAddress": f"{LOOPBACK}:{health_port}"}
    out["metrics"] = {**(config.get("metrics") or {}),
                      "bindAddress": f"{LOOPBACK}:{metrics_port}"}
    webhook = dict(config.get("webhook") or {})
    if webhook.get("host") != LOOPBACK:  # no webhook configuration calls it: keep it private
        webhook.update(host=LOOPBACK, port=webhook_port)
    out["webhook"] = {**webhook, "certDir": str(cert_dir)}
    out["internalCertManagement"] = {"enable": False}
    election = dict(config.get("leaderElection") or {})
    if election.get("leaderElect", True):
        election["resourceNamespace"] = election.get("resourceNamespace") or namespace
    out["leaderElection"] = election
    if gates_in_config:
        out["featureGates"] = {**(config.get("featureGates") or {}), **OFF_GATES}
    return out


def _config_path(args: list[str]) -> str:
    for arg in args:
        if arg.startswith(CONFIG_FLAG):
            return arg.removeprefix(CONFIG_FLAG)
    raise ValueError("the Kueue manager container has no --config= argument (not Kueue's chart?)")


def _with_gates_off(arg: str) -> str:
    gates = dict(g.split("=", 1) for g in arg.removeprefix(GATES_FLAG).split(",") if "=" in g)
    gates.update({name: str(on).lower() for name, on in OFF_GATES.items()})
    return GATES_FLAG + ",".join(f"{k}={v}" for k, v in gates.items())


def _namespaced_entry(etc: Path, cert: Path, key: Path) -> tuple[str, ...]:
    unshare = which("unshare")
    if unshare is None:
        raise MissingBinaryError(
            "unshare (util-linux) not found: the Kueue manager reads its metrics certificate "
            f"from {METRICS_CERT_DIR}, which the pod runner provides in a mount namespace"
        )
    script = _ENTER.format(certs=shlex.quote(METRICS_CERT_DIR))
    return (str(unshare), "--user", "--map-root-user", "--mount", "/bin/sh", "-c", script,
            "kueue-entry", str(etc), str(cert), str(key))
