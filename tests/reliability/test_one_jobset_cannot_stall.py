"""One JobSet cannot stall the controller: a JobSet no cluster could hold is reported once and
costs nothing after; a large valid JobSet is created at the rate limit in bounded passes while
JobSets created after it get their Jobs."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.controller.runtime.manager import run_controller
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.testing.jobsets import make_jobset
from tests.reliability.chaos import plain_config
from tests.waiting import until

JOBSETS = GVR(c.GROUP, c.VERSION, c.PLURAL)
JOBS = GVR("batch", "v1", "jobs")
EVENTS = GVR("events.k8s.io", "v1", "events")
NS = "default"

pytestmark = pytest.mark.timeout(120)


def jobset(name: str, replicas: int) -> dict[str, Any]:
    builder = make_jobset(name, NS).replicated_job("w", replicas=replicas)
    return builder.pod_spec("w", restartPolicy="Never").obj()


def config(qps: float = 500.0) -> ControllerConfig:
    return plain_config(clientConnection={"qps": qps, "burst": 20}, controller={"workers": 4})


def jobs_of(store: Store, name: str) -> int:
    return sum(
        1 for j in store.iter_objects(JOBS, NS)
        if j["metadata"]["labels"].get(c.JOBSET_NAME_KEY) == name
    )


def invalid_spec_events(store: Store, name: str) -> list[dict[str, Any]]:
    return [e for e in store.iter_objects(EVENTS, NS)
            if e.get("reason") == c.INVALID_SPEC_REASON and e["regarding"]["name"] == name]


async def test_two_billion_replicas_is_reported_once_and_the_others_run(sim: Sim) -> None:
    store = sim.store
    store.create(JOBSETS, jobset("huge", 2_000_000_000), NS)  # the CRD takes it
    async with run_controller(config(), url=sim.url) as ctl:
        await ctl.wait_leader(10)
        store.create(JOBSETS, jobset("small", 3), NS)
        await until(lambda: jobs_of(store, "small") == 3, "the small JobSet's Jobs", timeout=20)
        await until(lambda: invalid_spec_events(store, "huge"), "the report", timeout=10)
        for i in range(5):  # more passes for it: each must cost nothing and say nothing new
            huge = store.get(JOBSETS, "huge", NS)
            huge["metadata"].setdefault("labels", {})["touched"] = str(i)
            store.update(JOBSETS, huge, NS)
        store.create(JOBSETS, jobset("later", 2), NS)
        await until(lambda: jobs_of(store, "later") == 2, "a JobSet created later", timeout=20)
        assert jobs_of(store, "huge") == 0
        assert len(invalid_spec_events(store, "huge")) == 1
        (event,) = invalid_spec_events(store, "huge")
        assert "spec.replicatedJobs[0].replicas" in event["note"]
        assert not any(t.done() for t in ctl.tasks)


async def test_a_pod_template_string_is_reported_once_and_never_retried(sim: Sim) -> None:
    store = sim.store
    store.admission.pop(JOBSETS)  # as a CRD without our schema stores (and keeps) it
    bad = jobset("bad", 1)
    bad["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] = "a string"
    store.create(JOBSETS, bad, NS)
    async with run_controller(config(), url=sim.url) as ctl:
        await ctl.wait_leader(10)
        await until(lambda: invalid_spec_events(store, "bad"), "the report", timeout=10)
        store.create(JOBSETS, jobset("fine", 2), NS)
        await until(lambda: jobs_of(store, "fine") == 2, "the next JobSet's Jobs", timeout=20)
        crashes = ctl.metrics.reconcile_panics.labels(controller=c.CONTROLLER_NAME)
        assert crashes._value.get() == 0, "no reconcile raised"
        (event,) = invalid_spec_events(store, "bad")
        assert "spec.replicatedJobs[0].template.spec.template" in event["note"]


async def test_a_large_jobset_progresses_while_later_jobsets_get_their_jobs(sim: Sim) -> None:
    store = sim.store
    store.create(JOBSETS, jobset("large", 3000), NS)
    async with run_controller(config(qps=300.0), url=sim.url) as ctl:
        await ctl.wait_leader(10)
        await until(lambda: jobs_of(store, "large") > 0, "the large JobSet to start", timeout=20)
        for i in range(4):
            store.create(JOBSETS, jobset(f"small-{i}", 2), NS)
        await until(lambda: all(jobs_of(store, f"small-{i}") == 2 for i in range(4)),
                    "every small JobSet's Jobs", timeout=30)
        assert jobs_of(store, "large") < 3000, "the small ones did not wait for the large one"
        await until(lambda: jobs_of(store, "large") == 3000, "the large one to finish", timeout=60)
