"""The stacks with the real Pulumi engine on the real local cluster (`make tools`, marker real).

The CLI, our language host and the Kubernetes provider built from the Go module proxy run
`pulumi preview | up | refresh | destroy` (driven through Pulumi's Automation API, whose typed
engine events give each step) of the `local` stack, and of v5e-multislice's
Kubernetes half (everything but its GKE resources), on kube-apiserver with kwok Nodes shaped
like the stacks' slice pools. The cluster is checked after every step: what the engine says is
compared with what the API server has.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.cluster.deploy import WORKLOADS, watch_jobset
from jobset_infra.cluster.engine import Engine
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.kube import KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, Resource
from jobset_infra.tpu import constants as tpu
from tests.realcluster import real_cluster
from tests.realpulumi import engine_or_skip, every_object, kueue_chart, run, stack_engine

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(2400)]

CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", namespaced=False)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
PDBS = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget")
SERVICES = Resource("", "v1", "services", "Service")
ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                         namespaced=False)
CLUSTER_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue",
                          namespaced=False)
LOCAL_QUEUES = Resource("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue")
PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
MUTATING = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                    "MutatingWebhookConfiguration", namespaced=False)
JOBSET_CRD = "jobsets.jobset.x-k8s.io"
LOCAL = "local"


def _get(cluster: RunningCluster, res: Resource, name: str,
         namespace: str | None = None) -> dict[str, Any] | None:
    async def get(api: KubeClient) -> dict[str, Any] | None:
        try:
            return await api.get(res, name, namespace)
        except NotFoundError:
            return None

    found: dict[str, Any] | None = run(get, cluster)
    return found


def _list(cluster: RunningCluster, res: Resource, namespace: str | None = None,
          ) -> list[dict[str, Any]]:
    async def listed(api: KubeClient) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await api.list(res, namespace=namespace))["items"]
        return items

    found: list[dict[str, Any]] = run(listed, cluster)
    return found


def _completed(cluster: RunningCluster, name: str) -> str:
    return asyncio.run(watch_jobset(cluster, "default", name, 300, lambda _line: None))


def _pools_of_jobs(cluster: RunningCluster, jobset: str) -> dict[str, set[str]]:
    """Child Job -> the node pools its Pods ran on."""
    pools = {n["metadata"]["name"]: n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL]
             for n in _list(cluster, NODES)}
    placed: dict[str, set[str]] = {}
    for pod in _list(cluster, PODS, "default"):
        labels = pod["metadata"].get("labels") or {}
        if labels.get("jobset.sigs.k8s.io/jobset-name") != jobset:
            continue
        job = labels["batch.kubernetes.io/job-name"]
        placed.setdefault(job, set()).add(pools[pod["spec"]["nodeName"]])
    return placed


def _assert_one_slice_per_pool(cluster: RunningCluster, jobset: str, slices: int) -> None:
    placed = _pools_of_jobs(cluster, jobset)
    assert len(placed) == slices, placed
    assert all(len(p) == 1 for p in placed.values()), placed  # a slice stays in one pool
    assert len({next(iter(p)) for p in placed.values()}) == slices, placed  # one pool each


def _assert_platform_installed(cluster: RunningCluster) -> None:
    assert _get(cluster, CRDS, JOBSET_CRD) is not None
    controller = _get(cluster, DEPLOYMENTS, "jobset-controller", "jobset-system")
    assert controller is not None and controller["status"].get("availableReplicas") == 1
    assert _get(cluster, ACCOUNTS, "jobset-controller", "jobset-system") is not None
    assert _get(cluster, PDBS, "jobset-controller", "jobset-system") is not None
    assert _get(cluster, SERVICES, "jobset-controller-metrics", "jobset-system") is not None
    assert [r for r in _list(cluster, CLUSTER_ROLES) if r["metadata"]["name"].startswith(
        "jobset-controller")]
    kueue = _get(cluster, DEPLOYMENTS, "kueue-controller-manager", "kueue-system")
    assert kueue is not None and kueue["status"].get("availableReplicas") == 1
    # Kueue's webhooks call its Service, with the CA Kueue's own rotation injected: as shipped.
    hooks = _get(cluster, MUTATING, "kueue-mutating-webhook-configuration")
    assert hooks is not None
    assert all(h["clientConfig"]["service"]["namespace"] == "kueue-system"
               and h["clientConfig"].get("caBundle") for h in hooks["webhooks"])
    queue = _get(cluster, CLUSTER_QUEUES, "tpu-cluster-queue")
    assert queue is not None
    [quota] = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert quota == {"name": tpu.TPU_RESOURCE, "nominalQuota": "32"}
    assert _get(cluster, LOCAL_QUEUES, "tpu-queue", "default") is not None


def _admitted_by_kueue(cluster: RunningCluster, jobset: Mapping[str, Any]) -> bool:
    return any(
        (w.get("status") or {}).get("admission", {}).get("clusterQueue") == "tpu-cluster-queue"
        and any(o.get("uid") == jobset["metadata"]["uid"]
                for o in w["metadata"].get("ownerReferences") or [])
        for w in _list(cluster, WORKLOADS, "default")
    )


def _changes(engine: Engine, stack: str) -> dict[str, str]:
    return engine.preview(stack).ops()


def test_local_stack_preview_up_noop_update_replace_refresh_destroy(tmp_path: Path) -> None:
    engine_or_skip()
    with real_cluster("v5e-2x4:4,cpu:2", auto_complete_seconds=3, system_node=True) as cluster:
        before = run(every_object, cluster)
        engine = stack_engine(cluster, tmp_path / "project", LOCAL)

        preview = engine.preview(LOCAL)
        assert set(preview.ops().values()) == {"create"}
        assert {"jobset-crd", "jobset-controller", "kueue-kueue", "hello-tpu",
                "kueue-clusterqueue-tpu-cluster-queue"} <= set(preview.ops())
        assert _get(cluster, CRDS, JOBSET_CRD) is None  # a preview creates nothing

        created = engine.up(LOCAL)
        assert set(created.ops().values()) == {"create"}
        assert created.outputs["jobsetName"] == "hello-tpu"  # the stack's outputs, typed
        _assert_platform_installed(cluster)
        assert _completed(cluster, "hello-tpu") == "Completed"
        jobset = _get(cluster, JOBSETS, "hello-tpu", "default")
        assert jobset is not None and _admitted_by_kueue(cluster, jobset)
        _assert_one_slice_per_pool(cluster, "hello-tpu", 4)

        # An update in place: a second controller replica (leader election picks one).
        engine.config_set(LOCAL, "jobset-infra:controller.replicas", "2", path=True)
        assert engine.up(LOCAL).ops() == {"jobset-controller": "update"}
        controller = _get(cluster, DEPLOYMENTS, "jobset-controller", "jobset-system")
        assert controller is not None and controller["status"].get("readyReplicas") == 2

        # Slices 4 -> 2 and a new image: a JobSet's replicated jobs are immutable, so the
        # engine replaces it, deleting the old one before it creates the new one.
        engine.config_set(LOCAL, "jobset-infra:workload.slices", "2", path=True)
        engine.config_set(LOCAL, "jobset-infra:workload.image", "python:3.12", path=True)
        update = engine.up(LOCAL)
        assert update.ops() == {"hello-tpu": "replace"}
        assert update.sequence("hello-tpu") == ["delete-replaced", "replace",
                                                "create-replacement"]
        [step] = [s for s in update.steps if s.name == "hello-tpu" and s.op == "replace"]
        assert {"spec.replicatedJobs[0].replicas",
                "spec.replicatedJobs[0].template.spec.template.spec.containers[0].image"} <= set(
            step.diffs)
        assert _completed(cluster, "hello-tpu") == "Completed"
        replaced = _get(cluster, JOBSETS, "hello-tpu", "default")
        assert replaced is not None and replaced["metadata"]["uid"] != jobset["metadata"]["uid"]
        [rjob] = replaced["spec"]["replicatedJobs"]
        assert rjob["replicas"] == 2
        pod = rjob["template"]["spec"]["template"]["spec"]
        assert pod["containers"][0]["image"] == "python:3.12"
        assert sorted(j["metadata"]["name"] for j in _list(cluster, JOBS, "default")) == [
            "hello-tpu-slice-0", "hello-tpu-slice-1"]
        _assert_one_slice_per_pool(cluster, "hello-tpu", 2)

        # After a refresh (the state read back from the cluster), an up finds nothing to do and
        # touches nothing: the state, the cluster and the program agree.
        engine.refresh(LOCAL)
        assert engine.up(LOCAL, expect_no_changes=True).ops() == {}
        same = _get(cluster, JOBSETS, "hello-tpu", "default")
        assert same is not None and same["metadata"]["uid"] == replaced["metadata"]["uid"]

        destroyed = engine.destroy(LOCAL)
        assert set(destroyed.ops().values()) == {"delete"}
        assert {"hello-tpu", "jobset-crd", "kueue-kueue"} <= set(destroyed.ops())
        left = run(every_object, cluster) - before
        assert left == set()
        assert [r for r in engine.resources(LOCAL)
                if not r["type"].startswith("pulumi:pulumi:Stack")] == []


def test_multislice_kubernetes_half_on_kwok_pools_shaped_like_its_slices(tmp_path: Path) -> None:
    engine_or_skip()
    # The stack's 4 v5e 2x4 slices on 2 x ct5lp-hightpu-4t VMs, named as its pools are.
    with real_cluster("v5e=v5e-2x4@ct5lp-hightpu-4t:4", auto_complete_seconds=3,
                      system_node=True) as cluster:
        engine = stack_engine(cluster, tmp_path / "project", "v5e-multislice")
        engine.config_set("v5e-multislice", "jobset-infra:kueue.install.chart_path", kueue_chart(),
                          path=True)
        preview = engine.preview("v5e-multislice")
        types = {s.type for s in preview.steps}
        assert not [t for t in types if t.startswith("gcp:")]  # no GKE resource
        assert "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet" in types

        engine.up("v5e-multislice")
        assert _completed(cluster, "jax-multislice") == "Completed"
        _assert_one_slice_per_pool(cluster, "jax-multislice", 4)
        assert set().union(*_pools_of_jobs(cluster, "jax-multislice").values()) == {
            "v5e-0", "v5e-1", "v5e-2", "v5e-3"}
        controller = _get(cluster, DEPLOYMENTS, "jobset-controller", "jobset-system")
        assert controller is not None and controller["status"].get("readyReplicas") == 2
        assert _changes(engine, "v5e-multislice") == {}

        engine.destroy("v5e-multislice")
        # The stack keeps the JobSet CRD on destroy (retain_crd, its default): only that stays.
        assert _get(cluster, CRDS, JOBSET_CRD) is not None
        assert _get(cluster, DEPLOYMENTS, "jobset-controller", "jobset-system") is None
        assert _get(cluster, CRDS, "workloads.kueue.x-k8s.io") is None
