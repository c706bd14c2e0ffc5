"""The local pod runner: a kubelet stand-in for the Pods whose program runs on this machine.

Every second it lists, per adapter, the Pods its label selector picks. A Pod that is bound to
a Node, Running and not being deleted gets a local process: its configMap, secret, projected
and emptyDir volumes are written under the cluster folder, a token for the Pod's own
ServiceAccount is requested (TokenRequest, bound to the Pod, so RBAC is the real server's), and
the adapter's command starts. A process that exits is restarted with a growing delay, as
restartPolicy Always would; a Pod that is deleted or replaced has its process stopped. kwok
starts such a Pod not Ready (cluster/kwok_stages.py); the runner probes the process's readiness
endpoint and reports it in the Pod's Ready condition, as a kubelet's readinessProbe would, so a
Deployment is Available only once its process serves.

It runs as one more process of `jobset-infra cluster up` (`python -m
jobset_infra.cluster.pod_runner FOLDER`), and in tests inside the test's event loop.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
import os
import shutil
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jobset_infra.cluster.adapters import ADAPTERS, Adapter, LocalCommand, PodContext
from jobset_infra.cluster.layout import Layout, ProcessSpec, token_kubeconfig
from jobset_infra.cluster.processes import Started, alive, free_port, start, stop
from jobset_infra.controller.runtime.kube import ApiError, KubeClient
from jobset_infra.controller.runtime.resources import Resource

PODS = Resource("", "v1", "pods", "Pod")
CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
STRATEGIC_MERGE = "application/strategic-merge-patch+json"
TOKEN_SECONDS = 86_400
POLL_SECONDS = 1.0
RESTART_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0)
log = logging.getLogger(__name__)


@dataclass
class LocalPod:
    uid: str
    key: str  # namespace/name
    started: Started
    restarts: int = 0
    next_start: float = 0.0
    spec: ProcessSpec | None = None
    env: dict[str, str] = field(default_factory=dict)
    ready_url: str | None = None
    container: str = ""


class PodRunner:
    def __init__(self, layout: Layout, api: KubeClient,
                 adapters: Sequence[Adapter] = ADAPTERS) -> None:
        self.layout = layout
        self.api = api
        self.adapters = adapters
        self.pods: dict[str, LocalPod] = {}  # by Pod uid

    async def run(self, stopping: asyncio.Event) -> None:
        try:
            while not stopping.is_set():
                try:
                    await self.sync()
                except ApiError as err:  # the API server restarting, say: try again
                    log.warning("pod runner: %s", err)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), POLL_SECONDS)
        finally:
            self.stop_all()

    async def sync(self) -> None:
        """Start what should run, restart what exited, stop what is gone."""
        wanted: dict[str, tuple[Adapter, Mapping[str, Any], Mapping[str, Any]]] = {}
        for adapter in self.adapters:
            listed = await self.api.list(PODS, label_selector=adapter.label_selector)
            for pod in listed["items"]:
                container = adapter.container(pod)
                if container is not None and _runnable(pod):
                    wanted[pod["metadata"]["uid"]] = (adapter, pod, container)
        for uid in [u for u in self.pods if u not in wanted]:
            self._stop(uid)
        for uid, (runs, spec, program) in wanted.items():
            await self._ensure(uid, runs, spec, program)
        for uid, local in self.pods.items():
            await self._report_ready(local, wanted[uid][1])

    async def _ensure(self, uid: str, adapter: Adapter, pod: Mapping[str, Any],
                      container: Mapping[str, Any]) -> None:
        local = self.pods.get(uid)
        if local is not None and alive(local.started):
            return
        now = time.monotonic()
        if local is not None:
            if now < local.next_start:
                return
            assert local.spec is not None
            local.restarts += 1
            log.warning("pod runner: %s exited; restart %d", local.key, local.restarts)
            local.started = dataclasses.replace(
                start(local.spec, local.started.log, env=local.env), binary=local.started.binary
            )
            delay = RESTART_DELAYS[min(local.restarts, len(RESTART_DELAYS) - 1)]
            local.next_start = now + delay
            return
        spec, env, command = await self._prepare(adapter, pod, container)
        folder = self._folder(pod)
        started = start(spec, folder / "log", env=env)
        if command.binary is not None:  # argv starts with a wrapper that execs the binary
            started = dataclasses.replace(started, binary=command.binary)
        self.pods[uid] = LocalPod(uid, _key(pod), started, 0, now + RESTART_DELAYS[0], spec, env,
                                  command.ready_url, str(container.get("name", "")))
        log.info("pod runner: started %s as pid %d", _key(pod), started.pid)

    async def _report_ready(self, local: LocalPod, pod: Mapping[str, Any]) -> None:
        """Set the Pod's Ready condition from the process's readiness endpoint, on a change."""
        if local.ready_url is None:
            return
        ready = alive(local.started) and await asyncio.to_thread(_answers, local.ready_url)
        if ready == _pod_ready(pod):
            return
        status = "True" if ready else "False"
        # Conditions merge by type; containerStatuses has no merge key, so send all of it.
        containers = [{**c, "ready": ready} if c.get("name") == local.container else c
                      for c in (pod.get("status") or {}).get("containerStatuses") or []]
        patch = {"status": {
            "conditions": [{"type": t, "status": status} for t in ("ContainersReady", "Ready")],
            "containerStatuses": containers,
        }}
        meta = pod["metadata"]
        await self.api.patch(PODS, meta["name"], patch, namespace=meta["namespace"],
                             content_type=STRATEGIC_MERGE, subresource="status")
        log.info("pod runner: %s is %s", local.key, "Ready" if ready else "not Ready")

    async def _prepare(self, adapter: Adapter, pod: Mapping[str, Any],
                       container: Mapping[str, Any],
                       ) -> tuple[ProcessSpec, dict[str, str], LocalCommand]:
        folder = self._folder(pod)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        token = await self._token(pod)
        kubeconfig = folder / "kubeconfig"
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        namespace = pod["metadata"]["namespace"]
        user = f"system:serviceaccount:{namespace}:{account}"
        kubeconfig.write_text(yaml.safe_dump(token_kubeconfig(self.layout, user, token)))
        kubeconfig.chmod(0o600)
        mounts = await self._volumes(pod, container, folder / "volumes", token)
        context = PodContext(mounts=mounts, kubeconfig=kubeconfig,
                             ports=[free_port() for _ in range(4)], folder=folder,
                             serving=(self.layout.pki.serving_cert, self.layout.pki.serving_key))
        command = adapter.command(pod, container, context)
        for path, data in command.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        env = {"PATH": _path_env(), **command.env}
        return ProcessSpec(f"{adapter.name}:{_key(pod)}", command.argv, ""), env, command

    async def _token(self, pod: Mapping[str, Any]) -> str:
        meta = pod["metadata"]
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        request = {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS,
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod",
                                        "name": meta["name"], "uid": meta["uid"]}},
        }
        path = SERVICE_ACCOUNTS.path(meta["namespace"], account, "token")
        answer = await self.api.request("POST", path, body=request)
        token: str = answer["status"]["token"]
        return token

    async def _volumes(self, pod: Mapping[str, Any], container: Mapping[str, Any],
                       root: Path, token: str) -> dict[str, Path]:
        """Write each volume the container mounts; return mountPath -> local folder."""
        volumes = {v["name"]: v for v in (pod.get("spec") or {}).get("volumes") or []}
        namespace = pod["metadata"]["namespace"]
        mounts: dict[str, Path] = {}
        for mount in container.get("volumeMounts") or []:
            volume = volumes.get(mount["name"])
            if volume is None:
                continue
            target = root / mount["name"]
            if not target.exists():
                target.mkdir(parents=True)
                await self._write_volume(volume, target, namespace, token)
            mounts[mount["mountPath"]] = target / mount["subPath"] if mount.get("subPath") \
                else target
        return mounts

    async def _write_volume(self, volume: Mapping[str, Any], target: Path, namespace: str,
                            token: str) -> None:
        if "configMap" in volume:
            await self._write_keys(CONFIG_MAPS, volume["configMap"], target, namespace)
        elif "secret" in volume:
            source = {**volume["secret"], "name": volume["secret"].get("secretName", "")}
            await self._write_keys(SECRETS, source, target, namespace)
        elif "projected" in volume:
            for source in volume["projected"].get("sources") or []:
                if "serviceAccountToken" in source:
                    (target / source["serviceAccountToken"].get("path", "token")).write_text(token)
                elif "configMap" in source:
                    await self._write_keys(CONFIG_MAPS, source["configMap"], target, namespace)
                elif "downwardAPI" in source:
                    for item in source["downwardAPI"].get("items") or []:
                        if item.get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
                            (target / item["path"]).write_text(namespace)

    async def _write_keys(self, res: Resource, source: Mapping[str, Any], target: Path,
                          namespace: str) -> None:
        try:
            obj = await self.api.get(res, source["name"], namespace)
        except ApiError:
            if source.get("optional"):
                return
            raise
        data = {k: v.encode() for k, v in (obj.get("data") or {}).items()} \
            if res is CONFIG_MAPS else \
            {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        items = source.get("items")
        chosen = {i["key"]: i["path"] for i in items} if items else {k: k for k in data}
        for key, rel in chosen.items():
            if key in data:
                path = target / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data[key])

    def _folder(self, pod: Mapping[str, Any]) -> Path:
        meta = pod["metadata"]
        return self.layout.folder / "pods" / f"{meta['namespace']}_{meta['name']}"

    def _stop(self, uid: str) -> None:
        local = self.pods.pop(uid)
        stop([local.started])
        log.info("pod runner: stopped %s", local.key)

    def stop_all(self) -> None:
        stop([p.started for p in self.pods.values()])
        self.pods.clear()


def _runnable(pod: Mapping[str, Any]) -> bool:
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    return (not meta.get("deletionTimestamp") and bool(spec.get("nodeName"))
            and status.get("phase") == "Running")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (OSError, urllib.error.URLError):
        return False


def _pod_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _key(pod: Mapping[str, Any]) -> str:
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def _path_env() -> str:
    return os.environ.get("PATH", "/usr/bin:/bin")


async def _serve(folder: Path) -> int:
    from jobset_infra.cluster.local import load_state

    cluster = load_state(folder)
    if cluster is None:
        print(f"pod runner: no cluster state in {folder}", file=sys.stderr)
        return 2
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    async with cluster.client(qps=50, burst=100) as api:
        await PodRunner(cluster.layout, api).run(stopping)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m jobset_infra.cluster.pod_runner CLUSTER_FOLDER", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    return asyncio.run(_serve(Path(args[0])))


if __name__ == "__main__":
    sys.exit(main())
