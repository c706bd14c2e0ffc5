"""Which Pods the local pod runner runs as real processes, and with what command line.

kwok runs no containers, so a Pod the cluster schedules (our controller's, from the JobSetSystem
Deployment) would never do anything. The pod runner plays the kubelet for the few Pods whose
program we have on this machine: an `Adapter` recognises such a Pod by its labels and turns its
container (args, env, volume mounts) into a local command. Pure: the runner materialises the
volumes and picks the ports, then asks the adapter for the argv.

What differs from a kubelet, on purpose: the process runs on loopback with ports we choose (two
clusters on one machine must not collide), paths under a volume's mountPath are rewritten to
the folder where the runner wrote that volume, and credentials come as a kubeconfig holding the
Pod's own ServiceAccount token (bound to the Pod, as a kubelet's projected token is).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from jobset_infra.cluster.kueue_adapter import KueueManagerAdapter
from jobset_infra.manifests import controller as controller_manifests
from jobset_infra.manifests.meta import PART_OF

JsonObj = dict[str, Any]


@dataclass(frozen=True)
class LocalCommand:
    argv: tuple[str, ...]
    env: Mapping[str, str]
    files: Mapping[Path, bytes] = field(default_factory=dict)
    """Files the runner writes before starting the command (an adapted config, say)."""
    binary: str | None = None
    """What the process runs once a wrapper in argv has exec'd it (for the PID check)."""
    ready_url: str | None = None
    """The process's readiness endpoint (its container's readinessProbe, on our port); the Pod
    turns Ready only once it answers 200, as a kubelet's probe would decide."""


@dataclass(frozen=True)
class PodContext:
    """What the runner prepared for one Pod: its volumes on disk, credentials and free ports."""

    mounts: Mapping[str, Path]  # container mountPath -> local folder holding that volume
    kubeconfig: Path
    ports: Sequence[int]
    pod_ip: str = "127.0.0.1"
    folder: Path | None = None
    """The Pod's own scratch folder (for files of LocalCommand.files)."""
    serving: tuple[Path, Path] | None = None
    """A certificate and key for 127.0.0.1 signed by the cluster CA, for servers the API server
    calls (webhooks on loopback)."""


class Adapter(Protocol):
    name: str
    label_selector: str

    def container(self, pod: Mapping[str, Any]) -> JsonObj | None:
        """The container of `pod` this adapter runs, or None when the Pod is not its own."""
        ...

    def command(self, pod: Mapping[str, Any], container: Mapping[str, Any],
                context: PodContext) -> LocalCommand:
        ...


def rewrite_path(value: str, mounts: Mapping[str, Path]) -> str:
    """`value` with a leading volume mountPath (longest first) replaced by its local folder."""
    for mount in sorted(mounts, key=len, reverse=True):
        prefix = mount.rstrip("/")
        if value == prefix or value.startswith(prefix + "/"):
            return str(mounts[mount]) + value[len(prefix):]
        key, eq, rest = value.partition("=")
        if eq and (rest == prefix or rest.startswith(prefix + "/")):
            return f"{key}={mounts[mount]}{rest[len(prefix):]}"
    return value


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any],
                  pod_ip: str) -> dict[str, str]:
    """The container's `env`: plain values and the downward-API fields a controller reads."""
    meta = pod.get("metadata") or {}
    fields = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": (pod.get("spec") or {}).get("nodeName", ""),
        "spec.serviceAccountName": (pod.get("spec") or {}).get("serviceAccountName", ""),
        "status.podIP": pod_ip,
        "status.hostIP": pod_ip,
    }
    env: dict[str, str] = {}
    for item in container.get("env") or []:
        if "value" in item:
            env[item["name"]] = str(item["value"])
            continue
        ref = ((item.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if ref in fields:
            env[item["name"]] = str(fields[ref])
    return env


class JobSetControllerAdapter:
    """Our controller's Pod (`manifests.controller`): `jobset-controller` from this venv."""

    name = "jobset-controller"
    label_selector = (f"app.kubernetes.io/component={controller_manifests.COMPONENT},"
                      f"app.kubernetes.io/part-of={PART_OF}")

    def container(self, pod: Mapping[str, Any]) -> JsonObj | None:
        for item in (pod.get("spec") or {}).get("containers") or []:
            if item.get("name") == controller_manifests.CONTAINER_NAME:
                found: JsonObj = item
                return found
        return None

    def command(self, pod: Mapping[str, Any], container: Mapping[str, Any],
                context: PodContext) -> LocalCommand:
        health, metrics = context.ports[0], context.ports[1]
        args = [rewrite_path(a, context.mounts) for a in container.get("args") or []]
        argv = (
            *controller_program(), *args,
            f"--kubeconfig={context.kubeconfig}",
            # Loopback ports of our choosing instead of the container's fixed ones.
            f"--health-probe-bind-address=127.0.0.1:{health}",
            f"--metrics-bind-address=127.0.0.1:{metrics}",
        )
        return LocalCommand(tuple(argv), container_env(pod, container, context.pod_ip),
                            ready_url=f"http://127.0.0.1:{health}/readyz")


def controller_program() -> tuple[str, ...]:
    """`jobset-controller` as this interpreter runs it (argv[0] is then the real binary, which
    is how the runner tells its own process from a recycled PID)."""
    return (sys.executable, "-m", "jobset_infra.controller.runtime.main")


ADAPTERS: tuple[Adapter, ...] = (JobSetControllerAdapter(), KueueManagerAdapter())
