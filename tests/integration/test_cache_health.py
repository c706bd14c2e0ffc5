"""A leader whose cache the API server refuses for the renew deadline gives the Lease up and
takes it again once it can see (on the sim, which can refuse one resource to a running replica).
A controller started without its RBAC is tested on the real control plane instead
(tests/chaos/test_controller.py), which made the sim's version of it redundant. A replica is not
ready while the API server refuses a JobSet create as a new CRD's does for a few seconds (with
the real engine: tests/stacks/test_outputs_program.py creates a JobSet as soon as JobSetSystem
is ready)."""

from __future__ import annotations

import pytest

from jobset_infra.controller.runtime.cache_health import API_NOT_SERVED
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.hooks import ApiRequest, Intercept
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import Cluster, fast_config
from tests.waiting import until


class Refuse:
    """RBAC without list/watch of Jobs in one namespace while `refusing`; with `short_watches`
    each Job watch ends after 0.3 s (so a refusal reaches a running informer soon, as an API
    server restart makes every client re-watch)."""

    def __init__(self, namespace: str, refusing: bool = True, short_watches: bool = False):
        self.namespace = namespace
        self.refusing = refusing
        self.short_watches = short_watches
        self.refused = 0

    def __call__(self, request: ApiRequest) -> Intercept | None:
        if request.resource != "jobs" or request.namespace != self.namespace:
            return None
        if self.refusing and request.verb in ("list", "watch"):
            self.refused += 1
            return Intercept(error=StatusError(403, "Forbidden", "jobs is forbidden"))
        if self.short_watches and request.verb == "watch":
            return Intercept(drop_after=0.3)
        return None


async def job_count(cluster: Cluster) -> int:
    return len(await cluster.jobs())


@pytest.mark.sim_only("refuses requests with a sim hook")
async def test_a_leader_that_cannot_see_jobs_gives_up_the_lease_and_takes_it_back(
    cluster: Cluster,
) -> None:
    config = fast_config(
        controller={"watchNamespace": cluster.namespace},
        leaderElection={"leaderElect": True, "resourceName": "give-up",
                        "resourceNamespace": cluster.namespace, "leaseDuration": "1s",
                        "renewDeadline": "800ms", "retryPeriod": "200ms"},
    )
    refuse = Refuse(cluster.namespace, refusing=False, short_watches=True)
    cluster.sim.sim.add_hook(refuse)
    ctl = await cluster.start_controller(config)
    await ctl.wait_leader(5)
    try:
        refuse.refusing = True  # the Job watch's next re-open is refused
        await until(lambda: _async(ctl.gave_up == 1), "the leader giving up")
        assert not ctl.is_leader and not ctl.readiness().ok
        lease = await cluster.api.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{cluster.namespace}/leases/give-up")
        assert not lease["spec"].get("holderIdentity"), "the Lease was released, not left to expire"
        await cluster.create_jobset(make_jobset("js").replicated_job("w", replicas=2))
    finally:
        cluster.sim.sim.remove_hook(refuse)
    await ctl.wait_leader(30)
    await until(lambda: _len_is(cluster, 2), "the JobSet's Jobs once it can see")
    assert ctl.readiness().ok and ctl.liveness().ok and not ctl.lost.is_set()


class RefuseCreates:
    """A JobSet create answered 503 as a new CRD's are while admission catches up."""

    def __init__(self) -> None:
        self.refused = 0

    def __call__(self, request: ApiRequest) -> Intercept | None:
        if request.resource != "jobsets" or request.verb != "create":
            return None
        self.refused += 1
        return Intercept(error=StatusError(
            503, "ServiceUnavailable", "Resource kind jobset.x-k8s.io/v1alpha2, Kind=JobSet "
            "not found. There can be a delay between when CustomResourceDefinitions are "
            "created and when they are available."))


@pytest.mark.sim_only("refuses JobSet creates with a sim hook")
async def test_not_ready_until_the_api_server_takes_a_jobset_create(cluster: Cluster) -> None:
    refuse = RefuseCreates()
    cluster.sim.sim.add_hook(refuse)
    try:
        ctl = await cluster.start_controller()
        await until(lambda: _async(refuse.refused >= 2), "the probe refused twice")
        verdict = ctl.readiness()
        assert not verdict.ok and verdict.reasons == (API_NOT_SERVED,), verdict.text()
    finally:
        cluster.sim.sim.remove_hook(refuse)
    await until(lambda: _async(ctl.readiness().ok), "ready once the server takes a create")
    assert await cluster.jobset("jobset-infra-served-check") is None, "a dry run stores nothing"


async def _len_is(cluster: Cluster, count: int) -> bool:
    return await job_count(cluster) == count


async def _async(value: bool) -> bool:
    return value
