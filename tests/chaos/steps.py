"""Steps the chaos scenarios share: start a restart and wait until it is counted, time one,
check that a JobSet converged (and nothing writes afterwards), read a counter off an API server's
or the controller's /metrics, make a scraper, and print a measured figure."""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import ssl
import time

import aiohttp

from tests.chaos.harness import ACCOUNTS, BINDINGS, Plane
from tests.chaos.invariants import Recorder
from tests.waiting import until


def figure(name: str, value: float, unit: str = "s") -> None:
    """Print a measured figure (`-s`), and append it to $JOBSET_CHAOS_FIGURES if set (a run on
    xdist workers captures prints): what docs/reliability.md quotes."""
    line = f"chaos figure: {name} = {value:.1f} {unit}".rstrip()
    print(f"\n{line}")
    if path := os.environ.get("JOBSET_CHAOS_FIGURES"):
        with open(path, "a") as out:
            out.write(line + "\n")


async def restart_under_way(plane: Plane, recorder: Recorder, namespace: str, name: str,
                            replicas: int) -> None:
    """Start a restart: a Job's pod fails; return once status.restarts is 1 (the old Jobs are
    then being deleted and the new ones not all created)."""
    await plane.all_running(namespace, replicas, 0, timeout=120)
    await plane.end_pods(namespace, f"{name}-w-0", 1)

    async def counted() -> bool:
        return 1 in recorder.restarts.get((namespace, name), [])

    await until(counted, f"{namespace}/{name} restarting", timeout=60)


async def restart_time(plane: Plane, namespace: str, job: str, attempt: int,
                       replicas: int) -> float:
    """Fail `job`'s pod; the seconds until every Job of the next attempt runs."""
    began = time.monotonic()
    await plane.end_pods(namespace, job, 1)
    await plane.all_running(namespace, replicas, attempt, timeout=180)
    return time.monotonic() - began


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
    await until(lambda: _quiet(recorder, namespace, 2.0), f"{namespace} quiet for 2 s", timeout=60)
    assert not recorder.violations(), recorder.violations()


async def _quiet(recorder: Recorder, namespace: str, seconds: float) -> bool:
    since = time.monotonic()
    await asyncio.sleep(seconds)  # a window in which writes are counted, not hoped away
    return recorder.writes(namespace, since) == 0


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


async def controller_requests(plane: Plane, token: str) -> float:
    """Requests the leader's client has sent (its rest_client_requests_total)."""
    assert plane.fleet is not None
    leader = plane.fleet.replicas[await plane.leader()]
    status, text = await scrape(leader.metrics_port, token)
    assert status == 200, text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("rest_client_requests_total{"))
