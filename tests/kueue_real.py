"""Kueue as it ships, beside our controller, on a real local cluster's system node, for the tiers
that need Kueue itself.

The cluster (`tests.realcluster.real_cluster(..., system_node=True)`) has one
real node for system Pods beside kwok's TPU pools. Our controller is installed from its image
(`cluster.install.system_node_install`), and Kueue from its chart in the pinned module, its
manager from the `kueue` image (`cluster.kueue_system`): the Configuration, webhooks and
certificates are the chart's with the Kueue component's values (the JobSet integration,
Topology-Aware Scheduling as Kueue ships it, queues metering TPU chips only). The queue objects
and JobSets are the ones the Kueue and JobSet components render.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobset_infra.cluster.binaries import find
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.resources import Resource
from jobset_infra.manifests.kueue_queues import queue_objects
from jobset_infra.manifests.kueue_spec import KueueInstall, QueueSpec
from jobset_infra.manifests.workload import TpuJob, TpuTarget, WorkloadSpec, plan_workload
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan

JsonObj = dict[str, Any]
APPLY = "application/apply-patch+yaml"
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
WORKLOADS = KUEUE_KINDS["Workload"]
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
PODS = Resource("", "v1", "pods", "Pod")


async def apply(api: KubeClient, manifest: Mapping[str, Any]) -> JsonObj:
    """Server-side apply of a Namespace or of one of Kueue's objects."""
    kind = manifest["kind"]
    res = NAMESPACES if kind == "Namespace" else KUEUE_KINDS[kind]
    meta = manifest["metadata"]
    answer: JsonObj = await api.request(
        "PATCH", res.path(meta.get("namespace"), meta["name"]), body=dict(manifest),
        content_type=APPLY, params={"fieldManager": "jobset-infra-tests", "force": "true"})
    return answer


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


@dataclass
class KueueOnNode:
    """Kueue's install on the system node, and where to read its manager's log."""

    api: KubeClient
    install: KueueInstall  # its image: the kueue image by digest
    kubeconfig: Path

    async def manager_pods(self) -> list[JsonObj]:
        pods = await self.api.list(PODS, self.install.namespace,
                                   label_selector="control-plane=controller-manager")
        return list(pods["items"])

    def tail(self, lines: int = 25) -> str:
        """The end of the manager's log, as `kubectl logs` reads it from the node's kubelet
        (to explain a failed wait, so blocking is fine)."""
        out = subprocess.run(
            [str(find("kubectl")), f"--kubeconfig={self.kubeconfig}", "logs", "-n",
             self.install.namespace, "-l", "control-plane=controller-manager",
             f"--tail={lines}"], capture_output=True, text=True, timeout=60, check=False)
        return out.stdout + out.stderr


@contextlib.asynccontextmanager
async def controller_and_kueue(
    api: KubeClient, cluster: RunningCluster, groups: Mapping[Placer, tuple[str, SlicePoolsPlan]],
) -> AsyncIterator[KueueOnNode]:
    """Our controller (one replica, metrics and probes on their ports) and Kueue installed on
    the cluster's system node, and each placement mode's group namespace and queues created."""
    from jobset_infra.cluster.command import controller_image
    from jobset_infra.cluster.install import install_jobset_system, system_node_install
    from jobset_infra.cluster.kueue_system import install_kueue, kueue_image, system_node_kueue
    from tests.integration.conftest import fast_config

    config = fast_config(controller={"workers": 4}, metrics={"bindAddress": ":8443"},
                         health={"healthProbeBindAddress": ":8081"})
    await install_jobset_system(api, system_node_install(
        controller_image(), replicas=1, config=config), timeout=300)
    install = system_node_kueue(kueue_image())
    await install_kueue(api, install, cluster.kubeconfig, timeout=300)
    for placer, (group, plan) in groups.items():
        await namespace(api, group)
        await create_all(api, group_queue_manifests(plan, placer))
    yield KueueOnNode(api, install, cluster.kubeconfig)
