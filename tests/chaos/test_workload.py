"""Faults around the workloads and the controller's own doors, on the real cluster: the
controller's ServiceAccount throttled by API Priority and Fairness during a restart, a child's
labels edited, a namespace deleted in the middle of a restart, and the metrics port flooded with
bogus tokens (and a scraper's binding revoked). Invariants as in test_control_plane.py."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import signal
import ssl
import sys
import time

import aiohttp
import pytest

from jobset_infra.api import constants as c
from jobset_infra.controller.runtime.kube import MERGE_PATCH, NotFoundError
from jobset_infra.controller.runtime.resources import JOBS, Resource
from tests.chaos.harness import NAMESPACES, ROOT, Plane, until
from tests.chaos.invariants import Recorder
from tests.chaos.test_control_plane import converged, figure, restart_under_way

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.real,
              pytest.mark.timeout(300)]
FLOW = Resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema",
                namespaced=False)
LEVELS = Resource("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
                  "PriorityLevelConfiguration", namespaced=False)
BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                    "ClusterRoleBinding", namespaced=False)
ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
THROTTLE = "chaos-throttle"


async def apiserver_metric(plane: Plane, name: str, **labels: str) -> float:
    """A counter summed over the series whose labels include `labels` (admin GET /metrics)."""
    access = plane.cluster.access()
    async with aiohttp.ClientSession() as http, http.get(
            f"{access.host}/metrics", ssl=access.ssl_context) as response:
        text = await response.text()
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def restart_time(plane: Plane, namespace: str, job: str, attempt: int,
                       replicas: int) -> float:
    """Fail `job`'s pod; the seconds until every Job of the next attempt runs."""
    began = time.monotonic()
    await plane.end_pods(namespace, job, 1)
    await plane.all_running(namespace, replicas, attempt, timeout=180)
    return time.monotonic() - began


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
    figure(f"an {replicas}-Job restart, unthrottled", free)
    figure("the same restart, throttled by APF", throttled)
    figure("APF rejections during it", rejected, "")
    assert rejected > 0, "the throttling was real"
    await converged(plane, recorder, namespace, "js", replicas=replicas, restarts=2)


async def test_a_child_whose_labels_are_edited_still_counts(
    running: Plane, recorder: Recorder
) -> None:
    plane, replicas = running, 8
    namespace = await plane.namespace_for("labels")
    await plane.create_jobset(namespace, "js", replicas)
    await plane.all_running(namespace, replicas, 0)
    removed = {key: None for key in (c.JOBSET_NAME_KEY, c.RESTARTS_KEY,
                                     c.REPLICATED_JOB_NAME_KEY, c.JOB_INDEX_KEY)}
    await plane.api.patch(JOBS, "js-w-3", {"metadata": {"labels": removed}},
                          namespace=namespace, content_type=MERGE_PATCH)
    await plane.api.patch(JOBS, "js-w-5", {"metadata": {"labels": {"team": "edited"}}},
                          namespace=namespace, content_type=MERGE_PATCH)
    await plane.end_pods(namespace, "js-w-3", 1)  # the unlabelled child fails
    await converged(plane, recorder, namespace, "js", replicas=replicas, restarts=1)


async def controller_requests(plane: Plane, token: str) -> float:
    """Requests the leader's client has sent (its rest_client_requests_total)."""
    assert plane.fleet is not None
    leader = plane.fleet.replicas[await plane.leader()]
    status, text = await scrape(leader.metrics_port, token)
    assert status == 200, text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("rest_client_requests_total{"))


async def test_a_namespace_deleted_in_the_middle_of_a_restart(
    running: Plane, recorder: Recorder
) -> None:
    plane, replicas = running, 8
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

    await until(gone, f"namespace {doomed} deleted", 180)
    await converged(plane, recorder, bystander, "js", replicas=2, restarts=0)
    # No hot loop on what vanished: in 10 s the leader sends what its Lease needs (a GET and a
    # PUT every 2 s) and little else.
    first = await controller_requests(plane, token)
    await asyncio.sleep(10.0)  # a window in which requests are counted
    sent = await controller_requests(plane, token) - first
    figure("the leader's requests in the 10 s after the namespace went", sent, "")
    assert sent <= 20, f"{sent} requests in 10 s"


_scrapers = itertools.count()


async def scraper(plane: Plane) -> tuple[str, str]:
    """(name, token) of a new ServiceAccount bound (a ClusterRoleBinding of the same name) to
    the metrics-reader ClusterRole."""
    name = f"scraper-{next(_scrapers)}"
    await plane.api.create(ACCOUNTS, {"metadata": {"name": name}}, plane.namespace)
    await plane.api.create(BINDINGS, {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": plane.objects.metrics_reader_role["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": plane.namespace}]})
    return name, await plane.token(name)


async def scrape(port: int, token: str, session: aiohttp.ClientSession | None = None
                 ) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed
    own = session is None
    http = session or aiohttp.ClientSession()
    try:
        async with http.get(f"https://127.0.0.1:{port}/metrics", ssl=context,
                            headers={"Authorization": f"Bearer {token}"}) as response:
            return response.status, await response.text()
    finally:
        if own:
            await http.close()


async def flooding(port: int) -> asyncio.subprocess.Process:
    """The flood's process, once it floods (its start-up takes seconds under load)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.chaos.flood", str(port), cwd=ROOT,
        stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    assert await asyncio.wait_for(process.stdout.readline(), 60) == b"flooding\n"
    return process


async def flood_answers(process: asyncio.subprocess.Process) -> dict[int, int]:
    process.send_signal(signal.SIGTERM)
    out, _ = await process.communicate()
    return {int(k): v for k, v in json.loads(out.decode().strip().splitlines()[-1]).items()}


async def test_the_metrics_port_under_a_flood_of_tokens_and_a_revoked_binding(
    running: Plane, recorder: Recorder
) -> None:
    plane, replicas = running, 8
    assert plane.fleet is not None
    namespace = await plane.namespace_for("metrics")
    await plane.create_jobset(namespace, "js", replicas, max_restarts=4)
    await plane.all_running(namespace, replicas, 0)
    quiet = await restart_time(plane, namespace, "js-w-0", 1, replicas)
    leader = plane.fleet.replicas[await plane.leader()]
    reviews = await apiserver_metric(plane, "apiserver_request_total", resource="tokenreviews")
    flooder = await flooding(leader.metrics_port)
    began = time.monotonic()
    try:
        loud = await restart_time(plane, namespace, "js-w-1", 2, replicas)
    finally:
        answers = await flood_answers(flooder)
    lasted = time.monotonic() - began
    sent = await apiserver_metric(plane, "apiserver_request_total",
                                  resource="tokenreviews") - reviews
    figure(f"an {replicas}-Job restart, quiet", quiet)
    figure(f"the same restart under {sum(answers.values())} scrapes with new tokens", loud)
    figure(f"TokenReviews for them, in {lasted:.1f} s", sent, "")
    figure("of which answered 429 without a review", answers.get(429, 0), "")
    assert answers.get(429, 0) > 0, "the flood met the review budget"
    assert sent <= 10 + 5 * lasted + 5, "reviews kept to their budget (10 + 5 a second)"
    # A scraper whose binding is revoked is refused within the verdict cache's 10 s.
    name, token = await scraper(plane)
    assert (await scrape(leader.metrics_port, token))[0] == 200
    await plane.api.delete(BINDINGS, name, propagation=None)
    revoked = time.monotonic()

    async def refused() -> bool:
        return (await scrape(leader.metrics_port, token))[0] == 403

    await until(refused, "the revoked scraper refused", 30)
    figure("binding revoked -> scrapes refused", time.monotonic() - revoked)
    assert time.monotonic() - revoked <= 13.0, "the 10 s verdict cache, and a scrape or two"
    await plane.succeed_all(namespace, 2)
    await plane.finished(namespace, "js")
    assert not recorder.violations(), recorder.violations()
