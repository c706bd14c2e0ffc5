"""The real Kueue manager beside a real local cluster, for the tiers that need Kueue itself.

Kueue's CRDs and admission webhooks come from the pinned sigs.k8s.io/kueue module the Go build
downloaded (read from its zip, never copied here); the webhooks are pointed at the manager on
the API server's loopback and trust the cluster CA, as `jobset-infra kueue-postrender` does for
the chart (`manifests.kueue_loopback`). Only the webhooks of Kueue's own kinds and of JobSet are
registered: the others (Pods, Deployments, ...) would put every Pod of the cluster behind a
`failurePolicy: Fail` call. The manager process is started the way the local cluster's pod
runner starts the chart's manager Pod (`cluster.kueue_adapter`: loopback ports, the serving
certificate the cluster CA signed, its metrics certificate in a mount namespace), with a
Configuration of our own: the JobSet integration, Topology-Aware Scheduling as Kueue ships it
(on), no leader election, no visibility server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from jobset_infra.api import constants as k
from jobset_infra.cluster.adapters import PodContext
from jobset_infra.cluster.kueue_adapter import KueueManagerAdapter
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.cluster.processes import free_port
from jobset_infra.controller.runtime.kube import KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import Resource
from jobset_infra.manifests.kueue_loopback import loopback_documents
from jobset_infra.manifests.kueue_queues import queue_objects
from jobset_infra.manifests.kueue_spec import QueueSpec
from jobset_infra.manifests.workload import TpuJob, TpuTarget, WorkloadSpec, plan_workload
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan
from tests.go_modules import ModuleZip, binary_or_skip

JsonObj = dict[str, Any]
APPLY = "application/apply-patch+yaml"
CONFIG_MOUNT = "/controller_manager_config.yaml"
KUEUE_KINDS: Mapping[str, Resource] = {
    kind: Resource("kueue.x-k8s.io", "v1beta2", plural, kind, namespaced=namespaced)
    for kind, plural, namespaced in (
        ("Topology", "topologies", False),
        ("ResourceFlavor", "resourceflavors", False),
        ("ClusterQueue", "clusterqueues", False),
        ("LocalQueue", "localqueues", True),
        ("WorkloadPriorityClass", "workloadpriorityclasses", False),
        ("AdmissionCheck", "admissionchecks", False),
        ("ProvisioningRequestConfig", "provisioningrequestconfigs", False),
        ("Workload", "workloads", True),
    )
}
SETUP_KINDS: Mapping[str, Resource] = {
    "CustomResourceDefinition": Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                         "CustomResourceDefinition", namespaced=False),
    "MutatingWebhookConfiguration": Resource(
        "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration", namespaced=False),
    "ValidatingWebhookConfiguration": Resource(
        "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration", namespaced=False),
    "Namespace": Resource("", "v1", "namespaces", "Namespace", namespaced=False),
}
WORKLOADS = KUEUE_KINDS["Workload"]


def _ours(webhook: Mapping[str, Any]) -> bool:
    path = ((webhook.get("clientConfig") or {}).get("service") or {}).get("path") or ""
    return "jobset" in path or "kueue-x-k8s-io" in path


def kueue_setup_objects(port: int, ca_pem: str) -> list[JsonObj]:
    """Kueue's CRDs and the webhooks of its kinds and of JobSet, pointed at loopback `port`."""
    module = ModuleZip.pinned("kueue", "sigs.k8s.io/kueue")
    crds = module.yaml_documents("config/components/crd/bases")
    hooks = []
    for doc in module.yaml_documents("config/components/webhook"):
        if doc.get("kind") in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            hooks.append({**doc, "metadata": {"name": f"kueue-{doc['metadata']['name']}"},
                          "webhooks": [w for w in doc.get("webhooks") or [] if _ours(w)]})
    return list(loopback_documents([*crds, *hooks], port, ca_pem))


def manager_configuration(webhook_port: int) -> JsonObj:
    """Kueue's Configuration: JobSets only, TAS as shipped, no election, no visibility server."""
    return {
        "apiVersion": k.KUEUE_CONFIG_API_VERSION,
        "kind": "Configuration",
        "namespace": "kueue-system",
        "manageJobsWithoutQueueName": False,
        "webhook": {"host": "127.0.0.1", "port": webhook_port},
        "leaderElection": {"leaderElect": False},
        "integrations": {"frameworks": [k.KUEUE_JOBSET_FRAMEWORK]},
        # The queues meter TPU chips only, as the Kueue component configures it.
        "resources": {"excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage"]},
    }


async def apply(api: KubeClient, manifest: Mapping[str, Any]) -> JsonObj:
    """Server-side apply of one object of a kind this module knows."""
    kind = manifest["kind"]
    res = KUEUE_KINDS.get(kind) or SETUP_KINDS[kind]
    meta = manifest["metadata"]
    answer: JsonObj = await api.request(
        "PATCH", res.path(meta.get("namespace"), meta["name"]), body=dict(manifest),
        content_type=APPLY, params={"fieldManager": "jobset-infra-tests", "force": "true"})
    return answer


async def _established(api: KubeClient, name: str, timeout: float = 60.0) -> None:
    crds = SETUP_KINDS["CustomResourceDefinition"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            crd = await api.get(crds, name)
        except NotFoundError:
            crd = {}
        if any(c.get("type") == "Established" and c.get("status") == "True"
               for c in (crd.get("status") or {}).get("conditions") or []):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"CRD {name} not Established within {timeout:.0f} s")


@dataclass
class KueueManager:
    """The running manager process and its log."""

    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 60) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


async def start_kueue(api: KubeClient, cluster: RunningCluster, folder: Path,
                      timeout: float = 120.0) -> KueueManager:
    """Install Kueue's CRDs and webhooks and start its manager; return once /readyz answers."""
    binary_or_skip("kueue")  # skipped without the tools, failed with JOBSET_REQUIRE_REAL=1
    port = free_port()
    for doc in kueue_setup_objects(port, cluster.layout.pki.ca_cert.read_text()):
        await apply(api, doc)
        if doc["kind"] == "CustomResourceDefinition":
            await _established(api, doc["metadata"]["name"])
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(manager_configuration(port)))
    container: JsonObj = {"name": "manager",
                          "args": [f"--config={CONFIG_MOUNT}", "--zap-log-level=2"]}
    pod: JsonObj = {"metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
                    "spec": {"containers": [container]}}
    context = PodContext(mounts={CONFIG_MOUNT: config}, kubeconfig=cluster.kubeconfig,
                         ports=(free_port(), free_port(), port), folder=folder,
                         serving=(cluster.layout.pki.serving_cert, cluster.layout.pki.serving_key))
    adapter = KueueManagerAdapter()
    command = adapter.command(pod, container, context)
    for path, data in command.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    log = folder / "kueue.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **command.env})
    manager = KueueManager(process, log)
    try:
        await _ready(manager, command.ready_url, timeout)
    except BaseException:
        manager.stop()
        raise
    return manager


async def _ready(manager: KueueManager, url: str | None, timeout: float) -> None:
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if manager.process.poll() is not None:
            raise RuntimeError(f"the Kueue manager exited ({manager.process.returncode}):\n"
                               f"{manager.tail()}")
        try:
            with urllib.request.urlopen(url or "", timeout=1) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        await asyncio.sleep(0.2)
    raise TimeoutError(f"the Kueue manager was not ready within {timeout:.0f} s:\n"
                       f"{manager.tail()}")


async def create_all(api: KubeClient, manifests: Sequence[Mapping[str, Any]]) -> None:
    """Apply Kueue objects in order (their webhooks serve: the manager is ready)."""
    for manifest in manifests:
        await apply(api, manifest)


def group_queue_manifests(plan: SlicePoolsPlan, placer: Placer) -> list[JsonObj]:
    """The Kueue component's objects for the pools of one slice group, its flavor kept to them.

    Two groups of the same shape in one cluster (one per placement mode) carry the same GKE
    labels; the flavor also selects the group's `jobset-infra/slice-group` label, and is named
    after the group, as is the ClusterQueue (admitting from the namespace named after it).
    """
    group = plan.name
    spec = QueueSpec(cluster_queue_name=f"{group}-cq", namespaces=(group,),
                     priority_classes={}, topology_name=f"{group}-slices")
    objects = queue_objects(spec, [plan], placer)
    renamed = {}
    for flavor in objects.resource_flavors:
        old = flavor["metadata"]["name"]
        flavor["metadata"]["name"] = renamed[old] = f"{group}-{old}"
        flavor["spec"]["nodeLabels"][tpu.SLICE_GROUP_LABEL] = group
    for resource_group in objects.cluster_queue["spec"]["resourceGroups"]:
        for flavor_quota in resource_group["flavors"]:
            flavor_quota["name"] = renamed[flavor_quota["name"]]
    return [dict(m) for m in objects.in_apply_order()]


def group_jobset(plan: SlicePoolsPlan, placer: Placer, name: str, slices: int,
                 max_restarts: int = 3) -> JsonObj:
    """The JobSet component's JobSet: `slices` slices of the group's pools through `tpu-queue`,
    in the group's namespace."""
    container = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}
    job = TpuJob("slice", container, TpuTarget.from_plan(plan), slices=slices)
    spec = WorkloadSpec(name=name, namespace=plan.name, replicated_jobs=[job],
                        queue="tpu-queue", failure_policy={"maxRestarts": max_restarts},
                        placement=placer)
    return dict(plan_workload(spec).manifest)


async def namespace(api: KubeClient, name: str) -> None:
    await apply(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


@contextlib.asynccontextmanager
async def controller_and_kueue(
    api: KubeClient, cluster: RunningCluster, groups: Mapping[Placer, tuple[str, SlicePoolsPlan]],
) -> AsyncIterator[KueueManager]:
    """Our controller installed (one replica, metrics and probes on their ports), Kueue's manager
    started, and each placement mode's group namespace and queues created; Kueue stopped after."""
    from jobset_infra.cluster.install import install_jobset_system, local_install
    from tests.integration.conftest import fast_config

    config = fast_config(controller={"workers": 4})
    install = local_install(replicas=1, config=config.model_copy(update={
        "metrics": config.metrics.model_copy(update={"bind_address": ":8443"}),
        "health": config.health.model_copy(update={"health_probe_bind_address": ":8081"})}))
    await install_jobset_system(api, install)
    folder = Path(tempfile.mkdtemp(prefix="kueue-", dir=cluster.layout.folder))
    kueue = await start_kueue(api, cluster, folder)
    try:
        for placer, (group, plan) in groups.items():
            await namespace(api, group)
            await create_all(api, group_queue_manifests(plan, placer))
        yield kueue
    finally:
        kueue.stop()
