"""Recovery when the leader is killed mid-recovery, against recovery with the leader alive.

    JOBSET_INFRA_TOOLS=... .venv/bin/python -m benchmarks.bench_leader_recovery [--slices 8]
        [--rounds 2] [--lease 15]

One real local cluster (`jobset-infra cluster up`'s control plane, kwok Nodes): S+1 single-host
TPU v5e 2x4 slice pools. Two controllers run in this process with Lease leader election (the
production timings by default: lease 15 s, renew deadline 10 s, retry 2 s), as two replicas of
the Deployment would. A JobSet of S slices (the default failure policy: the whole JobSet
restarts) fills S pools; the nodes of one pool go NotReady (kwok) and that slice's pod exits
137. Timed from the exit to every slice of the restarted attempt running again, in two ways,
alternating which goes first:

- `alive`: the leader does the whole recovery;
- `killed`: as soon as the leader has restarted the JobSet (its `RestartingJobSet` condition is
  True), it is killed the way a crashed pod dies (no Lease release): the standby takes over
  once the Lease expires and finishes the recovery.

After each run the leader's `jobset_recovery_seconds{cause}` is read: in `killed` runs the new
leader measured a recovery it did not see start (read back from the JobSet's condition and the
slice-health ledger, both cluster state), with the cause the old leader recorded. The killed
replica is started again as the new standby. Results go to
benchmarks/runs/<UTC time>-leader-recovery.jsonl and a table on stdout.
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

from benchmarks.bench_spares import _set_not_ready
from jobset_infra.api import constants as k
from jobset_infra.api import resilience as res
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION
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
NS = "bench"


def jobset(plan: SlicePoolsPlan, name: str, slices: int) -> dict[str, Any]:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(plan), slices=slices)
    spec = WorkloadSpec(name=name, namespace=NS, replicated_jobs=[job],
                        failure_policy={"maxRestarts": 5})
    return dict(plan_workload(spec).manifest)


async def _running(api: KubeClient, name: str, attempt: int) -> dict[str, str]:
    """Job name -> node of the JobSet's Running pods of restart `attempt`."""
    out = {}
    for pod in (await api.list(PODS, NS, f"{k.JOBSET_NAME_KEY}={name}"))["items"]:
        labels = pod["metadata"].get("labels") or {}
        if ((pod.get("status") or {}).get("phase") == "Running"
                and not pod["metadata"].get("deletionTimestamp")
                and labels.get(k.RESTARTS_KEY) == str(attempt)):
            out[labels.get("job-name", "")] = pod["spec"]["nodeName"]
    return out


async def _restarting(api: KubeClient, name: str) -> bool:
    js = await api.get(JOBSETS, name, NS)
    return any(c.get("type") == k.CONDITION_RESTARTING and c.get("status") == "True"
               for c in (js.get("status") or {}).get("conditions") or ())


class Replicas:
    """Two controllers with leader election in this process; `kill` crashes the leader."""

    def __init__(self, access: Any, lease: float) -> None:
        self.access, self.lease, self.running = access, lease, dict[str, Any]()

    def config(self) -> Any:
        from tests.integration.conftest import fast_config

        return fast_config(controller={"workers": 4}, leaderElection={
            "leaderElect": True, "resourceName": "jobset-bench-leader",
            "resourceNamespace": "jobset-system", "leaseDuration": f"{self.lease:g}s",
            "renewDeadline": f"{self.lease * 2 / 3:g}s",
            "retryPeriod": f"{max(self.lease / 7.5, 0.2):g}s"})

    async def start(self, identity: str) -> None:
        from jobset_infra.controller.runtime.manager import start_controller

        self.running[identity] = await start_controller(self.config(), access=self.access,
                                                        identity=identity)

    async def leader(self, timeout: float = 120.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for ctl in self.running.values():
                if ctl.is_leader:
                    return ctl
            await asyncio.sleep(0.1)
        raise TimeoutError("no leader")

    async def kill_leader(self) -> str:
        ctl = await self.leader()
        ctl.kill()
        del self.running[ctl.identity]
        return str(ctl.identity)

    async def stop(self) -> None:
        for ctl in self.running.values():
            await ctl.stop()


def _recovery(ctl: Any) -> dict[str, tuple[float, float]]:
    """cause -> (count, sum) of the leader's recovery histogram."""
    out = {}
    for cause in res.Cause:
        labels = {"cause": cause.value}
        count = ctl.metrics.sample(f"{res.METRIC_RECOVERY_SECONDS}_count", labels)
        if count:
            out[cause.value] = (count, ctl.metrics.sample(
                f"{res.METRIC_RECOVERY_SECONDS}_sum", labels))
    return out


async def one_run(api: KubeClient, replicas: Replicas, plan: SlicePoolsPlan, slices: int, *,
                  kill: bool, index: int, timeout: float = 600.0) -> dict[str, Any]:
    name = f"run-{index}"
    await api.create(JOBSETS, jobset(plan, name, slices), NS)
    started = time.monotonic()
    while len(await _running(api, name, 0)) < slices:
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{name}: {slices} slices not running within {timeout:.0f} s")
        await asyncio.sleep(0.2)
    before = await _running(api, name, 0)
    victim_job = sorted(before)[0]
    pool = {n["metadata"]["name"]: n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL]
            for n in (await api.list(NODES))["items"]}
    lost = [n for n, p in pool.items() if p == pool[before[victim_job]]]
    await _set_not_ready(api, lost, True)
    [victim] = [p for p in (await api.list(PODS, NS, f"job-name={victim_job}"))["items"]
                if (p.get("status") or {}).get("phase") == "Running"]
    old = await replicas.leader()
    metrics_before = _recovery(old)
    failed_at = time.monotonic()
    await api.patch(PODS, victim["metadata"]["name"],
                    {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: "137"}}},
                    namespace=NS, content_type=MERGE_PATCH)
    killed = None
    if kill:
        while not await _restarting(api, name):
            await asyncio.sleep(0.05)
        killed_s = time.monotonic() - failed_at
        killed = await replicas.kill_leader()
    recovered_s = None
    while time.monotonic() - failed_at < timeout:
        if len(await _running(api, name, 1)) == slices:
            recovered_s = time.monotonic() - failed_at
            break
        await asyncio.sleep(0.1)
    leader = await replicas.leader()
    baseline = metrics_before if leader is old else {}
    measured: dict[str, tuple[float, float]] = {}
    deadline = time.monotonic() + 30  # observed at the leader's next pass of the JobSet
    while not measured and time.monotonic() < deadline:
        measured = {cause: (n - baseline.get(cause, (0, 0))[0], s - baseline.get(cause, (0, 0))[1])
                    for cause, (n, s) in _recovery(leader).items()
                    if n > baseline.get(cause, (0, 0))[0]}
        await asyncio.sleep(0.2)
    await _set_not_ready(api, lost, False)
    await _delete(api, name)
    if killed is not None:
        await replicas.start(killed)  # the crashed pod comes back as the standby
    return {"slices": slices, "leader": "killed" if kill else "alive",
            "killed_after_s": killed_s if kill else None, "recovered_s": recovered_s,
            "lease_s": replicas.lease, "failed_pool": pool[before[victim_job]],
            "leader_measured": measured}


async def _delete(api: KubeClient, name: str) -> None:
    with contextlib.suppress(NotFoundError):
        await api.delete(JOBSETS, name, namespace=NS, propagation="Foreground")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        left = (await api.list(PODS, NS, f"{k.JOBSET_NAME_KEY}={name}"))["items"]
        jobs = (await api.list(JOBS, NS, f"{k.JOBSET_NAME_KEY}={name}"))["items"]
        if not left and not jobs:
            return
        await asyncio.sleep(0.2)
    raise TimeoutError(f"{NS}/{name} not gone within 300 s")


async def main(slices: int, rounds: int, lease: float) -> list[dict[str, Any]]:
    from tests.realcluster import real_cluster

    text = f"lr={SHAPE}:{slices + 1}"
    [plan] = tpu_plans(parse_pools_text(text))
    results: list[dict[str, Any]] = []
    with real_cluster(text, crds=(jobset_crd(),)) as cluster:
        async with cluster.client() as api:
            for ns in (NS, "jobset-system"):
                await api.create(NAMESPACES, {"metadata": {"name": ns}})
            replicas = Replicas(cluster.access(), lease)
            await replicas.start("replica-a")
            await replicas.leader()
            await replicas.start("replica-b")
            try:
                index = 0
                for round_ in range(rounds):
                    for kill in (False, True) if round_ % 2 == 0 else (True, False):
                        run = await one_run(api, replicas, plan, slices, kill=kill, index=index)
                        run["load"] = round(os.getloadavg()[0], 1)
                        results.append(run)
                        print(json.dumps(run), flush=True)
                        index += 1
            finally:
                await replicas.stop()
    return results


def _table(results: list[dict[str, Any]]) -> str:
    lines = ["| slices | leader | killed after | failure -> all slices running | "
             "the leader's jobset_recovery_seconds |", "|---:|---|---:|---:|---|"]
    for r in results:
        took = f"{r['recovered_s']:.1f} s" if r["recovered_s"] is not None else "timed out"
        kill = f"{r['killed_after_s']:.1f} s" if r["killed_after_s"] is not None else ""
        seen = ", ".join(f"{c}: {n:g} x, {s:.1f} s" for c, (n, s) in
                         r["leader_measured"].items()) or "none"
        lines.append(f"| {r['slices']} | {r['leader']} | {kill} | {took} | {seen} |")
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slices", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--lease", type=float, default=15.0,
                        help="leaseDuration in seconds (renew deadline 2/3 of it)")
    args = parser.parse_args()
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M")
    print(f"# {stamp} UTC, {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    found = asyncio.run(main(args.slices, args.rounds, args.lease))
    RUNS.mkdir(exist_ok=True)
    out = RUNS / f"{stamp}-leader-recovery.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in found))
    print(_table(found))
    print(f"load at the end {os.getloadavg()[0]:.1f}; runs in {out}")
