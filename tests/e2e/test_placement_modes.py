"""Both placement modes on the real control plane, with Kueue as it ships (marker real).

One cluster holds two groups of five GKE-shaped TPU v5e 2x4 slice pools (kwok Nodes labelled as
GKE labels TPU nodes: accelerator, topology, node pool, host, the TPU taint and chips) and one
real node, tainted for system Pods, running our controller from its image and Kueue from its
chart, its manager from the `kueue` image (`tests.kueue_real`): the manager's Pod is Ready on
that node only, its webhooks are called through their Service trusting the CA its own
certificate rotation made, and its visibility API answers through the API server's aggregation
layer. Group `tas` is queued through a ClusterQueue whose flavor names a Topology
of node pools then hosts (`placement: kueue-tas`); group `ctl` through a plain one (`placement:
controller`). The queue objects and the JobSets are the ones the Kueue and JobSet components
render; the flavors also select their group's `jobset-infra/slice-group` label, since both groups
have the same shape. Each scenario runs in both modes: a 4-slice JobSet is admitted and each
slice's pods land in one pool of their own; a JobSet that does not fit waits (with Kueue's
reason, or the controller's when Kueue admits on quota and the pools cannot take it); after a
slice fails, the restarted slices are placed again.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from jobset_infra.api import constants as k
from jobset_infra.api import kueue_tas as tas
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION
from jobset_infra.cluster.realnode import SYSTEM_NODE_LABEL
from jobset_infra.controller.runtime.kube import MERGE_PATCH, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import JOBSETS, Resource
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans
from tests.kueue_real import (
    WORKLOADS,
    KueueOnNode,
    controller_and_kueue,
    group_jobset,
)
from tests.waiting import until

pytestmark = [pytest.mark.real, pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(900)]

T = TypeVar("T")
NODES = "tas=v5e-2x4@ct5lp-hightpu-4t:5,ctl=v5e-2x4@ct5lp-hightpu-4t:5"
PLANS = {plan.name: plan for plan in tpu_plans(parse_pools_text(NODES))}
GROUP = {Placer.KUEUE_TAS: "tas", Placer.CONTROLLER: "ctl"}
MODES = [pytest.param(Placer.KUEUE_TAS, id="kueue-tas"),
         pytest.param(Placer.CONTROLLER, id="controller")]
PODS = Resource("", "v1", "pods", "Pod")
JOBS = Resource("batch", "v1", "jobs", "Job")
NODE_RES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
MUTATING = Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
                    "MutatingWebhookConfiguration", namespaced=False)
VALIDATING = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                      "ValidatingWebhookConfiguration", namespaced=False)
APISERVICES = Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService",
                       namespaced=False)
CONTAINER = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}
WAIT = 120.0


@dataclass
class World:
    api: KubeClient
    kueue: KueueOnNode

    async def until(self, check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
        """`tests.waiting.until`, explaining a timeout with the end of Kueue's log."""
        return await until(check, what, timeout, every=0.2,
                           explain=lambda: f"Kueue's log ends:\n{self.kueue.tail(25)}")

    async def items(self, res: Resource, namespace: str | None = None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (await self.api.list(res, namespace=namespace))["items"]
        return found


def _group_plan(mode: Placer) -> SlicePoolsPlan:
    return PLANS[GROUP[mode]]


def jobset(mode: Placer, name: str, slices: int) -> dict[str, Any]:
    """The JobSet the JobSet component renders: `slices` v5e 2x4 slices through `tpu-queue`."""
    return group_jobset(_group_plan(mode), mode, name, slices)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world() -> AsyncIterator[World]:
    from jobset_infra.manifests.crd import jobset_crd
    from tests.realcluster import real_cluster

    with real_cluster(NODES, crds=(jobset_crd(),), system_node=True) as cluster:
        async with cluster.client() as api:
            groups = {mode: (GROUP[mode], _group_plan(mode))
                      for mode in (Placer.KUEUE_TAS, Placer.CONTROLLER)}
            async with controller_and_kueue(api, cluster, groups) as kueue:
                yield World(api, kueue)


# --- what the scenarios read -----------------------------------------------------------------


async def _workload(w: World, mode: Placer, name: str) -> dict[str, Any] | None:
    js = await w.api.get(JOBSETS, name, GROUP[mode])
    for wl in await w.items(WORKLOADS, GROUP[mode]):
        if any(o.get("uid") == js["metadata"]["uid"]
               for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            found: dict[str, Any] = cond
            return found
    return {}


async def _explain(w: World, mode: Placer, name: str) -> Any:
    """`jobset-infra explain`'s answer for the JobSet, read from the cluster as the command does."""
    from jobset_infra.explain.diagnosis import explain
    from jobset_infra.explain.gather import gather
    from jobset_infra.placement.pool_health import HealthPolicy

    return explain(await gather(w.api, GROUP[mode], name, controller_namespace="jobset-system",
                                policy=HealthPolicy()))


async def _pools_by_node(w: World) -> dict[str, str]:
    return {n["metadata"]["name"]: n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL]
            for n in await w.items(NODE_RES)}


async def _running_pods(w: World, mode: Placer, name: str, attempt: int) -> list[dict[str, Any]]:
    pods = []
    for pod in await w.items(PODS, GROUP[mode]):
        labels = pod["metadata"].get("labels") or {}
        if (labels.get(k.JOBSET_NAME_KEY) == name
                and labels.get(k.RESTARTS_KEY) == str(attempt)
                and not pod["metadata"].get("deletionTimestamp")
                and (pod.get("status") or {}).get("phase") == "Running"):
            pods.append(pod)
    return pods


async def _all_running(w: World, mode: Placer, name: str, pods: int,
                       attempt: int = 0) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        found = await _running_pods(w, mode, name, attempt)
        return found if len(found) == pods else None

    running: list[dict[str, Any]] = await w.until(check, f"{pods} pods of {name} running")
    return running


async def _assert_one_pool_per_slice(w: World, mode: Placer, pods: list[dict[str, Any]],
                                     slices: int) -> None:
    where = await _pools_by_node(w)
    by_job: dict[str, set[str]] = {}
    for pod in pods:
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        by_job.setdefault(job, set()).add(where[pod["spec"]["nodeName"]])
    assert len(by_job) == slices, by_job
    assert all(len(pools) == 1 for pools in by_job.values()), by_job  # a slice in one pool
    chosen = [next(iter(pools)) for pools in by_job.values()]
    assert len(set(chosen)) == slices, by_job  # one slice per pool
    assert all(pool.startswith(f"{GROUP[mode]}-") for pool in chosen), by_job


async def _remove(w: World, mode: Placer, name: str) -> None:
    with contextlib.suppress(NotFoundError):
        await w.api.delete(JOBSETS, name, namespace=GROUP[mode], propagation="Foreground")

    async def gone() -> bool:
        pods = [p for p in await w.items(PODS, GROUP[mode])
                if (p["metadata"].get("labels") or {}).get(k.JOBSET_NAME_KEY) == name]
        try:
            await w.api.get(JOBSETS, name, GROUP[mode])
            return False
        except NotFoundError:
            return not pods

    await w.until(gone, f"JobSet {name} and its pods gone")


# --- Kueue as it ships --------------------------------------------------------------------------


async def test_kueues_manager_is_ready_on_the_system_node_from_its_image(world: World) -> None:
    [pod] = await world.kueue.manager_pods()
    assert any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod["status"]["conditions"])
    node = await world.api.get(NODE_RES, pod["spec"]["nodeName"])
    assert node["metadata"]["labels"].get(SYSTEM_NODE_LABEL) == "true"
    [container] = pod["spec"]["containers"]
    image = world.kueue.install.image
    assert image is not None and container["image"] == image  # repository:tag@sha256:...
    status = pod["status"]["containerStatuses"][0]
    assert status["imageID"].endswith(image.split("@")[1])
    assert container["securityContext"]["readOnlyRootFilesystem"] is True  # as the chart ships
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


async def test_kueues_webhooks_call_its_service_and_trust_the_ca_it_rotates(
        world: World) -> None:
    for kind in (MUTATING, VALIDATING):
        configs = [c for c in await world.items(kind)
                   if c["metadata"]["name"].startswith("kueue-")]
        assert configs, kind.kind
        for config in configs:
            for hook in config["webhooks"]:
                service = hook["clientConfig"].get("service")
                assert service is not None and "url" not in hook["clientConfig"], hook["name"]
                assert service["namespace"] == world.kueue.install.namespace
                assert hook["clientConfig"].get("caBundle"), hook["name"]  # Kueue injected it


async def test_kueues_visibility_api_is_available_through_the_aggregation_layer(
        world: World) -> None:
    async def available() -> list[str]:
        return [s["metadata"]["name"] for s in await world.items(APISERVICES)
                if s["spec"].get("group") == "visibility.kueue.x-k8s.io" and any(
                    c["type"] == "Available" and c["status"] == "True"
                    for c in (s.get("status") or {}).get("conditions") or [])]

    names = await world.until(available, "Kueue's visibility APIService Available")
    assert "v1beta2.visibility.kueue.x-k8s.io" in names


# --- the scenarios -----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_four_slices_are_admitted_and_each_lands_in_one_pool(
    world: World, mode: Placer
) -> None:
    await world.api.create(JOBSETS, jobset(mode, "four", 4), GROUP[mode])
    pods = await _all_running(world, mode, "four", pods=8)
    await _assert_one_pool_per_slice(world, mode, pods, slices=4)
    workload = await _workload(world, mode, "four")
    assert _condition(workload, "Admitted").get("status") == "True"
    [assignment] = workload["status"]["admission"]["podSetAssignments"]  # type: ignore[index]
    if mode is Placer.KUEUE_TAS:
        # Kueue chose the hosts: its gate is gone and each pod is pinned to its node.
        assert "topologyAssignment" in assignment
        for pod in pods:
            assert tas.TOPOLOGY_SCHEDULING_GATE not in str(pod["spec"].get("schedulingGates"))
            assert pod["spec"]["nodeSelector"][tpu.HOSTNAME_LABEL] == pod["spec"]["nodeName"]
    else:
        # The controller chose the pools: each Job's pods select theirs.
        assert "topologyAssignment" not in assignment
        for pod in pods:
            assert tpu.GKE_NODEPOOL_LABEL in pod["spec"]["nodeSelector"]
    await _a_pool_change_names_it_on_its_pools(world, mode, pods)


async def _a_pool_change_names_it_on_its_pools(w: World, mode: Placer,
                                               pods: list[dict[str, Any]]) -> None:
    """The check `pulumi preview` runs before a pool change finds the JobSet on exactly the
    pools its pods run on, in both modes: through its Jobs' pool (controller) or its Workload's
    topology assignment as the real Kueue writes it (TAS: the Jobs name no pool, the Workload
    names the hosts)."""
    from jobset_infra.placement.drain import jobsets_at_risk
    from jobset_infra.tpu.pool_changes import PoolChange, PoolChangeKind

    where = await _pools_by_node(w)
    changes = [PoolChange(pool, PoolChangeKind.DELETED, "gone") for pool in sorted(set(
        where.values()))]
    namespace = GROUP[mode]
    # Kueue 0.19.2 writes the assignment at the host level alone (its Topology's last level):
    # the hosts are read through their Nodes' pool label, as the stack's guard does.
    [risk] = jobsets_at_risk(changes, await w.items(JOBSETS, namespace),
                             await w.items(JOBS, namespace), await w.items(WORKLOADS, namespace),
                             node_pools=where)
    assert risk.key == f"{namespace}/four"
    assert {ch.pool for ch in risk.changes} == {where[p["spec"]["nodeName"]] for p in pods}


@pytest.mark.parametrize("mode", MODES)
async def test_a_jobset_beyond_the_quota_waits_with_kueues_reason(
    world: World, mode: Placer
) -> None:
    # Four of five pools are taken by `four`: two more slices exceed the 40-chip quota.
    await world.api.create(JOBSETS, jobset(mode, "two", 2), GROUP[mode])

    async def pending() -> str:
        reserved = _condition(await _workload(world, mode, "two"), "QuotaReserved")
        return str(reserved.get("message", "")) if reserved.get("status") == "False" else ""

    message = await world.until(pending, "the workload of `two` waiting for quota")
    assert "insufficient unused quota for google.com/tpu" in message, message
    assert (await world.api.get(JOBSETS, "two", GROUP[mode]))["spec"]["suspend"] is True
    found = await _explain(world, mode, "two")  # explain: queued over quota, held by `four`
    assert (found.state, found.blockers[0].layer) == ("Queued", "kueue"), found
    [quota] = found.workload["quota"].values()
    assert (quota["requested"], quota["nominal"], quota["used"]) == (16, 40, 32), quota
    assert f"in use by {GROUP[mode]}/jobset-four-" in found.unblock[0], found.unblock
    assert await _running_pods(world, mode, "two", 0) == []
    await _remove(world, mode, "two")


@pytest.mark.parametrize("mode", MODES)
async def test_a_slice_no_free_pool_can_hold_waits_and_says_why(
    world: World, mode: Placer
) -> None:
    # The fifth pool has quota behind it, but one of its two hosts is cordoned.
    where = await _pools_by_node(world)
    taken = {where[p["spec"]["nodeName"]] for p in await _running_pods(world, mode, "four", 0)}
    [free] = {pool for pool in where.values() if pool.startswith(f"{GROUP[mode]}-")} - taken
    node = next(name for name, pool in where.items() if pool == free)
    await world.api.patch(NODE_RES, node, {"spec": {"unschedulable": True}},
                          content_type=MERGE_PATCH)
    try:
        await world.api.create(JOBSETS, jobset(mode, "one", 1), GROUP[mode])
        if mode is Placer.KUEUE_TAS:
            # Kueue keeps the quota: TAS finds no node pool with room for a whole slice.
            async def pending() -> str:
                reserved = _condition(await _workload(world, mode, "one"), "QuotaReserved")
                return str(reserved.get("message", "")) if reserved.get("status") == "False" \
                    else ""

            message = await world.until(pending, "TAS refusing `one`")
            assert "topology" in message and "tas-slices" in message, message
            found = await _explain(world, mode, "one")  # explain: Kueue's TAS says why
            assert found.state == "Queued" and "topology" in found.summary, found
        else:
            # Kueue admits on quota; the controller holds the Job back, saying why.
            async def placement_pending() -> str:
                js = await world.api.get(JOBSETS, "one", GROUP[mode])
                cond = _condition(js, "ExclusivePlacementPending")
                return str(cond.get("message", "")) if cond.get("status") == "True" else ""

            message = await world.until(placement_pending, "the controller holding `one`")
            # The cordoned host leaves room for one of the slice's two pods.
            assert re.search(rf"{free} \((room for 1 of the 2 pods|1 of its 2 nodes are not "
                             r"ready)\)", message), message
            found = await _explain(world, mode, "one")  # explain: no free pool
            assert found.state == "WaitingForPools", found
            states = {p.name: (p.state, p.holder) for p in found.pools}
            assert states[free] == ("not-ready", ""), states
            assert {states[pool] for pool in taken} == {("occupied", f"{GROUP[mode]}/four")}
            assert any(f"{GROUP[mode]}/four" in u for u in found.unblock), found.unblock
        assert await _running_pods(world, mode, "one", 0) == []
        await _remove(world, mode, "one")
    finally:
        await world.api.patch(NODE_RES, node, {"spec": {"unschedulable": False}},
                              content_type=MERGE_PATCH)


@pytest.mark.parametrize("mode", MODES)
async def test_after_a_slice_fails_the_restarted_slices_are_placed_again(
    world: World, mode: Placer
) -> None:
    [victim, *_] = await _running_pods(world, mode, "four", 0)
    await world.api.patch(PODS, victim["metadata"]["name"],
                          {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: "1"}}},
                          namespace=GROUP[mode], content_type=MERGE_PATCH)
    pods = await _all_running(world, mode, "four", pods=8, attempt=1)
    await _assert_one_pool_per_slice(world, mode, pods, slices=4)
    js = await world.api.get(JOBSETS, "four", GROUP[mode])
    assert js["status"]["restarts"] == 1
    assert _condition(await _workload(world, mode, "four"), "Admitted").get("status") == "True"
    await _remove(world, mode, "four")
