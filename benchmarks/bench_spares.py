"""Recovery onto a hot-spare pool against recovery without one, on the real control plane.

    JOBSET_INFRA_TOOLS=... .venv/bin/python -m benchmarks.bench_spares [--sizes 16,64]

One real local cluster (`jobset-infra cluster up`'s control plane, kwok Nodes) with, for each size
S, two groups of S single-host TPU v5e 2x4 slice pools (ct5lp-hightpu-8t, one VM per slice): `sS`
with one hot spare (`:S+1`, as `TpuSlicePools(spares=1)` plans it) and `nS` without. Our
controller runs in this process (its metrics read directly), RestartJob gate on. For each size,
alternating which group goes first, a JobSet of S slices (failure policy: RestartJob) fills its
group's S pools; then the nodes of one pool go NotReady (kwok) and that slice's pod exits 137.
Timed from the failure to every slice running again (the failed slice's new Job's pod Running):

- with a spare, the failed slice is recreated on the spare at once (the pool stays NotReady);
- without one, every pool is taken or lost, so the slice waits until the lost pool is repaired:
  its nodes come back Ready `--repair` seconds after the failure (a stand-in: GKE's node
  auto-repair recreates a VM in minutes, not seconds), then lands there.

Results go to benchmarks/runs/<UTC time>-spares.jsonl, the controller's recovery metrics after the
run to <UTC time>-spares-metrics.txt (the exposition text), and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobset_infra.api import constants as k
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION, NOT_READY_ANNOTATION
from jobset_infra.controller.runtime.kube import MERGE_PATCH, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, NODES, PODS, Resource
from jobset_infra.manifests.crd import jobset_crd
from jobset_infra.manifests.workload import TpuJob, TpuTarget, WorkloadSpec, plan_workload
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.pools import SlicePoolsPlan
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans

RUNS = Path(__file__).resolve().parent / "runs"
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SHAPE = "v5e-2x4@ct5lp-hightpu-8t"
CONTAINER = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}


def nodes_text(sizes: list[int]) -> str:
    return ",".join(f"s{s}={SHAPE}:{s}+1,n{s}={SHAPE}:{s}" for s in sizes)


def jobset(plan: SlicePoolsPlan, name: str, slices: int) -> dict[str, Any]:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(plan), slices=slices)
    spec = WorkloadSpec(name=name, namespace="bench", replicated_jobs=[job],
                        failure_policy={"maxRestarts": 5})
    manifest = dict(plan_workload(spec).manifest)
    # RestartJob needs the controller's gate, which the offline check assumes off.
    manifest["spec"]["failurePolicy"]["rules"] = [{"name": "sliceAlone", "action": "RestartJob"}]
    # Only this group's pools: every group has the same shape.
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["nodeSelector"][tpu.SLICE_GROUP_LABEL] = plan.name
    return manifest


async def _running(api: KubeClient, name: str) -> dict[str, tuple[str, str]]:
    """Job name -> (its job-restart-attempt, node) of the JobSet's Running pods."""
    out = {}
    for pod in (await api.list(PODS, "bench", f"{k.JOBSET_NAME_KEY}={name}"))["items"]:
        labels = pod["metadata"].get("labels") or {}
        if (pod.get("status") or {}).get("phase") == "Running" and \
                not pod["metadata"].get("deletionTimestamp"):
            out[labels.get("job-name", "")] = (labels.get(k.JOB_RESTART_ATTEMPT_KEY, ""),
                                               pod["spec"]["nodeName"])
    return out


async def _set_not_ready(api: KubeClient, nodes: list[str], value: bool) -> None:
    """Mark `nodes` NotReady (or Ready again) and wait until they report it."""
    for node in nodes:
        await api.patch(NODES, node, {"metadata": {"annotations": {
            NOT_READY_ANNOTATION: "true" if value else None}}}, content_type=MERGE_PATCH)
    want = "False" if value else "True"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready = {n["metadata"]["name"]: next(
            (c["status"] for c in (n.get("status") or {}).get("conditions") or ()
             if c.get("type") == "Ready"), "") for n in (await api.list(NODES))["items"]}
        if all(ready.get(node) == want for node in nodes):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"nodes {nodes} not Ready={want} within 120 s")


async def one_run(api: KubeClient, plan: SlicePoolsPlan, repair: float,
                  timeout: float = 900.0) -> dict[str, Any]:
    slices, name = plan.slices, f"{plan.name}-run"
    await api.create(JOBSETS, jobset(plan, name, slices), "bench")
    started = time.monotonic()
    while len(await _running(api, name)) < slices:
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{name}: {slices} slices not running within {timeout:.0f} s")
        await asyncio.sleep(0.2)
    placed_s = time.monotonic() - started
    before = await _running(api, name)
    victim_job = sorted(before)[0]
    node = before[victim_job][1]
    pool = {n["metadata"]["name"]: n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL]
            for n in (await api.list(NODES))["items"]}
    lost = [n for n, p in pool.items() if p == pool[node]]
    await _set_not_ready(api, lost, True)  # the host died: NotReady, then its process fails
    [victim] = [p for p in (await api.list(PODS, "bench", f"job-name={victim_job}"))["items"]
                if (p.get("status") or {}).get("phase") == "Running"]
    failed_at = time.monotonic()
    await api.patch(PODS, victim["metadata"]["name"],
                    {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: "137"}}},
                    namespace="bench", content_type=MERGE_PATCH)
    repaired = plan.spares > 0  # with a spare nothing waits for the repair: never repaired
    recovered_s = None
    while time.monotonic() - failed_at < timeout:
        if not repaired and time.monotonic() - failed_at >= repair:
            await _set_not_ready(api, lost, False)
            repaired = True
        now = await _running(api, name)
        if len(now) == slices and now.get(victim_job, ("0", ""))[0] == "1":
            recovered_s = time.monotonic() - failed_at
            landed = pool[now[victim_job][1]]
            break
        await asyncio.sleep(0.1)
    await _set_not_ready(api, lost, False)
    await _delete(api, name)
    return {"group": plan.name, "slices": slices, "spares": plan.spares, "placed_s": placed_s,
            "recovered_s": recovered_s, "failed_pool": pool[node],
            "landed_on": landed if recovered_s is not None else None,
            "repair_s": repair if plan.spares == 0 else None}


async def _delete(api: KubeClient, name: str) -> None:
    with contextlib.suppress(NotFoundError):
        await api.delete(JOBSETS, name, namespace="bench", propagation="Foreground")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        left = (await api.list(PODS, "bench", f"{k.JOBSET_NAME_KEY}={name}"))["items"]
        jobs = (await api.list(JOBS, "bench", f"{k.JOBSET_NAME_KEY}={name}"))["items"]
        if not left and not jobs:
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"bench/{name} not gone within 300 s")


async def main(sizes: list[int], repair: float) -> tuple[list[dict[str, Any]], str]:
    from jobset_infra.controller.runtime.manager import start_controller
    from tests.integration.conftest import fast_config
    from tests.realcluster import real_cluster

    text = nodes_text(sizes)
    plans = {plan.name: plan for plan in tpu_plans(parse_pools_text(text))}
    results: list[dict[str, Any]] = []
    with real_cluster(text, crds=(jobset_crd(),)) as cluster:
        async with cluster.client() as api:
            for ns in ("bench", "jobset-system"):
                await api.create(NAMESPACES, {"metadata": {"name": ns}})
            config = fast_config(featureGates={"RestartJob": True}, controller={"workers": 4})
            ctl = await start_controller(config, access=cluster.access())
            try:
                for index, slices in enumerate(sizes):
                    order = [f"s{slices}", f"n{slices}"]
                    for group in order if index % 2 == 0 else reversed(order):
                        run = await one_run(api, plans[group], repair)
                        run["load"] = round(os.getloadavg()[0], 1)
                        results.append(run)
                        print(json.dumps(run), flush=True)
                exposition = ctl.metrics.exposition().decode()
            finally:
                await ctl.stop()
    return results, exposition


def _table(results: list[dict[str, Any]]) -> str:
    lines = ["| slices | spares | first placement | failure -> all slices running | "
             "failed slice landed on |", "|---:|---:|---:|---:|---|"]
    for r in results:
        took = f"{r['recovered_s']:.1f} s" if r["recovered_s"] is not None else "timed out"
        wait = f" (pool repaired after {r['repair_s']:.0f} s)" if r["repair_s"] else ""
        lines.append(f"| {r['slices']} | {r['spares']} | {r['placed_s']:.1f} s | {took}{wait} | "
                     f"{r['landed_on']} (failed: {r['failed_pool']}) |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="16,64")
    parser.add_argument("--repair", type=float, default=60.0,
                        help="seconds after the failure the lost pool is Ready again")
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M")
    print(f"# {stamp} UTC, {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    found, metrics = asyncio.run(main([int(s) for s in args.sizes.split(",")], args.repair))
    RUNS.mkdir(exist_ok=True)
    out = RUNS / f"{stamp}-spares.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in found))
    (RUNS / f"{stamp}-spares-metrics.txt").write_text(metrics)
    print(_table(found))
    print(f"load at the end {os.getloadavg()[0]:.1f}; runs in {out}")
