"""Faults of the control plane around a running controller, on the real cluster: RBAC missing at
start, the leader killed in the middle of a restart, kube-apiserver and etcd restarted, the
controller's ServiceAccount throttled by API Priority and Fairness. Each ends with the JobSets
converged and the invariants of `invariants.py` intact; the figures are printed (`-s`) and are
the ones docs/reliability.md quotes."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from jobset_infra.controller.runtime.backoff import REFLECTOR
from tests.chaos.harness import Plane, chaos_config, until
from tests.chaos.invariants import Recorder

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.real, pytest.mark.timeout(300)]
OUTAGE = 20.0  # seconds the ClusterRoleBinding is missing after the controller starts
# A retry comes at most REFLECTOR.longest after the binding is back; then the list, the Lease
# (free: one retry period) and the first reconcile.
RECOVERY_BOUND = REFLECTOR.longest + 15.0


def figure(name: str, value: float, unit: str = "s") -> None:
    """Print a measured figure (`-s`), and append it to $JOBSET_CHAOS_FIGURES if set (a run on
    xdist workers captures prints): what docs/reliability.md quotes."""
    line = f"chaos figure: {name} = {value:.1f} {unit}".rstrip()
    print(f"\n{line}")
    if path := os.environ.get("JOBSET_CHAOS_FIGURES"):
        with open(path, "a") as out:
            out.write(line + "\n")


async def test_rbac_missing_at_start_then_applied_works_by_itself(
    plane: Plane, recorder: Recorder
) -> None:
    namespace = await plane.namespace_for("rbac")
    fleet = await plane.start_fleet(chaos_config(plane.install))
    await plane.create_jobset(namespace, "early", replicas=2)
    replicas = list(fleet.replicas.values())

    async def refused() -> bool:
        answers = [await asyncio.to_thread(r.readyz) for r in replicas]
        return all(code == 503 and "403" in body for code, body in answers)

    # From the moment both serve (their start-up takes seconds under load) the binding stays
    # missing for OUTAGE seconds.
    await until(refused, "both replicas serving, not ready, naming the 403", 90)
    started, red = time.monotonic(), 0
    while time.monotonic() - started < OUTAGE:  # the outage's length is the scenario's
        for replica in replicas:
            code, _ = await asyncio.to_thread(replica.readyz)
            assert code == 503, f"{replica.name} ready without RBAC"
            assert (await asyncio.to_thread(replica.healthz))[0] == 200, "alive all along"
            red += 1
        assert await plane.leader() == "", "nobody leads while it cannot see the cluster"
        await asyncio.sleep(0.5)
    await plane.apply(plane.objects.cluster_role_binding)
    applied = time.monotonic()

    async def ready() -> bool:
        return all([(await asyncio.to_thread(r.readyz))[0] == 200 for r in replicas])

    await until(ready, "both replicas ready", RECOVERY_BOUND)
    figure("RBAC applied -> both replicas ready", time.monotonic() - applied)
    await until(lambda: plane.live_jobs(namespace, 0), "the early JobSet's Jobs", RECOVERY_BOUND)
    await plane.all_running(namespace, 2, 0)
    figure("RBAC applied -> the JobSet created meanwhile has its Jobs", time.monotonic() - applied)
    assert time.monotonic() - applied < RECOVERY_BOUND
    assert red >= OUTAGE, "sampled red (every 0.5 s, both replicas) through the outage"
    assert all(not r.exits for r in replicas), "no replica exited: nothing to crash-loop on"
    await plane.succeed_all(namespace, 0)
    js = await plane.finished(namespace, "early")
    assert js["status"]["terminalState"] == "Completed"
    assert not recorder.violations(), recorder.violations()


async def restart_under_way(plane: Plane, recorder: Recorder, namespace: str, name: str,
                            replicas: int) -> None:
    """Start a restart: a Job's pod fails; return once status.restarts is 1 (the old Jobs are
    then being deleted and the new ones not all created)."""
    await plane.all_running(namespace, replicas, 0, timeout=120)
    await plane.end_pods(namespace, f"{name}-w-0", 1)

    async def counted() -> bool:
        return 1 in recorder.restarts.get((namespace, name), [])

    await until(counted, f"{namespace}/{name} restarting", 60)


async def converged(plane: Plane, recorder: Recorder, namespace: str, name: str, *,
                    replicas: int, restarts: int) -> None:
    """Every Job of the last attempt runs; then they succeed, the JobSet completes, and after
    that nothing writes to its namespace for 2 s (no hot loop)."""
    await plane.all_running(namespace, replicas, restarts, timeout=120)
    await plane.succeed_all(namespace, restarts)
    js = await plane.finished(namespace, name)
    assert js["status"]["terminalState"] == "Completed"
    assert js["status"]["restarts"] == restarts
    assert recorder.attempts_match(namespace, name, restarts)
    # The namespace's last writes (the Jobs' deletion by the finished JobSet) settle first.
    await until(lambda: _quiet(recorder, namespace, 2.0), f"{namespace} quiet for 2 s", 60)
    assert not recorder.violations(), recorder.violations()


async def _quiet(recorder: Recorder, namespace: str, seconds: float) -> bool:
    since = time.monotonic()
    await asyncio.sleep(seconds)  # a window in which writes are counted, not hoped away
    return recorder.writes(namespace, since) == 0


async def test_leader_killed_in_the_middle_of_a_restart(
    running: Plane, recorder: Recorder
) -> None:
    plane, replicas = running, 16
    namespace = await plane.namespace_for("kill")
    await plane.create_jobset(namespace, "big", replicas)
    await restart_under_way(plane, recorder, namespace, "big", replicas)
    leader = await plane.leader()
    assert plane.fleet is not None
    plane.fleet.replicas[leader].kill()
    killed = time.monotonic()

    async def successor() -> str:
        now = await plane.leader()
        return now if now and now != leader else ""

    await until(successor, "a new leader", 60)
    figure("leader killed -> a new leader", time.monotonic() - killed)
    await plane.all_running(namespace, replicas, 1, timeout=120)
    figure("leader killed -> the restart's 16 Jobs all running", time.monotonic() - killed)
    await converged(plane, recorder, namespace, "big", replicas=replicas, restarts=1)


@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
async def test_a_control_plane_component_restarted_in_the_middle_of_a_restart(
    running: Plane, recorder: Recorder, component: str
) -> None:
    plane, replicas = running, 8
    namespace = await plane.namespace_for(f"restart-{component}")
    await plane.create_jobset(namespace, "js", replicas)
    await restart_under_way(plane, recorder, namespace, "js", replicas)
    down = await asyncio.to_thread(plane.cluster.restart, component)
    back = time.monotonic()
    figure(f"{component} crashed -> healthy again", down)
    await plane.all_running(namespace, replicas, 1, timeout=120)
    figure(f"{component} healthy -> the restart's Jobs all running", time.monotonic() - back)
    await converged(plane, recorder, namespace, "js", replicas=replicas, restarts=1)
