"""`jobset-infra sim --demo`: a multislice JobSet on a simulated GKE TPU cluster, end to end.

It starts the sim with 4 TPU v5e 2x4 slice pools (2 nodes each), the sim scheduler, the fake Job
controller and our JobSet controller, then creates a 4-slice JobSet with exclusive placement over
HTTP, prints each step as it is observed in the cluster, fails one slice the way a lost TPU host
would, shows the JobSet restarting every slice, lets training finish, and exits 0 once the JobSet
is Completed (1 on a timeout, with what was missing). With `--keep` the cluster keeps serving
after that, with the kubeconfig and kubectl lines to look at it, until Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

import aiohttp

from jobset_infra.api import constants as c
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.command import (
    Cluster,
    Options,
    StartError,
    start_cluster,
    until_stopped,
)
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.tool_paths import kubectl_note, shown
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.node_pools import parse_nodes

NAMESPACE: Final = "default"
NAME: Final = "pretrain"
SLICES: Final = 4
JOBSETS: Final = GVR(c.GROUP, c.VERSION, c.PLURAL)
JOBS: Final = GVR("batch", "v1", "jobs")
PODS: Final = GVR("", "v1", "pods")
NODES: Final = GVR("", "v1", "nodes")
STEP_TIMEOUT: Final = 20.0
FAILURE_MESSAGE: Final = "simulated: TPU host of this slice stopped responding"


def demo_jobset(pools: int, hosts: int, chips: int) -> dict[str, Any]:
    """One replicated job `slice` with a Job per TPU slice, each on its own node pool."""
    container = {
        "name": "train", "image": "python:3.12-slim",
        "command": ["python", "-c", "print('training step')"],
        "resources": {"requests": {tpu.TPU_RESOURCE: str(chips)},
                      "limits": {tpu.TPU_RESOURCE: str(chips)}},
    }
    return (
        make_jobset(NAME, NAMESPACE)
        .exclusive(tpu.GKE_NODEPOOL_LABEL)
        .replicated_job("slice", replicas=pools, parallelism=hosts)
        .job_spec("slice", backoffLimit=0, completionMode=c.COMPLETION_MODE_INDEXED)
        .pod_spec(
            "slice", restartPolicy="Never", containers=[container],
            nodeSelector={tpu.ACCELERATOR_LABEL: "tpu-v5-lite-podslice",
                          tpu.TOPOLOGY_LABEL: "2x4"},
            tolerations=[{"key": tpu.TPU_TAINT_KEY, "operator": "Exists",
                          "effect": "NoSchedule"}],
        )
        .failure_policy(max_restarts=3)
        .success_policy("All")
        .obj()
    )


class DemoError(RuntimeError):
    """A step of the demo did not happen (in time, or as it should)."""


class Reporter:
    """Prints `[  1.2s] message` lines, timed from the start of the demo."""

    def __init__(self) -> None:
        self.started = time.monotonic()

    def say(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:5.1f}s] {message}", flush=True)


async def until(check: Callable[[], Any], what: str, timeout: float = STEP_TIMEOUT) -> Any:
    """Poll the cluster until `check()` is truthy; TimeoutError naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.05)


async def run(opts: Options) -> int:
    pools = opts.pools or parse_nodes(f"v5e-2x4:{SLICES}")
    opts = replace(opts, pools=pools, controller=True, job_controller=True, auto_complete=None)
    say = Reporter().say
    print("jobset-infra sim --demo: a multislice TPU training JobSet on a simulated GKE cluster "
          "(no cloud account needed)", flush=True)
    try:
        cluster = await start_cluster(opts)
    except StartError as err:
        print(f"jobset-infra sim --demo: {err}", file=sys.stderr)
        return 1
    try:
        code = await _story(cluster, say, len(pools), pools[0].nodes, len(opts.faults))
        if opts.keep:
            await until_stopped(lambda: print(_kept(cluster), flush=True))
            print("jobset-infra sim --demo: shutting down", flush=True)
        else:
            print(_closing_hint(), flush=True)
        return code
    except (TimeoutError, DemoError) as err:
        say(f"FAILED: {err}")
        say("cluster state: " + _summary(cluster))
        return 1
    finally:
        await cluster.stop()


def _kept(cluster: Cluster) -> str:
    commands = [
        (f"export KUBECONFIG={cluster.kubeconfig}", ""),
        ("get jobsets,jobs,pods", ""),
        (f"describe jobset {NAME}", "its conditions and the controller's events"),
        ("get jobsets -w", "kubectl watches one resource type at a time"),
    ]
    kubectl = shown("kubectl")
    lines = [f"  {cmd if cmd.startswith('export') else f'{kubectl} {cmd}'}" for cmd, _ in commands]
    width = max(len(line) for line, (_, why) in zip(lines, commands, strict=True) if why) + 2
    lines = [line.ljust(width) + f"# {why}" if why else line
             for line, (_, why) in zip(lines, commands, strict=True)]
    notes = [f"  note: {note}" for note in kubectl_note()]
    return "\n".join(["The cluster stays up (--keep). In another terminal:", *lines, *notes,
                      "Press Ctrl-C to stop."])


def _closing_hint() -> str:
    cli = shown("jobset-infra")
    return (
        f"Look at it with kubectl: {cli} sim --demo --keep (the cluster then stays up until "
        f"Ctrl-C).\nRun your own: {cli} sim --nodes v5e-2x4:4 --controller --auto-complete 5, "
        "then export the KUBECONFIG it prints, kubectl apply -f a JobSet and watch it: "
        f"{shown('kubectl')} get jobsets -w (kubectl watches one resource type at a time; "
        "kubectl get jobsets,jobs,pods lists all three once)"
    )


async def _story(
    cluster: Cluster, say: Callable[[str], None], pools: int, hosts: int, faults: int
) -> int:
    store, jobs_controller = cluster.sim.store, cluster.job_controller
    assert jobs_controller is not None  # run() always asks for it
    say(f"cluster up at {cluster.sim.url}: {pools * hosts} TPU nodes in {pools} v5e 2x4 slice "
        f"pools, sim scheduler {'on' if cluster.scheduler else 'off'}, JobSet controller running")
    if faults:
        say(f"fault injection on: {faults} rule(s) act on every API request of the controller")
    await _create(cluster.sim.url, demo_jobset(pools, hosts, chips=4))
    say(f"created JobSet {NAMESPACE}/{NAME}: {pools} slices x {hosts} TPU hosts, one node pool "
        f"per slice (annotation {c.EXCLUSIVE_KEY})")
    jobs = await until(lambda: _jobs(store, attempt="0", count=pools), f"{pools} child Jobs")
    for job in jobs:
        say(f"  Job {job['metadata']['name']} -> node pool {_pool(job)}")
    await until(lambda: _running(store, pools * hosts), f"{pools * hosts} running pods")
    say(f"{pools * hosts}/{pools * hosts} pods Running, each slice on its own pool: "
        + _placement(store))
    victim = jobs[1]["metadata"]["name"]
    say(f"failing slice {victim}: {FAILURE_MESSAGE}")
    failed_at = time.monotonic()
    await jobs_controller.fail_job(NAMESPACE, victim, message=FAILURE_MESSAGE)
    await until(lambda: _restarts(store) >= 1, "the JobSet to restart")
    say(f"JobSet failure policy: restart 1 of max 3 ({c.RESTARTS_KEY} -> 1); the old Jobs are "
        "deleted in the foreground and every slice is recreated")
    jobs = await until(lambda: _jobs(store, attempt="1", count=pools),
                       f"{pools} Jobs of restart attempt 1")
    await until(lambda: _running(store, pools * hosts), "the restarted pods")
    recovery = time.monotonic() - failed_at
    say(f"all {pools} slices recreated (label {c.RESTARTS_KEY}=1) and running again "
        f"{recovery:.2f}s after the failure: "
        + ", ".join(f"{j['metadata']['name']}->{_pool(j)}" for j in jobs))
    say("training finishes: every pod exits 0")
    for job in jobs:
        await jobs_controller.succeed_job(NAMESPACE, job["metadata"]["name"])
    done = await until(lambda: _condition(store, c.CONDITION_COMPLETED), "JobSet completion")
    say(f"JobSet {NAME} Completed ({done['reason']}: {done['message']}), "
        f"restarts: {_restarts(store)}")
    return 0


async def _create(url: str, jobset: dict[str, Any]) -> None:
    """POST the JobSet, retrying what a client retries (429, 5xx) when faults are injected."""
    path = f"/apis/{c.GROUP}/{c.VERSION}/namespaces/{NAMESPACE}/{c.PLURAL}"
    async with aiohttp.ClientSession() as session:
        for _ in range(20):
            async with session.post(url + path, json=jobset) as resp:
                if resp.status == 201:
                    return
                text = await resp.text()
                if resp.status != 429 and resp.status < 500:
                    break
            await asyncio.sleep(0.1)
    raise DemoError(f"creating the JobSet: HTTP {resp.status}: {text}")


def _jobs(store: Any, *, attempt: str, count: int) -> list[dict[str, Any]] | None:
    found = [
        j for j in store.iter_objects(JOBS, NAMESPACE)
        if (j["metadata"].get("labels") or {}).get(c.JOBSET_NAME_KEY) == NAME
        and (j["metadata"].get("labels") or {}).get(c.RESTARTS_KEY) == attempt
        and not j["metadata"].get("deletionTimestamp")
    ]
    return sorted(found, key=lambda j: str(j["metadata"]["name"])) if len(found) == count else None


def _pool(job: dict[str, Any]) -> str:
    selector = job["spec"]["template"]["spec"].get("nodeSelector") or {}
    return str(selector.get(tpu.GKE_NODEPOOL_LABEL, "(any)"))


def _running(store: Any, want: int) -> bool:
    running = [
        p for p in store.iter_objects(PODS, NAMESPACE)
        if (p.get("status") or {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
    ]
    return len(running) == want


def _placement(store: Any) -> str:
    """Where each Job's pods run, checked against the pool its nodeSelector names."""
    pool_of_node = {
        n["metadata"]["name"]: n["metadata"]["labels"].get(tpu.GKE_NODEPOOL_LABEL)
        for n in store.iter_objects(NODES)
    }
    pools_of_job: dict[str, set[str]] = {}
    for pod in store.iter_objects(PODS, NAMESPACE):
        job = (pod["metadata"].get("labels") or {}).get("job-name", "?")
        node = pod["spec"].get("nodeName", "")
        pools_of_job.setdefault(job, set()).add(str(pool_of_node.get(node, "(unbound)")))
    for job in store.iter_objects(JOBS, NAMESPACE):
        want = _pool(job)
        got = pools_of_job.get(job["metadata"]["name"], set())
        if got != {want}:
            raise DemoError(f"Job {job['metadata']['name']} should run on {want}, ran on {got}")
    return f"{len(pools_of_job)} Jobs on {len(set().union(*pools_of_job.values()))} pools"


def _condition(store: Any, kind: str) -> dict[str, Any] | None:
    jobset = store.try_get(JOBSETS, NAME, NAMESPACE) or {}
    for cond in (jobset.get("status") or {}).get("conditions") or ():
        if cond.get("type") == kind and cond.get("status") == "True":
            return dict(cond)
    return None


def _restarts(store: Any) -> int:
    jobset = store.try_get(JOBSETS, NAME, NAMESPACE) or {}
    return int((jobset.get("status") or {}).get("restarts", 0))


def _summary(cluster: Cluster) -> str:
    store = cluster.sim.store
    jobset = store.try_get(JOBSETS, NAME, NAMESPACE) or {}
    phases: dict[str, int] = {}
    for pod in store.iter_objects(PODS, NAMESPACE):
        phase = (pod.get("status") or {}).get("phase", "?")
        phases[phase] = phases.get(phase, 0) + 1
    jobs = sorted(j["metadata"]["name"] for j in store.iter_objects(JOBS, NAMESPACE))
    return f"JobSet status {jobset.get('status')}; Jobs {jobs}; pods by phase {phases}"
