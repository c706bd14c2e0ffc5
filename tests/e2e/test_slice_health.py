"""Slice health and hot spares on the real control plane: a slice whose pool's nodes went NotReady
restarts alone (RestartJob) on the hot-spare pool and the run completes; a pool whose slice
failed for an infrastructure cause is kept out of the next assignments, across a controller
restart (marker real).

One cluster holds three GKE-shaped TPU v5e 2x4 slice pools and one hot-spare pool (kwok Nodes,
`hp=...:3+1`, as `TpuSlicePools(spares=1)` plans them) and our controller as its Deployment
(RestartJob gate on). A 3-slice JobSet fills the three pools; the nodes of one go NotReady and
its slice fails: only that slice is recreated, on the spare, and the JobSet completes. (Its
failure stays in the ledger, so the second test may find that pool kept out too: it makes no
difference to what that test checks.) Then a 2-slice JobSet lands on two pools. A chip of the
first pool goes bad (the device plugin's sign: allocatable below capacity) and its slice fails:
the controller records `tpu_device_error` against the pool in its ledger ConfigMap and the
restart lands elsewhere, the JobSet saying which pool it kept out and why. Then the chip is
repaired (the pool fits again), the controller's pod is deleted (a new process, a new leader,
reads the ledger back) and another slice fails for the program's own reason: the restart still
leaves the repaired pool aside, where without the history the first pools in order (that one
among them) would be chosen. Last, `jobset-infra explain` (the command, from the cluster's
kubeconfig) answers for a JobSet that cannot get pools (the ones busy and the one kept out) and
for one whose pods the scheduler cannot place.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import pytest
import pytest_asyncio

from jobset_infra.api import constants as k
from jobset_infra.api import resilience as res
from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION, NOT_READY_ANNOTATION
from jobset_infra.controller.runtime.kube import MERGE_PATCH, KubeClient, NotFoundError
from jobset_infra.controller.runtime.resources import CONFIGMAPS, JOBSETS, NODES, Resource
from jobset_infra.manifests.workload import TpuJob, TpuTarget, WorkloadSpec, plan_workload
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans
from tests.waiting import until

pytestmark = [pytest.mark.real, pytest.mark.asyncio(loop_scope="module"), pytest.mark.timeout(600)]

T = TypeVar("T")
NODES_TEXT = "hp=v5e-2x4@ct5lp-hightpu-4t:3+1"
JOBS = Resource("batch", "v1", "jobs", "Job")
[PLAN] = tpu_plans(parse_pools_text(NODES_TEXT))
NS = "train"
PODS = Resource("", "v1", "pods", "Pod")
CONTAINER = {"name": "main", "image": "busybox:1.36", "command": ["sleep", "3600"]}
WAIT = 120.0
KUBECONFIG: list[str] = []  # the module cluster's admin kubeconfig, for `jobset-infra explain`


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def api() -> AsyncIterator[tuple[KubeClient, Any]]:
    from jobset_infra.cluster.command import controller_image
    from jobset_infra.cluster.install import install_jobset_system, system_node_install
    from jobset_infra.manifests.crd import jobset_crd
    from tests.integration.conftest import fast_config
    from tests.realcluster import real_cluster

    # The controller from its image on the cluster's system node; the slices on kwok's pools.
    with real_cluster(NODES_TEXT, crds=(jobset_crd(),), system_node=True) as cluster:
        async with cluster.client() as client:
            config = fast_config(metrics={"bindAddress": ":8443"},
                                 health={"healthProbeBindAddress": ":8081"},
                                 featureGates={"RestartJob": True})
            # One CPU requested: its container then weighs as much as the host's processes
            # beside it when the machine is busy (cpu.shares 1024; 250m gives 256).
            install = system_node_install(controller_image(), replicas=1, config=config,
                                          resources={"cpu_request": "1"})
            await install_jobset_system(client, install)
            await client.create(Resource("", "v1", "namespaces", "Namespace", namespaced=False),
                                {"metadata": {"name": NS}})
            KUBECONFIG.append(str(cluster.kubeconfig))
            yield client, install


def two_slices(name: str) -> dict[str, Any]:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(PLAN), slices=2)
    spec = WorkloadSpec(name=name, namespace=NS, replicated_jobs=[job],
                        failure_policy={"maxRestarts": 5})
    return dict(plan_workload(spec).manifest)


async def running_by_pool(api: KubeClient, attempt: int) -> dict[str, list[dict[str, Any]]]:
    """The JobSet's running pods of `attempt`, by the pool of their node."""
    pools = {n["metadata"]["name"]: n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL]
             for n in (await api.list(NODES))["items"]}
    found: dict[str, list[dict[str, Any]]] = {}
    for pod in (await api.list(PODS, namespace=NS))["items"]:
        labels = pod["metadata"].get("labels") or {}
        if (labels.get(k.RESTARTS_KEY) == str(attempt)
                and not pod["metadata"].get("deletionTimestamp")
                and (pod.get("status") or {}).get("phase") == "Running"):
            found.setdefault(pools[pod["spec"]["nodeName"]], []).append(pod)
    return found


async def both_slices_running(api: KubeClient, attempt: int) -> dict[str, list[dict[str, Any]]]:
    async def check() -> dict[str, list[dict[str, Any]]] | None:
        found = await running_by_pool(api, attempt)
        return found if sum(len(p) for p in found.values()) == 4 else None

    running: dict[str, list[dict[str, Any]]] = await until(
        check,
        f"attempt {attempt} running",
        timeout=WAIT)
    assert all(len(pods) == 2 for pods in running.values()), running  # a slice per pool
    return running


async def fail(api: KubeClient, pod: dict[str, Any], code: str) -> None:
    await api.patch(PODS, pod["metadata"]["name"],
                    {"metadata": {"annotations": {EXIT_CODE_ANNOTATION: code}}},
                    namespace=NS, content_type=MERGE_PATCH)


async def set_chips(api: KubeClient, node: str, chips: int) -> None:
    await api.patch(NODES, node, {"status": {"allocatable": {tpu.TPU_RESOURCE: str(chips)}}},
                    subresource="status", content_type=MERGE_PATCH)


async def ledger(api: KubeClient, namespace: str) -> list[dict[str, Any]]:
    try:
        found = await api.get(CONFIGMAPS, res.LEDGER_CONFIGMAP, namespace)
    except NotFoundError:
        return []
    failures: list[dict[str, Any]] = json.loads(found["data"][res.LEDGER_KEY])["failures"]
    return failures


def condition(js: dict[str, Any], kind: str) -> dict[str, Any]:
    for cond in (js.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            found: dict[str, Any] = cond
            return found
    return {}


async def restart_controller(api: KubeClient, namespace: str, name: str) -> None:
    from jobset_infra.cluster.install import wait_available

    [old] = [p for p in (await api.list(PODS, namespace=namespace))["items"]
             if not p["metadata"].get("deletionTimestamp")]
    await api.delete(PODS, old["metadata"]["name"], namespace=namespace)

    async def replaced() -> bool:
        pods = (await api.list(PODS, namespace=namespace))["items"]
        return any(p["metadata"]["uid"] != old["metadata"]["uid"]
                   and (p.get("status") or {}).get("phase") == "Running" for p in pods)

    await until(replaced, "a new controller pod running", timeout=WAIT)
    await wait_available(api, namespace, name, WAIT)


def slices_restarting_alone(name: str, slices: int) -> dict[str, Any]:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(PLAN), slices=slices)
    spec = WorkloadSpec(name=name, namespace=NS, replicated_jobs=[job],
                        failure_policy={"maxRestarts": 3})
    manifest = dict(plan_workload(spec).manifest)
    # RestartJob needs the controller's gate (on here), which the offline check assumes off.
    manifest["spec"]["failurePolicy"]["rules"] = [{"name": "sliceAlone", "action": "RestartJob"}]
    return manifest


async def slices_by_job(api: KubeClient, jobset: str) -> dict[str, tuple[str, str, set[str]]]:
    """Job name -> (its uid, its job-restart-attempt, the pools its running pods are on)."""
    pools = {n["metadata"]["name"]: n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL]
             for n in (await api.list(NODES))["items"]}
    jobs = {j["metadata"]["name"]: j for j in (await api.list(JOBS, namespace=NS))["items"]
            if (j["metadata"].get("labels") or {}).get(k.JOBSET_NAME_KEY) == jobset
            and not j["metadata"].get("deletionTimestamp")}
    found: dict[str, tuple[str, str, set[str]]] = {
        name: (j["metadata"]["uid"], j["metadata"]["labels"].get(k.JOB_RESTART_ATTEMPT_KEY, ""),
               set()) for name, j in jobs.items()}
    for pod in (await api.list(PODS, namespace=NS))["items"]:
        owner = (pod["metadata"].get("labels") or {}).get("job-name", "")
        if (owner in found and not pod["metadata"].get("deletionTimestamp")
                and (pod.get("status") or {}).get("phase") == "Running"
                and pod["metadata"]["labels"].get(k.JOB_RESTART_ATTEMPT_KEY)
                == found[owner][1]):
            found[owner][2].add(pools[pod["spec"]["nodeName"]])
    return found


async def set_not_ready(api: KubeClient, pool: str, not_ready: bool) -> None:
    value = "true" if not_ready else None
    for node in (await api.list(NODES))["items"]:
        if node["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL] == pool:
            await api.patch(NODES, node["metadata"]["name"],
                            {"metadata": {"annotations": {NOT_READY_ANNOTATION: value}}},
                            content_type=MERGE_PATCH)

    async def reported() -> bool:
        nodes = [n for n in (await api.list(NODES))["items"]
                 if n["metadata"]["labels"][tpu.GKE_NODEPOOL_LABEL] == pool]
        return all(condition(n, "Ready").get("status") == ("False" if not_ready else "True")
                   for n in nodes)

    state = "NotReady" if not_ready else "Ready"
    await until(reported, f"pool {pool}'s nodes {state}", timeout=WAIT)


async def test_a_slice_on_a_pool_gone_not_ready_restarts_alone_on_the_spare_and_completes(
    api: tuple[KubeClient, Any],
) -> None:
    client, install = api
    await client.create(JOBSETS, slices_restarting_alone("spare", 3), NS)

    async def all_running() -> dict[str, tuple[str, str, set[str]]] | None:
        found = await slices_by_job(client, "spare")
        return found if len(found) == 3 and all(len(p) == 1 for _, _, p in found.values()) \
            else None

    before = await until(all_running, "3 slices running", timeout=WAIT)
    assert before is not None
    on = {name: next(iter(pools)) for name, (_, _, pools) in before.items()}
    assert sorted(on.values()) == ["hp-0", "hp-1", "hp-2"], on  # the spare is left alone
    [victim_job] = [name for name, pool in on.items() if pool == "hp-1"]
    await set_not_ready(client, "hp-1", True)
    [victim, *_] = [p for p in (await client.list(PODS, namespace=NS))["items"]
                    if p["metadata"]["labels"].get("job-name") == victim_job]
    await fail(client, victim, "137")  # its host died under it

    async def moved() -> dict[str, tuple[str, str, set[str]]] | None:
        found = await slices_by_job(client, "spare")
        return found if (found.get(victim_job, ("", "", set()))[1:] == ("1", {"hp-spare-0"})
                         and all(len(p) == 1 for _, _, p in found.values())) else None

    after = await until(moved, f"{victim_job} running again on hp-spare-0", timeout=WAIT)
    assert after is not None
    for name, (uid, attempt, pools) in after.items():
        if name != victim_job:  # only the failed slice moved: the others never stopped
            assert (uid, attempt, pools) == (before[name][0], before[name][1], {on[name]})
    assert [f["cause"] for f in await ledger(client, install.namespace)
            if f["domain"] == "hp-1"] == [res.Cause.NODE_NOT_READY.value]
    kept = condition(await client.get(JOBSETS, "spare", NS), res.CONDITION_DOMAINS_KEPT_OUT)
    assert kept.get("reason") == res.SPARES_USED_REASON, kept
    assert "hot-spare pool(s) hp-spare-0 stand in for lost pool(s) hp-1" in kept["message"]

    for pod in (await client.list(PODS, namespace=NS))["items"]:
        if (pod.get("status") or {}).get("phase") == "Running":
            await fail(client, pod, "0")  # every slice finishes its work

    async def completed() -> bool:
        js = await client.get(JOBSETS, "spare", NS)
        return condition(js, "Completed").get("status") == "True"

    await until(completed, "the JobSet completed", timeout=WAIT)
    await set_not_ready(client, "hp-1", False)


async def test_a_pool_that_failed_is_kept_out_of_restarts_across_a_controller_restart(
    api: tuple[KubeClient, Any],
) -> None:
    client, install = api
    system = install.namespace
    await client.create(JOBSETS, two_slices("hs"), NS)
    first = await both_slices_running(client, 0)
    sick = min(first)  # the first pool in order: chosen again unless kept out
    [victim, *_] = first[sick]
    node = victim["spec"]["nodeName"]
    await set_chips(client, node, 2)  # two of its four chips went bad
    await fail(client, victim, "137")

    async def recorded() -> list[dict[str, Any]]:
        return [f for f in await ledger(client, system) if f["domain"] == sick]

    [entry] = await until(recorded, f"the failure recorded against {sick}", timeout=WAIT)
    assert entry["cause"] == res.Cause.TPU_DEVICE_ERROR.value, entry
    assert "2 of its 4 google.com/tpu devices are unhealthy" in entry["detail"], entry
    second = await both_slices_running(client, 1)
    assert sick not in second, second
    # The condition is the status of a pass of its own, which may come after the new Pods run.
    await kept_out_names(client, f"{sick} (tpu_device_error")

    # The chip is repaired and the controller restarted; the history is read back.
    await set_chips(client, node, 4)
    await restart_controller(client, system, install.name)
    [again, *_] = next(iter(second.values()))
    await fail(client, again, "1")
    third = await both_slices_running(client, 2)
    assert sick not in third, (sick, third)
    js = await client.get(JOBSETS, "hs", NS)
    assert js["status"]["restarts"] == 2
    await kept_out_names(client, sick)


async def kept_out_names(client: KubeClient, text: str) -> None:
    """Wait until hs's DomainsKeptOut condition is True and its message names `text`."""
    seen: list[dict[str, Any]] = [{}]

    async def names() -> bool:
        seen[0] = condition(await client.get(JOBSETS, "hs", NS), res.CONDITION_DOMAINS_KEPT_OUT)
        return seen[0].get("status") == "True" and text in seen[0].get("message", "")

    await until(names, f"DomainsKeptOut naming {text!r}", timeout=WAIT,
                explain=lambda: f"the condition: {seen[0]}")


def explain_cli(name: str) -> dict[str, Any]:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "jobset_infra.cli", "explain", name, "-n", NS, "-o", "json",
         "--kubeconfig", KUBECONFIG[0]], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


async def test_explain_names_busy_and_kept_out_pools_and_unschedulable_pods(
    api: tuple[KubeClient, Any],
) -> None:
    client, _ = api
    # Every pool at once, while `hs` holds two and a pool that failed is kept out: no fit.
    big = two_slices("big")
    big["spec"]["replicatedJobs"][0]["replicas"] = 4
    await client.create(JOBSETS, big, NS)

    async def held() -> bool:
        cond = condition(await client.get(JOBSETS, "big", NS), k.CONDITION_PLACEMENT_PENDING)
        return cond.get("status") == "True"

    await until(held, "`big` waiting for pools", timeout=WAIT)
    found = explain_cli("big")
    assert found["state"] == "WaitingForPools", found
    states = {p["name"]: p for p in found["pools"]}
    assert sorted(states) == ["hp-0", "hp-1", "hp-2", "hp-spare-0"]
    assert states["hp-spare-0"]["spare"] is True
    assert [p["holder"] for p in states.values() if p["state"] == "occupied"] == [f"{NS}/hs"] * 2
    kept = [p for p in states.values() if p["state"] == "kept-out"]
    assert any("tpu_device_error" in p["detail"] for p in kept), states
    assert any(f"{NS}/hs" in u for u in found["unblock"]), found["unblock"]
    await client.delete(JOBSETS, "big", namespace=NS)

    # A pod that asks for more CPU than any node has: the scheduler's words come back.
    job = TpuJob("slice", {**CONTAINER, "resources": {"requests": {"cpu": "100000"}}},
                 TpuTarget.from_plan(PLAN), slices=1)
    huge = dict(plan_workload(WorkloadSpec(name="huge", namespace=NS,
                                           replicated_jobs=[job])).manifest)
    huge["metadata"].pop("annotations", None)  # no exclusive placement: straight to the scheduler
    for rjob in huge["spec"]["replicatedJobs"]:
        rjob["template"].get("metadata", {}).pop("annotations", None)
    await client.create(JOBSETS, huge, NS)

    async def unschedulable() -> bool:
        return any(condition(p, "PodScheduled").get("reason") == "Unschedulable"
                   for p in (await client.list(PODS, namespace=NS,
                                               label_selector=f"{k.JOBSET_NAME_KEY}=huge"))["items"])

    await until(unschedulable, "`huge`'s pods unschedulable", timeout=WAIT)
    found = explain_cli("huge")
    assert found["state"] == "PodsBlocked", found
    blocker = found["blockers"][0]
    assert (blocker["layer"], blocker["reason"]) == ("pods", "Unschedulable"), blocker
    assert "Insufficient cpu" in blocker["message"], blocker
    await client.delete(JOBSETS, "huge", namespace=NS)


def plan_cli(project: Any, stack: str) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "jobset_infra.cli", "plan", "-s", stack, "--project-dir",
         str(project), "--kubeconfig", KUBECONFIG[0]],
        capture_output=True, text=True, timeout=300, check=False)  # a plan: 10-60 s


async def test_plan_against_the_live_cluster_names_the_jobset_a_pool_change_would_kill(
    api: tuple[KubeClient, Any], tmp_path: Any,
) -> None:
    """`jobset-infra plan --kubeconfig`: a GKE stack planned offline (Pulumi's mocks) whose
    slice pools `hp` change topology (and plan no spare), checked against this cluster, where
    `hs` runs on two of them: the plan fails as `pulumi preview` would, naming the JobSet, its
    pools and the opt-in (the opt-in's warning is the same code's, tested under mocks in
    tests/stack)."""
    import yaml

    from tests.plan.test_command import ROOT

    client, _ = api
    running = await both_slices_running(client, 2)  # `hs`, from the test above
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.v5e-multislice.yaml").read_text())
    stack["config"]["jobset-infra:slices"].update(name="hp", topology="4x4")
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "__main__.py").write_text((ROOT / "stacks" / "__main__.py").read_text())
    (tmp_path / "stacks" / "Pulumi.hp.yaml").write_text(yaml.safe_dump(stack))

    refused = plan_cli(tmp_path, "hp")
    assert refused.returncode == 1, refused.stderr
    assert "error: this update would kill 1 running JobSet(s)" in refused.stderr, refused.stderr
    # A spare among its pools is deleted (the stack plans none), the others replaced. A line
    # naming hs came twice in one standalone run (2026-12-07 23:34, its output not kept): one
    # of them must name every pool.
    changes = [f"{pool} (" + ("deleted: " if "spare" in pool
                              else "replaced: topology '2x4' -> '4x4'") for pool in running]
    lines = [ln for ln in refused.stderr.splitlines() if f"{NS}/hs on " in ln]
    assert any(all(change in ln for change in changes) for ln in lines), refused.stderr
    assert "jobset-infra:drain_jobsets: true" in refused.stderr


async def test_a_slice_whose_pool_goes_not_ready_before_its_pods_start_moves_to_the_spare(
    api: tuple[KubeClient, Any],
) -> None:
    """Its pods held by a scheduling gate (Pending, as pods on a pool gone NotReady stay), a
    one-slice JobSet's Job is moved when its pool goes NotReady: the controller looks up its
    Pods, finds none started, deletes the Job and creates it again on the spare (the other
    pools are kept out after the failures above; `hs` is deleted first)."""
    client, _ = api
    await client.delete(JOBSETS, "hs", namespace=NS)

    async def hs_gone() -> bool:
        return not [j for j in (await client.list(JOBS, namespace=NS))["items"]
                    if j["metadata"]["labels"].get(k.JOBSET_NAME_KEY) == "hs"]

    await until(hs_gone, "`hs`'s Jobs gone", timeout=WAIT)
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(PLAN), slices=1)
    gated = dict(plan_workload(WorkloadSpec(name="gated", namespace=NS,
                                            replicated_jobs=[job])).manifest)
    pod = gated["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod["schedulingGates"] = [{"name": "jobset-infra.dev/hold"}]
    await client.create(JOBSETS, gated, NS)

    async def placed(not_on: str = "") -> tuple[str, str] | None:
        for j in (await client.list(JOBS, namespace=NS))["items"]:
            pool = j["spec"]["template"]["spec"].get("nodeSelector", {}).get(
                tpu.GKE_NODEPOOL_LABEL)
            if (j["metadata"]["labels"].get(k.JOBSET_NAME_KEY) == "gated" and pool
                    and pool != not_on and not j["metadata"].get("deletionTimestamp")):
                return j["metadata"]["uid"], pool
        return None

    first = await until(placed, "`gated` placed", timeout=WAIT)
    assert first is not None
    uid, pool = first
    assert pool != "hp-spare-0", pool  # a healthy pool was free: the spare is kept
    await set_not_ready(client, pool, True)
    try:
        moved = await until(lambda: placed(not_on=pool), f"`gated` moved off {pool}",
                            timeout=WAIT)
        assert moved is not None and moved[0] != uid and moved[1] == "hp-spare-0", moved
    finally:
        await client.delete(JOBSETS, "gated", namespace=NS)
        await set_not_ready(client, pool, False)
