"""Faults of the platform around a running controller, on the real cluster (the chaos tier's one
control plane, shared with test_controller.py): kube-apiserver and etcd crashed in the middle of a
restart, the controller's ServiceAccount throttled by API Priority and Fairness, a namespace
deleted in the middle of a restart. The controller survived these before issue 32 too; they are
here to keep it so, in CI with the rest of the tier."""

from __future__ import annotations

import asyncio
import time

import pytest

from jobset_infra.controller.runtime.kube import NotFoundError
from jobset_infra.controller.runtime.resources import Resource
from tests.chaos.harness import NAMESPACES, Plane
from tests.chaos.invariants import Recorder
from tests.chaos.steps import (
    apiserver_metric,
    controller_requests,
    converged,
    figure,
    restart_time,
    restart_under_way,
    scraper,
)
from tests.waiting import until

pytestmark = [pytest.mark.asyncio(loop_scope="package"), pytest.mark.real,
              pytest.mark.timeout(300)]
FLOW = Resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema",
                namespaced=False)
LEVELS = Resource("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
                  "PriorityLevelConfiguration", namespaced=False)
THROTTLE = "chaos-throttle"


@pytest.mark.parametrize("component", [pytest.param("kube-apiserver", id="kube-apiserver"),
                                       pytest.param("etcd", id="etcd")])
async def test_a_control_plane_component_restarted_in_the_middle_of_a_restart(
    running: Plane, recorder: Recorder, component: str
) -> None:
    plane, replicas = running, 4  # 4 (name, attempt) pairs to duplicate: the crash is the test
    namespace = await plane.namespace_for(f"restart-{component}")
    await plane.create_jobset(namespace, "js", replicas)
    await restart_under_way(plane, recorder, namespace, "js", replicas)
    down = await asyncio.to_thread(plane.cluster.restart, component)
    back = time.monotonic()
    figure(f"{component} crashed -> healthy again", down)
    # Bounded by what recovery may take on a loaded machine: the informers' longest backoff
    # (60 s), a lost Lease (15 s), the replica's restart backoff (8 s) and its start-up (over
    # 90 s seen at load 20).
    await plane.all_running(namespace, replicas, 1, timeout=180)
    figure(f"{component} healthy -> the restart's Jobs all running", time.monotonic() - back)
    await converged(plane, recorder, namespace, "js", replicas=replicas, restarts=1)


async def throttle(plane: Plane, on: bool) -> None:
    """A priority level of one share that rejects (429) what does not fit, for every request
    of the controller's ServiceAccount."""
    if not on:
        for res in (FLOW, LEVELS):
            await plane.api.delete(res, THROTTLE, propagation=None)
        return
    await plane.api.create(LEVELS, {"metadata": {"name": THROTTLE}, "spec": {
        "type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                                       "limitResponse": {"type": "Reject"}}}})
    await plane.api.create(FLOW, {"metadata": {"name": THROTTLE}, "spec": {
        "priorityLevelConfiguration": {"name": THROTTLE}, "matchingPrecedence": 100,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "ServiceAccount", "serviceAccount": {
            "name": plane.install.name, "namespace": plane.namespace}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                               "namespaces": ["*"], "clusterScope": True}]}]}})


async def test_a_restart_throttled_by_api_priority_and_fairness_converges(
    running: Plane, recorder: Recorder
) -> None:
    plane, replicas = running, 16
    namespace = await plane.namespace_for("apf")
    await plane.create_jobset(namespace, "js", replicas, max_restarts=4)
    await plane.all_running(namespace, replicas, 0, timeout=120)
    free = await restart_time(plane, namespace, "js-w-0", 1, replicas)
    await throttle(plane, True)
    try:
        before = await apiserver_metric(plane, "apiserver_flowcontrol_rejected_requests_total",
                                        priority_level=THROTTLE)
        throttled = await restart_time(plane, namespace, "js-w-1", 2, replicas)
        rejected = await apiserver_metric(
            plane, "apiserver_flowcontrol_rejected_requests_total",
            priority_level=THROTTLE) - before
    finally:
        await throttle(plane, False)
    figure(f"the {replicas}-Job restart, unthrottled", free)
    figure("the same restart, throttled by APF", throttled)
    figure("APF rejections during it", rejected, "")
    assert rejected > 0, "the throttling was real"
    await converged(plane, recorder, namespace, "js", replicas=replicas, restarts=2)


async def test_a_namespace_deleted_in_the_middle_of_a_restart(
    running: Plane, recorder: Recorder
) -> None:
    plane, replicas = running, 4
    _, token = await scraper(plane)
    doomed = await plane.namespace_for("doomed")
    bystander = await plane.namespace_for("bystander")
    await plane.create_jobset(bystander, "js", 2)
    await plane.create_jobset(doomed, "js", replicas)
    await restart_under_way(plane, recorder, doomed, "js", replicas)
    await plane.api.delete(NAMESPACES, doomed, propagation=None)

    async def gone() -> bool:
        try:
            await plane.api.get(NAMESPACES, doomed)
        except NotFoundError:
            return True
        return False

    await until(gone, f"namespace {doomed} deleted", timeout=180)
    await converged(plane, recorder, bystander, "js", replicas=2, restarts=0)
    # No hot loop on what vanished: in 10 s the leader sends what its Lease needs (a GET and a
    # PUT every 2 s) and little else.
    first = await controller_requests(plane, token)
    await asyncio.sleep(10.0)  # a window in which requests are counted
    sent = await controller_requests(plane, token) - first
    figure("the leader's requests in the 10 s after the namespace went", sent, "")
    assert sent <= 20, f"{sent} requests in 10 s"
