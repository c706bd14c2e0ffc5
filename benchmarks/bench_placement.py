"""Exclusive placement costs: the pure allocator, and the sim scheduler with selectors vs affinity.

    .venv/bin/python benchmarks/bench_placement.py

1. `allocate`: one JobSet of R replicas over P pools of 2 hosts with half the pools held.
2. The sim's scheduler binding J Jobs x 8 pods on J pools of 8 nodes, with the pods pinned by a
   nodeSelector (what our controller writes) or carrying upstream v0.2's pod affinity and
   anti-affinity instead. This is our simulated scheduler, not kube-scheduler: it shows the
   relative cost of the two ways, not real-cluster throughput.
3. End to end over HTTP: the real controller, the sim API server, its Job controller and scheduler;
   one JobSet of S slices x H hosts on S pools of H nodes, from creation until every pod runs, in
   the controller's `exclusive` (domains) and `affinity` placement modes.
"""

from __future__ import annotations

import asyncio
import platform
import time
from datetime import UTC, datetime
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.placement import (
    Occupancy,
    SlimNode,
    Taint,
    allocate,
    domains_from_nodes,
    exclusive_affinity,
    job_view_from_manifest,
    request_from_job_manifest,
)
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.cluster.scheduler import Scheduler

POOL = "cloud.google.com/gke-nodepool"
TPU = "google.com/tpu"
PODS = GVR("", "v1", "pods")
NODES = GVR("", "v1", "nodes")


def _job(name: str, pods: int, domain: str | None = None) -> dict[str, Any]:
    selector = {POOL: domain} if domain else {}
    return {
        "metadata": {"name": name, "namespace": "default", "annotations": {c.EXCLUSIVE_KEY: POOL}},
        "spec": {
            "parallelism": pods,
            "completions": pods,
            "template": {
                "spec": {
                    "containers": [{"name": "m", "resources": {"limits": {TPU: "4"}}}],
                    "tolerations": [{"key": TPU, "operator": "Exists"}],
                    "nodeSelector": selector,
                }
            },
        },
    }


def bench_allocate(pools: int, replicas: int) -> float:
    nodes = [
        SlimNode(
            f"p{p}-n{n}",
            {POOL: f"pool-{p}"},
            (Taint(TPU, "present"),),
            {TPU: 4000, "pods": 110_000},
        )
        for p in range(pools)
        for n in range(2)
    ]
    domains = domains_from_nodes(nodes, POOL)
    held = [job_view_from_manifest(_job(f"o-{p}", 2, f"pool-{2 * p}")) for p in range(pools // 2)]
    occupancy = Occupancy.from_views(v for v in held if v is not None)
    requests = [request_from_job_manifest(_job(f"js-{i}", 2), POOL) for i in range(replicas)]
    started = time.perf_counter()
    rounds = 5
    for _ in range(rounds):
        result = allocate(requests, domains, occupancy)
    elapsed = (time.perf_counter() - started) / rounds
    assert len(result.domains) == replicas  # type: ignore[union-attr]
    return elapsed


def _node(name: str, pool: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {POOL: pool}},
        "spec": {"taints": [{"key": TPU, "value": "present", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {TPU: "4", "pods": "15"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(job: int, index: int, affinity: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "m", "resources": {"limits": {TPU: "4"}}}],
        "tolerations": [{"key": TPU, "operator": "Exists"}],
    }
    if affinity:
        spec["affinity"] = exclusive_affinity(f"job-{job}", POOL)
    else:
        spec["nodeSelector"] = {POOL: f"pool-{job}"}
    return {
        "metadata": {
            "name": f"job-{job}-{index}",
            "namespace": "default",
            "labels": {c.JOB_KEY: f"job-{job}"},
        },
        "spec": spec,
    }


async def bench_scheduler(jobs: int, per_job: int, affinity: bool) -> float:
    store = Store()
    for p in range(jobs):
        for n in range(per_job):
            store.create(NODES, _node(f"pool-{p}-{n}", f"pool-{p}"))
    async with Scheduler(store) as scheduler:
        await asyncio.sleep(0.05)
        started = time.perf_counter()
        for j in range(jobs):
            for i in range(per_job):
                store.create(PODS, _pod(j, i, affinity), "default")
        while scheduler.binds < jobs * per_job:
            await asyncio.sleep(0.001)
        elapsed = time.perf_counter() - started
    return jobs * per_job / elapsed


def _tpu_jobset(slices: int, hosts: int) -> dict[str, Any]:
    from jobset_infra.testing.jobsets import make_jobset

    return (
        make_jobset("train", "default")
        .exclusive(POOL)
        .replicated_job("slice", replicas=slices, parallelism=hosts)
        .pod_spec(
            "slice",
            restartPolicy="Never",
            containers=[{"name": "jax", "image": "jax", "resources": {"limits": {TPU: "4"}}}],
            tolerations=[{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
        )
        .obj()
    )


async def bench_end_to_end(slices: int, hosts: int, mode: str) -> float:
    import yaml

    from jobset_infra.api.controller_config import ControllerConfig
    from jobset_infra.controller.runtime.manager import run_controller
    from jobset_infra.sim.apiserver.server import Sim
    from jobset_infra.sim.cluster.job_controller import JobController

    sim = Sim(port=0)
    sim.add_component(JobController(sim.store, wait_for_binding=True))
    sim.add_component(Scheduler(sim.store))
    async with sim:
        with open("jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml") as f:
            sim.store.create(
                GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions"), yaml.safe_load(f)
            )
        for p in range(slices):
            for n in range(hosts):
                sim.store.create(NODES, _node(f"pool-{p}-{n}", f"pool-{p}"))
        config = ControllerConfig.model_validate(
            {
                "health": {"healthProbeBindAddress": "127.0.0.1:0"},
                "metrics": {"bindAddress": "127.0.0.1:0", "secureServing": False},
                "placement": {"mode": mode},
            }
        )
        async with run_controller(config, url=sim.url) as ctl:
            await ctl.wait_leader(timeout=30)
            started = time.perf_counter()
            sim.store.create(
                GVR(c.GROUP, c.VERSION, c.PLURAL), _tpu_jobset(slices, hosts), "default"
            )
            want = slices * hosts
            while (
                sum(
                    1
                    for p in sim.store.iter_objects(PODS)
                    if (p.get("status") or {}).get("phase") == "Running"
                )
                < want
            ):
                await asyncio.sleep(0.01)
            return time.perf_counter() - started


def main() -> None:
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    )
    for pools, replicas in ((64, 16), (512, 128), (2048, 512)):
        ms = bench_allocate(pools, replicas) * 1000
        print(f"allocate: {replicas} Jobs over {pools} pools (half held): {ms:.1f} ms")
    for affinity in (False, True):
        rate = asyncio.run(bench_scheduler(250, 8, affinity))
        kind = "pod affinity/anti-affinity (upstream v0.2)" if affinity else "nodeSelector (ours)"
        print(f"sim scheduler, 250 Jobs x 8 pods on 2,000 nodes, {kind}: {rate:,.0f} pods/s")
    for mode in ("exclusive", "affinity"):
        seconds = asyncio.run(bench_end_to_end(64, 4, mode))
        print(
            f"end to end, 1 JobSet of 64 slices x 4 hosts, mode {mode}: {seconds:.2f} s "
            f"to all 256 pods Running"
        )


if __name__ == "__main__":
    main()
