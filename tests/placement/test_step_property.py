"""The no-sharing property through the core's placement step, on real Job manifests.

A small model cluster: JobSets are created (their Jobs built by the core's construction and
placed by `place_new_jobs`), Jobs finish, JobSets are suspended (Kueue preemption) and resumed
(`place_resumed_jobs`), pools disappear and come back. After every event, no two running exclusive
Jobs of the same priority may share a node pool, and a JobSet is never started partly.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.controller_config import PlacementMode
from jobset_infra.controller.core.child_jobs import construct_jobs
from jobset_infra.controller.core.exclusive_placement import place_new_jobs, place_resumed_jobs
from jobset_infra.controller.core.types import CoreConfig, Observed, child_job_from_manifest
from jobset_infra.placement import SlimNode, job_view_from_manifest, placement_inputs
from jobset_infra.testing.jobsets import make_jobset
from tests.placement.builders import POOL_KEY, TPU, tpu_node

CONFIG = CoreConfig()
POOLS = 5  # four pools exist at first; toggling may add a fifth


def _jobset(name: str, replicas: int, priority: str) -> Any:
    return (
        make_jobset(name)
        .uid(f"uid-{name}")
        .exclusive(POOL_KEY)
        .replicated_job("s", replicas=replicas, parallelism=2)
        .pod_spec(
            "s",
            priorityClassName=priority,
            containers=[{"name": "m", "image": "x", "resources": {"limits": {TPU: "4"}}}],
            tolerations=[{"key": TPU, "operator": "Exists"}],
        )
        .model()
    )


class Cluster:
    def __init__(self) -> None:
        self.nodes: list[SlimNode] = [
            tpu_node(f"pool-{p}-{n}", f"pool-{p}") for p in range(4) for n in range(2)
        ]
        self.jobsets: dict[str, Any] = {}
        self.jobs: dict[str, dict[str, Any]] = {}  # name -> manifest

    def observed(self, js: Any) -> Observed:
        views = [v for v in map(job_view_from_manifest, self.jobs.values()) if v is not None]
        inputs = placement_inputs(self.nodes, (), views, PlacementMode.EXCLUSIVE)
        children = tuple(
            child_job_from_manifest(j)
            for j in self.jobs.values()
            if j["metadata"]["ownerReferences"][0]["name"] == js.name
        )
        return Observed(jobset=js, jobs=children, placement=inputs)

    def create(self, name: str, replicas: int, priority: str) -> None:
        js = self.jobsets[name] = _jobset(name, replicas, priority)
        jobs = construct_jobs(js, js.spec.replicated_jobs[0], (), 0)
        decision = place_new_jobs(jobs, self.observed(js), CONFIG)
        assert len(decision.create) in (0, len(jobs)), "a JobSet was started partly"
        for job in decision.create:
            job["metadata"]["uid"] = f"uid-{job['metadata']['name']}"
            self.jobs[job["metadata"]["name"]] = job

    def members(self, name: str) -> list[dict[str, Any]]:
        return [j for j in self.jobs.values() if j["metadata"]["name"].startswith(f"{name}-s-")]

    def suspend(self, name: str) -> None:
        for job in self.members(name):
            job["spec"]["suspend"] = True

    def resume(self, name: str) -> None:
        observed = self.observed(self.jobsets[name])
        suspended = tuple(j for j in observed.jobs if j.suspend and not j.condition("Complete"))
        decision = place_resumed_jobs(suspended, observed, CONFIG)
        assert not (decision.hold and decision.node_selectors), "a JobSet was resumed partly"
        for job in suspended:
            if job.name in decision.node_selectors:
                manifest = self.jobs[job.name]
                manifest["spec"]["suspend"] = False
                manifest["spec"]["template"]["spec"]["nodeSelector"].update(
                    decision.node_selectors[job.name]
                )

    def finish(self, index: int) -> None:
        if self.jobs:
            job = list(self.jobs.values())[index % len(self.jobs)]
            job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}

    def toggle_pool(self, index: int) -> None:
        pool = f"pool-{index % POOLS}"
        if any(n.labels[POOL_KEY] == pool for n in self.nodes):
            self.nodes = [n for n in self.nodes if n.labels[POOL_KEY] != pool]
        else:
            self.nodes += [tpu_node(f"{pool}-{n}", pool) for n in range(2)]

    def assert_exclusive(self) -> None:
        held = [
            (v.domain, v.scope)
            for v in map(job_view_from_manifest, self.jobs.values())
            if v is not None and v.holds_domain
        ]
        assert len(held) == len(set(held)), f"shared: {sorted(held)}"  # type: ignore[type-var]


EVENTS = st.lists(
    st.tuples(
        # creates and resumes weighted up: contention is where double booking would show
        st.sampled_from(
            ["create", "create", "create", "finish", "suspend", "resume", "resume", "pool"]
        ),
        st.integers(0, 11),
        st.integers(1, 4),
    ),
    max_size=25,
)


@given(EVENTS)
def test_placement_step_never_double_books(events: list[tuple[str, int, int]]) -> None:
    cluster = Cluster()
    for step, (kind, a, b) in enumerate(events):
        names = sorted(cluster.jobsets)
        if kind == "create":
            cluster.create(f"js{step}", b, ("low", "high")[a % 2])
        elif kind == "finish":
            cluster.finish(a)
        elif kind == "suspend" and names:
            cluster.suspend(names[a % len(names)])
        elif kind == "resume" and names:
            cluster.resume(names[a % len(names)])
        elif kind == "pool":
            cluster.toggle_pool(a)
        cluster.assert_exclusive()
