"""Placement time of the two modes on the real control plane with the real Kueue manager.

    JOBSET_INFRA_TOOLS=... .venv/bin/python -m benchmarks.bench_placement_modes [--rounds 3]

One real local cluster (`jobset-infra cluster up`'s control plane, kwok Nodes) with two groups of
64 TPU v5e 2x4 slice pools (2 hosts each, 256 Nodes), and one real system node running our
controller from its image and Kueue as it ships (`tests.kueue_real`, as the e2e tier runs it; root
and the node tools): group `tas` is queued through a flavor naming a Topology (Kueue TAS places the
slices), group `ctl` through a plain one (our controller does). For S = 16 and 64 slices, in rounds
that alternate which mode goes first, one JobSet of S slices is created in a mode's namespace and
timed until Kueue admits its Workload, and until all 2*S pods exist, are bound to a node and run;
then it is deleted (foreground) and its pods are gone before the next. Wall clock on a shared
machine: compare the two modes within a round. Results go to benchmarks/runs/<UTC time>-placement-
modes.jsonl and a table on stdout. """

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jobset_infra.api import constants as k
from jobset_infra.controller.runtime.kube import KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import JOBSETS, Resource
from jobset_infra.manifests.crd import jobset_crd
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans
from tests.kueue_real import (
    IMAGES,
    WORKLOADS,
    controller_and_kueue,
    group_jobset,
)
from tests.realcluster import real_cluster

POOLS_PER_GROUP = 64
NODES = (f"tas=v5e-2x4@ct5lp-hightpu-4t:{POOLS_PER_GROUP},"
         f"ctl=v5e-2x4@ct5lp-hightpu-4t:{POOLS_PER_GROUP}")
PLANS = {plan.name: plan for plan in tpu_plans(parse_pools_text(NODES))}
GROUP = {Placer.KUEUE_TAS: "tas", Placer.CONTROLLER: "ctl"}
PODS = Resource("", "v1", "pods", "Pod")
RUNS = Path(__file__).resolve().parent / "runs"


async def _admitted(api: KubeClient, ns: str, uid: str) -> bool:
    for wl in (await api.list(WORKLOADS, namespace=ns))["items"]:
        if any(o.get("uid") == uid for o in wl["metadata"].get("ownerReferences") or []):
            return any(c.get("type") == "Admitted" and c.get("status") == "True"
                       for c in (wl.get("status") or {}).get("conditions") or [])
    return False


async def _pods(api: KubeClient, ns: str, name: str) -> tuple[int, int, int]:
    """(pods created, pods bound to a node, pods running) of the JobSet."""
    pods = [p for p in (await api.list(PODS, namespace=ns))["items"]
            if (p["metadata"].get("labels") or {}).get(k.JOBSET_NAME_KEY) == name]
    bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
    running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
    return len(pods), bound, running


async def one_run(api: KubeClient, placer: Placer, slices: int, name: str,
                  timeout: float = 600.0) -> dict[str, Any]:
    """Create the JobSet; return seconds to admission, to all pods created, bound and running."""
    ns = GROUP[placer]
    manifest = group_jobset(PLANS[ns], placer, name, slices)
    started = time.monotonic()
    created = await api.create(JOBSETS, manifest, ns)
    uid = created["metadata"]["uid"]
    marks: dict[str, float | None] = dict.fromkeys(
        ("admitted_s", "created_s", "bound_s", "running_s"))
    want = 2 * slices
    while time.monotonic() - started < timeout and marks["running_s"] is None:
        if marks["admitted_s"] is None and await _admitted(api, ns, uid):
            marks["admitted_s"] = time.monotonic() - started
        if marks["admitted_s"] is not None:
            counts = await _pods(api, ns, name)
            now = time.monotonic() - started
            for key, count in zip(("created_s", "bound_s", "running_s"), counts, strict=True):
                if marks[key] is None and count == want:
                    marks[key] = now
        await asyncio.sleep(0.1)
    stuck = await _diagnosis(api, ns, name) if marks["running_s"] is None else None
    await _delete(api, ns, name)
    return {"mode": placer.value, "slices": slices, "pods": want, **marks,
            **({"stuck": stuck} if stuck else {})}


async def _diagnosis(api: KubeClient, ns: str, name: str) -> dict[str, Any]:
    """What the pods of a run that timed out were waiting on (for the results file)."""
    pods = [p for p in (await api.list(PODS, namespace=ns))["items"]
            if (p["metadata"].get("labels") or {}).get(k.JOBSET_NAME_KEY) == name]
    waiting: dict[str, int] = {}
    for pod in pods:
        gates = [g["name"] for g in (pod["spec"].get("schedulingGates") or [])]
        scheduled = next((c for c in (pod.get("status") or {}).get("conditions") or []
                          if c.get("type") == "PodScheduled"), {})
        key = (f"gated {gates}" if gates else
               f"{pod.get('status', {}).get('phase')}: {scheduled.get('message', '')[:160]}")
        waiting[key] = waiting.get(key, 0) + 1
    return {"pods": len(pods), "by_state": waiting}


async def _delete(api: KubeClient, ns: str, name: str) -> None:
    with contextlib.suppress(NotFoundError):
        await api.delete(JOBSETS, name, namespace=ns, propagation="Foreground")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        left = [p for p in (await api.list(PODS, namespace=ns))["items"]
                if (p["metadata"].get("labels") or {}).get(k.JOBSET_NAME_KEY) == name]
        try:
            await api.get(JOBSETS, name, ns)
        except NotFoundError:
            if not left:
                return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{ns}/{name} not gone within 300 s")


async def main(rounds: int, sizes: list[int]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with real_cluster(NODES, crds=(jobset_crd(),), system_node=True, images=IMAGES) as cluster:
        async with cluster.client() as api:
            groups = {placer: (group, PLANS[group]) for placer, group in GROUP.items()}
            async with controller_and_kueue(api, cluster, groups):
                for slices in sizes:
                    for round_ in range(rounds):
                        order = list(GROUP) if round_ % 2 == 0 else list(reversed(GROUP))
                        for placer in order:
                            run = await one_run(api, placer, slices, f"s{slices}-r{round_}")
                            run["round"] = round_
                            results.append(run)
                            print(json.dumps(run), flush=True)
    return results


def _table(results: list[dict[str, Any]]) -> str:
    keys = ("admitted_s", "created_s", "bound_s", "running_s")
    lines = ["| slices (pods) | mode | admitted | all pods created | all bound | all running | "
             "runs |", "|---|---|---:|---:|---:|---:|---:|"]
    for slices in sorted({r["slices"] for r in results}):
        for mode in ("kueue-tas", "controller"):
            mine = [r for r in results if r["slices"] == slices and r["mode"] == mode]
            done = [r for r in mine if all(r.get(key) is not None for key in keys)]
            cells = " | ".join(f"{statistics.median(r[key] for r in done):.1f} s" if done else "-"
                               for key in keys)
            lines.append(f"| {slices} ({2 * slices}) | {mode} | {cells} | "
                         f"{len(done)}/{len(mine)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="16,64")
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M")
    print(f"# {stamp} UTC, {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    found = asyncio.run(main(args.rounds, [int(s) for s in args.sizes.split(",")]))
    RUNS.mkdir(exist_ok=True)
    out = RUNS / f"{stamp}-placement-modes.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in found))
    print(_table(found))
    print(f"load at the end {os.getloadavg()[0]:.1f}; runs in {out}")
