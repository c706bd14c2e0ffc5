"""Upstream's in-place restart agent, one process per Pod, beside the real local control plane.

kwok runs no containers, so this plays the part of the kubelet for one container per Pod: for
every Running Pod of the JobSet it starts upstream's own agent (`in-place-restart-agent`, built
by tools/build.py from sigs.k8s.io/jobset at the pin of tools/jobset-parity) as the Pod's
ServiceAccount (a TokenRequest bound to the Pod, so RBAC and the admission policy are the real
server's), in main-container mode with a worker command, and applies the container's
`restartPolicyRules` when the agent exits, as the kubelet does:

* a non-zero exit is `Restart`: the container's restartCount goes up in the Pod's status and the
  agent starts again in the same Pod (an in-place restart: the Pod keeps its UID);
* exit 0 ends the container: the Pod is annotated for kwok to make it Succeeded.

The agent reads its namespace from the ServiceAccount mount
(`/var/run/secrets/kubernetes.io/serviceaccount/namespace`); each agent gets that file in a
mount namespace of its own (`unshare -m`, a tmpfs over /run), so nothing on the machine changes.

The worker is a shell loop: it records that it started, exits 1 when the test drops
`fail.<pod>` in the agents' folder (once), and exits 0 when the test drops `done`, or when its
agent is gone (a worker whose run was cut short once looped on, orphaned, for half an hour).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from jobset_infra.api import constants as k
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION
from jobset_infra.cluster.layout import token_kubeconfig
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.kube import MERGE_PATCH, KubeClient
from jobset_infra.controller.runtime.resources import Resource

PODS = Resource("", "v1", "pods", "Pod")
NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
WORKER = """
touch "$AGENTS/started.$POD_NAME.$(date +%s%N)"
while :; do
  [ -e "$AGENTS/done" ] && exit 0
  kill -0 "$PPID" 2>/dev/null || exit 0
  if [ -e "$AGENTS/fail.$POD_NAME" ]; then rm -f "$AGENTS/fail.$POD_NAME"; exit 1; fi
  sleep 0.05
done
"""


@dataclass
class Agent:
    pod: str
    uid: str
    process: subprocess.Popen[bytes]
    exits: list[int] = field(default_factory=list)


class Agents:
    """The agents of one JobSet's Pods (started with `run`, stopped on exit of the block)."""

    def __init__(self, cluster: RunningCluster, api: KubeClient, *, binary: Path, folder: Path,
                 namespace: str, jobset: str, account: str) -> None:
        self.cluster, self.api, self.binary = cluster, api, binary
        self.folder, self.namespace, self.jobset, self.account = folder, namespace, jobset, account
        self.agents: dict[str, Agent] = {}  # by Pod name
        self.restarts: dict[str, int] = {}  # in-place container restarts done, by Pod name
        folder.mkdir(parents=True, exist_ok=True)

    # --- what a test reads and does -------------------------------------------------------------

    def worker_starts(self, pod: str) -> int:
        """How many times the worker of `pod` has started (each barrier lift starts it)."""
        return len(list(self.folder.glob(f"started.{pod}.*")))

    def fail_worker(self, pod: str) -> None:
        (self.folder / f"fail.{pod}").touch()

    def finish_workers(self) -> None:
        (self.folder / "done").touch()

    # --- the kubelet's part -----------------------------------------------------------------------

    async def run(self, stopping: asyncio.Event) -> None:
        try:
            while not stopping.is_set():
                await self._sync()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), 0.1)
        finally:
            for agent in self.agents.values():
                _stop(agent.process)

    async def _sync(self) -> None:
        selector = f"{k.JOBSET_NAME_KEY}={self.jobset}"
        pods = (await self.api.list(PODS, self.namespace, label_selector=selector))["items"]
        for pod in pods:
            name = pod["metadata"]["name"]
            agent = self.agents.get(name)
            running = (pod.get("status") or {}).get("phase") == "Running" and not pod[
                "metadata"].get("deletionTimestamp")
            if agent is None and running:
                self.agents[name] = await self._start(pod)
            elif agent is not None and agent.process.poll() is not None:
                await self._exited(pod, agent)

    async def _exited(self, pod: dict[str, Any], agent: Agent) -> None:
        code = agent.process.returncode
        agent.exits.append(code)
        name = pod["metadata"]["name"]
        if code == 0:  # the container ended: kwok makes the Pod Succeeded
            patch = {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: "0"}}}
            await self.api.patch(PODS, name, patch, namespace=self.namespace,
                                 content_type=MERGE_PATCH)
            return
        # restartPolicyRules: Restart on a non-zero exit, in the same Pod
        self.restarts[name] = self.restarts.get(name, 0) + 1
        await self._count_restart(pod, self.restarts[name])
        agent.process = await self._spawn(pod)

    async def _count_restart(self, pod: dict[str, Any], count: int) -> None:
        statuses = [dict(s) for s in (pod.get("status") or {}).get("containerStatuses") or []]
        for status in statuses:
            status["restartCount"] = count
        await self.api.patch(PODS, pod["metadata"]["name"], {"status": {
            "containerStatuses": statuses}}, namespace=self.namespace, content_type=MERGE_PATCH,
            subresource="status")

    async def _start(self, pod: dict[str, Any]) -> Agent:
        return Agent(pod["metadata"]["name"], pod["metadata"]["uid"], await self._spawn(pod))

    async def _spawn(self, pod: dict[str, Any]) -> subprocess.Popen[bytes]:
        name = pod["metadata"]["name"]
        kubeconfig = self.folder / f"{name}.kubeconfig"
        user = f"system:serviceaccount:{self.namespace}:{self.account}"
        token = await self._token(pod)
        kubeconfig.write_text(yaml.safe_dump(token_kubeconfig(self.cluster.layout, user, token)))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "SHELL": "/bin/sh",
               "KUBECONFIG": str(kubeconfig), "JOBSET_NAME": self.jobset, "POD_NAME": name,
               "WORKER_COMMAND": WORKER, "AGENTS": str(self.folder)}
        mount = (f"mount -t tmpfs tmpfs /run && mkdir -p {os.path.dirname(NAMESPACE_FILE)} && "
                 f"printf %s {shlex.quote(self.namespace)} > {NAMESPACE_FILE} && "
                 f"exec {shlex.quote(str(self.binary))}")
        log = (self.folder / f"{name}.log").open("ab")
        return subprocess.Popen(["unshare", "-m", "sh", "-c", mount], env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)

    async def _token(self, pod: dict[str, Any]) -> str:
        path = f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{self.account}/token"
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                   "spec": {"expirationSeconds": 3600, "boundObjectRef": {
                       "kind": "Pod", "apiVersion": "v1", "name": pod["metadata"]["name"],
                       "uid": pod["metadata"]["uid"]}}}
        answer = await self.api.request("POST", path, body=request)
        return str(answer["status"]["token"])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
