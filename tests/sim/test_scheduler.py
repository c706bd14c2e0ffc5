"""The simulated scheduler: where Pods land, why some wait, and that it stays fast."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.cluster.scheduler import Scheduler
from jobset_infra.sim.cluster.scheduling import parse_quantity, pod_requests, tolerated
from tests.waiting import until

NODES = GVR("", "v1", "nodes")
PODS = GVR("", "v1", "pods")
POOL = "cloud.google.com/gke-nodepool"
TPU = "google.com/tpu"
TPU_TAINT = {"key": TPU, "value": "present", "effect": "NoSchedule"}
TPU_TOLERATION = {"key": TPU, "operator": "Exists", "effect": "NoSchedule"}


def node(
    name: str, pool: str, *, chips: int = 4, taint: bool = True, ready: bool = True, **labels: str
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {POOL: pool, **labels}},
        "spec": {"taints": [TPU_TAINT] if taint else []},
        "status": {
            "allocatable": {TPU: str(chips), "cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    *,
    chips: int = 4,
    selector: dict[str, str] | None = None,
    tolerate: bool = True,
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {TPU: str(chips)}}}],
        "nodeSelector": selector or {},
        "tolerations": [TPU_TOLERATION] if tolerate else [],
    }
    if affinity:
        spec["affinity"] = affinity
    return {
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[Store, Scheduler]]:
    store = Store()
    scheduler = Scheduler(store)
    await scheduler.start()
    yield store, scheduler
    await scheduler.stop()


def node_of(store: Store, name: str, namespace: str = "default") -> str | None:
    return store.get(PODS, name, namespace)["spec"].get("nodeName")  # type: ignore[no-any-return]


def unschedulable(store: Store, name: str) -> str:
    for cond in store.get(PODS, name, "default").get("status", {}).get("conditions", []):
        if cond["type"] == "PodScheduled" and cond["status"] == "False":
            return str(cond["message"])
    return ""


async def test_node_selector_picks_the_pool(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    for p in ("a", "b"):
        store.create(NODES, node(f"{p}-0", p))
    store.create(PODS, pod("p", selector={POOL: "b"}), "default")
    await until(lambda: node_of(store, "p") is not None)
    assert node_of(store, "p") == "b-0"


async def test_untolerated_taint_keeps_the_pod_pending_with_a_reason(
    cluster: tuple[Store, Scheduler],
) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a"))
    store.create(PODS, pod("p", tolerate=False), "default")
    await until(lambda: bool(unschedulable(store, "p")))
    assert unschedulable(store, "p") == (
        "0/1 nodes are available: 1 node(s) had untolerated taint {google.com/tpu: present}."
    )
    assert node_of(store, "p") is None


async def test_resources_are_counted_and_freed(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a", chips=4))
    store.create(PODS, pod("first"), "default")
    await until(lambda: node_of(store, "first") == "a-0")
    store.create(PODS, pod("second"), "default")
    await until(lambda: "Insufficient google.com/tpu" in unschedulable(store, "second"))
    store.delete(PODS, "first", "default")
    await until(lambda: node_of(store, "second") == "a-0")


async def test_finished_pods_free_their_node(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a"))
    store.create(PODS, pod("first"), "default")
    store.create(PODS, pod("second"), "default")
    await until(lambda: bool(unschedulable(store, "second")))
    first = store.get(PODS, "first", "default")
    store.update(PODS, {**first, "status": {"phase": "Succeeded"}}, subresource="status")
    await until(lambda: node_of(store, "second") == "a-0")


async def test_required_node_affinity(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a", zone="z1"))
    store.create(NODES, node("b-0", "b", zone="z2"))
    term = {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    store.create(PODS, pod("p", affinity=affinity), "default")
    await until(lambda: node_of(store, "p") == "b-0")


def exclusive_affinity(job: str) -> dict[str, Any]:
    """Upstream v0.2's terms: attract the own Job's pods, repel other exclusive Jobs' pods."""
    key = "jobset.sigs.k8s.io/job-key"
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [{"key": key, "operator": "In", "values": [job]}]
                    },
                    "topologyKey": POOL,
                    "namespaceSelector": {},
                }
            ]
        },
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": key, "operator": "Exists"},
                            {"key": key, "operator": "NotIn", "values": [job]},
                        ]
                    },
                    "topologyKey": POOL,
                    "namespaceSelector": {},
                }
            ]
        },
    }


async def test_pod_affinity_keeps_each_job_alone_in_a_pool(
    cluster: tuple[Store, Scheduler],
) -> None:
    store, scheduler = cluster
    for p in range(3):
        for n in range(2):
            store.create(NODES, node(f"pool-{p}-{n}", f"pool-{p}"))
    for job in ("j0", "j1", "j2"):
        for i in range(2):
            store.create(
                PODS,
                pod(
                    f"{job}-{i}",
                    labels={"jobset.sigs.k8s.io/job-key": job},
                    affinity=exclusive_affinity(job),
                ),
                "default",
            )
    await until(lambda: len(scheduler.placements()) == 6)
    pools = {}
    for job in ("j0", "j1", "j2"):
        job_pools = {node_of(store, f"{job}-{i}").rsplit("-", 1)[0] for i in range(2)}  # type: ignore[union-attr]
        assert len(job_pools) == 1, f"{job} spans {job_pools}"
        pools[job] = job_pools.pop()
    assert len(set(pools.values())) == 3


async def test_running_pods_anti_affinity_repels_newcomers(
    cluster: tuple[Store, Scheduler],
) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a", chips=8))
    store.create(NODES, node("b-0", "b", chips=8))
    repel = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"team": "other"}}, "topologyKey": POOL}
            ]
        }
    }
    store.create(PODS, pod("owner", affinity=repel, selector={POOL: "a"}), "default")
    await until(lambda: node_of(store, "owner") == "a-0")
    store.create(PODS, pod("guest", labels={"team": "other"}), "default")
    await until(lambda: node_of(store, "guest") is not None)
    assert node_of(store, "guest") == "b-0"


async def test_not_ready_nodes_are_skipped_until_ready(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a", ready=False))
    store.create(PODS, pod("p"), "default")
    await until(lambda: "unschedulable or not ready" in unschedulable(store, "p"))
    ready = store.get(NODES, "a-0")
    ready = {
        **ready,
        "status": {**ready["status"], "conditions": [{"type": "Ready", "status": "True"}]},
    }
    store.update(NODES, ready, subresource="status")
    await until(lambda: node_of(store, "p") == "a-0")


async def test_new_nodes_let_waiting_pods_in(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    store.create(PODS, pod("p", selector={POOL: "later"}), "default")
    await until(lambda: bool(unschedulable(store, "p")))
    store.create(NODES, node("later-0", "later"))
    await until(lambda: node_of(store, "p") == "later-0")


async def test_scheduling_gates_are_respected(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a"))
    gated = pod("p")
    gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/topology"}]
    store.create(PODS, gated, "default")
    await asyncio.sleep(0.05)
    assert node_of(store, "p") is None
    current = store.get(PODS, "p", "default")
    store.update(PODS, {**current, "spec": {**current["spec"], "schedulingGates": []}})
    await until(lambda: node_of(store, "p") == "a-0")


async def test_pods_on_a_deleted_node_fail_as_pod_gc_does(cluster: tuple[Store, Scheduler]) -> None:
    store, scheduler = cluster
    store.create(NODES, node("a-0", "a"))
    store.create(PODS, pod("p"), "default")
    await until(lambda: node_of(store, "p") == "a-0")
    store.delete(NODES, "a-0")
    await until(lambda: store.get(PODS, "p", "default")["status"].get("phase") == "Failed")
    conditions = store.get(PODS, "p", "default")["status"]["conditions"]
    assert any(c["type"] == "DisruptionTarget" for c in conditions)
    assert scheduler.placements() == {}


async def test_pods_bound_before_the_scheduler_started_are_counted() -> None:
    store = Store()
    store.create(NODES, node("a-0", "a"))
    existing = pod("old")
    existing["spec"]["nodeName"] = "a-0"
    store.create(PODS, existing, "default")
    async with Scheduler(store) as scheduler:
        store.create(PODS, pod("new"), "default")
        await until(lambda: "Insufficient" in unschedulable(store, "new"))
        assert scheduler.placements() == {"default/old": "a-0"}


async def test_thousands_of_pods_bind_quickly(cluster: tuple[Store, Scheduler]) -> None:
    store, scheduler = cluster
    pools, per_pool = 500, 4
    for p in range(pools):
        for n in range(per_pool):
            store.create(NODES, node(f"pool-{p}-{n}", f"pool-{p}"))
    started = time.monotonic()
    for p in range(pools):
        for n in range(per_pool):
            store.create(PODS, pod(f"j{p}-{n}", selector={POOL: f"pool-{p}"}), "default")
    await until(lambda: scheduler.binds == pools * per_pool, timeout=30)
    elapsed = time.monotonic() - started
    assert elapsed < 10, f"2,000 pods took {elapsed:.1f}s"
    assert node_of(store, "j499-3") is not None and node_of(store, "j499-3").startswith("pool-499-")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "want"),
    [
        pytest.param("4", 4000, id="integer"),
        pytest.param("500m", 500, id="milli"),
        pytest.param("32Gi", 32 * 2**30 * 1000, id="binary suffix"),
        pytest.param("1k", 1_000_000, id="decimal suffix"),
        pytest.param("x", 0, id="garbage is zero"),
    ],
)
def test_parse_quantity(value: str, want: int) -> None:
    assert parse_quantity(value) == want


def test_pod_requests_use_limits_when_requests_are_missing() -> None:
    spec = {
        "containers": [{"resources": {"limits": {TPU: "4"}, "requests": {"cpu": "1"}}}],
        "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
    }
    assert pod_requests(spec) == {"pods": 1000, TPU: 4000, "cpu": 2000}


@pytest.mark.parametrize(
    ("toleration", "want"),
    [
        pytest.param(TPU_TOLERATION, True, id="exists on key and effect"),
        pytest.param({"operator": "Exists"}, True, id="empty key tolerates everything"),
        pytest.param({"key": TPU, "value": "present"}, True, id="equal with value"),
        pytest.param({"key": TPU, "value": "absent"}, False, id="equal with another value"),
        pytest.param(
            {"key": TPU, "operator": "Exists", "effect": "NoExecute"}, False, id="another effect"
        ),
    ],
)
def test_tolerated(toleration: dict[str, str], want: bool) -> None:
    assert tolerated(TPU_TAINT, [toleration]) is want


async def test_pods_for_another_scheduler_are_left_alone(cluster: tuple[Store, Scheduler]) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a"))
    other = pod("other")
    other["spec"]["schedulerName"] = "volcano"
    store.create(PODS, other, "default")
    store.create(PODS, pod("mine"), "default")
    await until(lambda: node_of(store, "mine") == "a-0")
    assert node_of(store, "other") is None


async def test_an_unschedulable_pod_gets_a_failed_scheduling_event(
    cluster: tuple[Store, Scheduler],
) -> None:
    store, _ = cluster
    store.create(NODES, node("a-0", "a"))
    store.create(PODS, pod("p", tolerate=False), "default")
    events = GVR("", "v1", "events")

    def failed() -> list[dict[str, Any]]:
        return [e for e in store.list(events, "default").items
                if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "p"]

    await until(lambda: bool(failed()))
    event = failed()[0]
    assert (event["type"], event["source"]["component"]) == ("Warning", "default-scheduler")
    assert event["message"] == unschedulable(store, "p")
