"""JobSets that never met the CRD's rules (written straight into the sim's store with its admission
switched off, as an old CRD version or a direct etcd write would leave them) never crash the
controller: each gets InvalidSpec=True and a Warning event naming the field, and the controller
keeps reconciling every other JobSet, including ones created after the broken ones."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.controller.runtime.manager import RunningController, run_controller
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

pytestmark = pytest.mark.timeout(60)


def good(name: str) -> dict[str, Any]:
    builder = make_jobset(name, NS).replicated_job("w", replicas=2)
    return builder.pod_spec("w", restartPolicy="Never").obj()


def broken(name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    js = good(name)
    change(js)
    return js


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(js: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = js
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value

    return change


def _duplicate_first_rjob(js: dict[str, Any]) -> None:
    """A second replicated job with the first one's name (the CRD's listType=map refuses it)."""
    rjobs = js["spec"]["replicatedJobs"]
    rjobs.append({**rjobs[0], "replicas": 1})


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("replicas-text", _set("spec.replicatedJobs.0.replicas", "two")),
    ("replicas-negative", _set("spec.replicatedJobs.0.replicas", -3)),
    ("rjobs-not-a-list", _set("spec.replicatedJobs", {"w": 1})),
    ("spec-a-list", _set("spec", [1, 2])),
    ("template-null", _set("spec.replicatedJobs.0.template", None)),
    ("max-restarts-negative", _set("spec.failurePolicy", {"maxRestarts": -1})),
    ("unknown-strategy", _set("spec.failurePolicy", {"restartStrategy": "Sometimes"})),
    ("rjob-name-empty", _set("spec.replicatedJobs.0.name", "")),
    ("rjob-names-duplicate", _duplicate_first_rjob),
    ("pod-template-a-string", _set("spec.replicatedJobs.0.template.spec.template", "a string")),
    ("pod-spec-a-list", _set("spec.replicatedJobs.0.template.spec.template.spec", [1])),
    ("containers-empty", _set("spec.replicatedJobs.0.template.spec.template.spec.containers", [])),
    ("replicas-two-billion", _set("spec.replicatedJobs.0.replicas", 2_000_000_000)),
]
# A valid spec with a garbage status: nothing to report, the controller rewrites the status.
REPAIRED: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
    ("status-a-string", _set("status", "broken")),
    ("status-a-list", _set("status", [1])),
]


@contextmanager
def admission_off(store: Store) -> Iterator[None]:
    """Switch off the CRD's schema, defaults and CEL rules for JobSets while inside: a cluster
    whose CRD (an older version, or none of its rules) let these objects in and lets them stay."""
    saved = store.admission.pop(JOBSETS, None)
    try:
        yield
    finally:
        if saved is not None:
            store.admission[JOBSETS] = saved


def invalid_spec(store: Store, name: str) -> dict[str, Any] | None:
    js = store.try_get(JOBSETS, name, NS) or {}
    status = js.get("status")
    for cond in (status.get("conditions") or ()) if isinstance(status, dict) else ():
        if cond.get("type") == c.CONDITION_INVALID_SPEC and cond.get("status") == "True":
            return dict(cond)
    return None


def warnings_about(store: Store, name: str) -> list[dict[str, Any]]:
    return [
        e
        for e in store.iter_objects(EVENTS, NS)
        if e.get("reason") == c.INVALID_SPEC_REASON and e["regarding"]["name"] == name
    ]


def jobs_of(store: Store, name: str) -> list[dict[str, Any]]:
    return [
        j
        for j in store.iter_objects(JOBS, NS)
        if j["metadata"]["labels"].get(c.JOBSET_NAME_KEY) == name
    ]


def alive(ctl: RunningController) -> bool:
    return not any(t.done() for t in ctl.tasks)


async def test_broken_jobsets_are_reported_and_the_rest_reconciled(sim: Sim) -> None:
    store = sim.store
    store.create(JOBSETS, good("before"), NS)
    with admission_off(store):
        for name, change in BROKEN + REPAIRED:
            store.create(JOBSETS, broken(name, change), NS)
        await check_reported_and_others_reconciled(sim)


async def check_reported_and_others_reconciled(sim: Sim) -> None:
    store = sim.store
    async with run_controller(plain_config(), url=sim.url) as ctl:
        await ctl.wait_leader(10)
        await until(lambda: len(jobs_of(store, "before")) == 2,
                    "the healthy JobSet's Jobs", timeout=10)
        for name, _ in BROKEN:
            cond = await until(partial(invalid_spec, store, name),
                               f"{name} InvalidSpec", timeout=10)
            assert cond["reason"] == c.INVALID_SPEC_REASON
            assert cond["message"], f"{name}: the condition says what is wrong"
            events = await until(partial(warnings_about, store, name), f"{name} event", timeout=10)
            assert events[0]["type"] == "Warning"
            assert events[0]["note"] == cond["message"]
            assert jobs_of(store, name) == [], f"{name}: nothing is created for a broken JobSet"
        for name, _ in REPAIRED:
            await until(partial(jobs_of, store, name), f"{name} reconciled", timeout=10)
            assert len(jobs_of(store, name)) == 2
            status = store.get(JOBSETS, name, NS)["status"]
            assert isinstance(status, dict) and status["restarts"] == 0
        store.create(JOBSETS, good("after"), NS)
        await until(lambda: len(jobs_of(store, "after")) == 2, "a JobSet created later", timeout=10)
        assert alive(ctl), "no controller task died"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        pytest.param(_set("spec.replicatedJobs.0.replicas", "two"), "replicas",
                     id="a text replica count names replicas"),
        pytest.param(_set("spec.failurePolicy", {"restartStrategy": "Sometimes"}),
                     "restartStrategy", id="an unknown restart strategy names the field"),
    ],
)  # fmt: skip
async def test_the_message_names_the_field(
    sim: Sim, change: Callable[[dict[str, Any]], None], field: str
) -> None:
    with admission_off(sim.store):
        sim.store.create(JOBSETS, broken("bad", change), NS)
        async with run_controller(plain_config(), url=sim.url) as ctl:
            await ctl.wait_leader(10)
            cond = await until(lambda: invalid_spec(sim.store, "bad"), "InvalidSpec", timeout=10)
    assert field in cond["message"]
