"""The controller's RBAC grants exactly the calls the runtime really makes.

The rules are declared once (`jobset_infra.api.rbac`); the Role is rendered from them and the
client refuses any call they do not grant. What is left to show is the other direction: that the
controller uses every grant. So the controller is driven through every behaviour that needs one
(leader election, child Jobs and their restart, a large JobSet's restart in one
deletecollection, suspend and resume, the headless Service, PVCs, exclusive placement's Node
informer, in-place restart's Pod informer (its gate on), repeated events in both Event APIs, TTL
after finished, a scrape of the secure /metrics by a bound ServiceAccount), and the calls its
client made (`KubeClient.used`) are compared with the rules.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import aiohttp
import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.features import Feature
from jobset_infra.api.rbac import ALL_RULES, NAMESPACE_RULES, called_permissions
from jobset_infra.api.resilience import Cause
from jobset_infra.controller.core.previous_attempts import COLLECTION_MIN_JOBS
from jobset_infra.controller.runtime.auth import for_url
from jobset_infra.controller.runtime.kube import MERGE_PATCH, KubeClient
from jobset_infra.controller.runtime.manager import RunningController
from jobset_infra.controller.runtime.resources import JOBSETS, LEASES, PVCS, Resource
from jobset_infra.manifests import rbac as manifests_rbac
from jobset_infra.placement.pool_health import DomainFailure
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.command import register_crd
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import NAMESPACES, Cluster, fast_config, quiescent
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)

NS = "rbac"
EVENTS_V1 = GVR("events.k8s.io", "v1", "events")


@pytest.fixture(params=["events.k8s.io", "core"])
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    """A sim of its own (the core case stops serving events.k8s.io, as old clusters do)."""
    sim = Sim(port=0)
    await sim.start()
    register_crd(sim.store)
    if request.param == "core":
        sim.store.registry.remove(EVENTS_V1)
    try:
        async with KubeClient(for_url(sim.url), enforce_permissions=False) as api:
            await api.create(NAMESPACES, {"metadata": {"name": NS}})
            c = Cluster("sim", for_url(sim.url), api, NS, has_gc=True, sim=sim)
            try:
                yield c
            finally:
                for ctl in c.controllers:
                    await ctl.stop()
    finally:
        await sim.stop()


async def start(cluster: Cluster) -> RunningController:
    config = fast_config(
        controller={"watchNamespace": NS},
        featureGates={Feature.IN_PLACE_RESTART.value: True},
        metrics={"bindAddress": "127.0.0.1:0", "secureServing": True},
        leaderElection={
            "leaderElect": True,
            "resourceName": "jobset-rbac",
            "resourceNamespace": NS,
            # Renewals come every retryPeriod; a long lease keeps a loaded machine (CI runs two
            # workers) from losing it mid-test, after which nothing would reconcile for a while.
            "leaseDuration": "15s",
            "renewDeadline": "10s",
            "retryPeriod": "100ms",
        },
    )
    ctl = await cluster.start_controller(config)
    await ctl.wait_leader(5)
    return ctl


async def set_suspend(cluster: Cluster, suspend: bool) -> None:
    await cluster.api.patch(
        JOBSETS, "js", {"spec": {"suspend": suspend}}, namespace=NS, content_type=MERGE_PATCH
    )


async def jobs_suspended(cluster: Cluster, suspended: bool) -> bool:
    jobs = await cluster.jobs()
    return bool(jobs) and all(bool(j["spec"].get("suspend")) is suspended for j in jobs)


@pytest.mark.timeout(120)
async def test_the_runtime_calls_exactly_what_the_rbac_grants(cluster: Cluster) -> None:
    ctl = await start(cluster)
    assert ctl.elector is not None
    renewals = ctl.elector.writes
    await until(lambda: ctl.elector is not None and ctl.elector.writes > renewals + 1,
                "the Lease renewed")
    builder = (
        make_jobset("js")
        .replicated_job("a")
        .volume_mount("a", "data")
        .volume_claim_policy("data", when_deleted="Delete")
        .failure_policy(max_restarts=2)
        .ttl_after_finished(0)
    )
    await cluster.create_jobset(builder)
    await until(cluster.job_names, "the child Job")
    pvcs = await cluster.api.list(PVCS, NS)
    await until(lambda: pvcs["items"], "the PVC")
    # A failed Job restarts the JobSet: its Jobs are deleted and created again.
    await cluster.set_job_status("js-a-0", "failed")

    async def restarted() -> bool:
        js = await cluster.jobset("js") or {}
        return (js.get("status") or {}).get("restarts") == 1 and bool(await cluster.job_names())

    await until(restarted, "a restart")
    # Suspend and resume twice: the Jobs are patched, a resumed Job's startTime is cleared, and
    # the second round's events repeat the first's (a series PATCH on the same Event).
    for _ in range(2):
        await cluster.set_job_status("js-a-0", "ready")
        await set_suspend(cluster, True)
        await until(lambda: jobs_suspended(cluster, True), "Jobs suspended")
        await set_suspend(cluster, False)
        await until(lambda: jobs_suspended(cluster, False), "Jobs resumed")
        await until(lambda: quiescent(cluster, ctl), "the controller caught up")
        await ctl.recorder.flush()
    await cluster.set_job_status("js-a-0", "completed")

    async def deleted_by_ttl() -> bool:
        return await cluster.jobset("js") is None

    await until(deleted_by_ttl, "ttlSecondsAfterFinished deleted the JobSet")
    await ctl.recorder.flush()
    # A large JobSet's restart deletes its previous attempt with one deletecollection.
    await restart_a_large_jobset(cluster)
    # The slice-health ledger: a first failure creates its ConfigMap, a second updates it.
    for uid in ("u1", "u2"):
        await ctl.controller.health.record([DomainFailure(
            "cloud.google.com/gke-nodepool", "pool-0", Cause.NODE_NOT_READY,
            datetime.now(UTC), f"{NS}/js-a-0", uid)])
    assert [f.job_uid for f in ctl.controller.health.failures] == ["u1", "u2"]
    failures = {"cause": Cause.NODE_NOT_READY.value}
    assert ctl.metrics.sample("jobset_topology_domain_failures_total", failures) == 2
    # A scrape of the secure /metrics: the scraper's token is reviewed and its access checked.
    assert await scrape(cluster, ctl) == 200
    events_group = "" if cluster.sim.store.registry.get(EVENTS_V1) is None else "events.k8s.io"
    other_events = {g for g in ("", "events.k8s.io") if g != events_group}
    want = {p for p in called_permissions() if not (p[1] == "events" and p[0] in other_events)}
    # The reviews and the Lease go through clients of their own (metrics_auth.py,
    # manager._elector), with the same grants.
    assert ctl.endpoints.auth is not None
    used = ctl.client.used | ctl.endpoints.auth.client.used | ctl.elector.client.used
    assert used == want, (
        f"granted but not called: {sorted(want - used)}; "
        f"called but not granted: {sorted(used - want)}"
    )


async def restart_a_large_jobset(cluster: Cluster) -> None:
    n = COLLECTION_MIN_JOBS
    await cluster.create_jobset(
        make_jobset("big").replicated_job("w", replicas=n).failure_policy(max_restarts=1))

    async def attempt(number: str) -> bool:
        jobs = await cluster.jobs()
        return len(jobs) == n and all(j["metadata"]["labels"][c.RESTARTS_KEY] == number
                                      for j in jobs)

    await until(lambda: attempt("0"), "the large JobSet's Jobs", timeout=30)
    await cluster.set_job_status("big-w-0", "failed")
    await until(lambda: attempt("1"), "the large JobSet's Jobs of its next attempt", timeout=30)


SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole",
                         namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                                 "ClusterRoleBinding", namespaced=False)


async def scrape(cluster: Cluster, ctl: RunningController) -> int:
    """GET /metrics as a ServiceAccount bound to the metrics-reader ClusterRole, with a token
    the API server issued it (TokenRequest); returns the HTTP status."""
    api = cluster.api
    await api.create(SERVICE_ACCOUNTS, {"metadata": {"name": "scraper"}}, NS)
    role = manifests_rbac.metrics_reader_role("metrics-reader", {})
    await api.create(CLUSTER_ROLES, role)
    await api.create(CLUSTER_ROLE_BINDINGS, {
        "metadata": {"name": "scraper"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": NS}],
    })
    issued = await api.request("POST", SERVICE_ACCOUNTS.path(NS, "scraper", "token"),
                               body={"apiVersion": "authentication.k8s.io/v1",
                                     "kind": "TokenRequest", "spec": {}})
    token = issued["status"]["token"]
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the controller's self-signed serving certificate
    url = f"https://127.0.0.1:{ctl.ports['metrics']}/metrics"
    async with aiohttp.ClientSession() as http, http.get(
        url, headers={"Authorization": f"Bearer {token}"}, ssl=context
    ) as response:
        return response.status


def test_the_only_grant_never_called_is_checked_by_the_api_server() -> None:
    not_called = [r for r in ALL_RULES if not r.called]
    assert [(r.resources, r.verbs) for r in not_called] == [(("jobsets/finalizers",), ("update",))]


def test_leases_are_granted_only_in_the_controller_namespace() -> None:
    lease_calls = {p for p in called_permissions() if p[1] == LEASES.plural}
    assert lease_calls and lease_calls <= called_permissions(NAMESPACE_RULES)
