"""One pass plans every missing Job of a JobSet, however large, without building their
manifests (the executor builds each as it sends it), so memory stays bounded with no cap on
creates a pass; a JobSet no cluster could hold, or with a template the API server refuses for
every Job, is malformed (InvalidSpec, nothing created) and costs one cheap check."""

from __future__ import annotations

import time
import tracemalloc
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api.cluster_bounds import MAX_JOBSET_PODS
from jobset_infra.controller.core import MalformedJobSetError, observe, reconcile
from jobset_infra.controller.core.child_jobs import construct_jobs
from jobset_infra.controller.core.types import ChildJob, CreateJob
from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import make_jobset

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _planned(js: dict[str, object], jobs: list[ChildJob]) -> tuple[CreateJob, ...]:
    creates: tuple[CreateJob, ...] = reconcile(observe(js, jobs), NOW).of_type(CreateJob)
    return creates


@settings(max_examples=25, deadline=None)
@given(
    replicas=st.lists(st.integers(0, 40), min_size=1, max_size=3),
    existing=st.sets(st.integers(0, 39), max_size=10),
)
def test_one_pass_plans_every_missing_job_once_and_builds_none(
    replicas: list[int], existing: set[int]
) -> None:
    builder = make_jobset("js", "ns").uid("u")
    for i, n in enumerate(replicas):
        builder.replicated_job(f"r{i}", replicas=n)
    js = builder.obj()
    model = observe(js).jobset
    jobs = []
    for name in sorted({f"js-r0-{i}" for i in existing if i < replicas[0]}):
        (manifest,) = [m for m in construct_jobs(model, model.spec.replicated_jobs[0], (), 0)
                       if m["metadata"]["name"] == name]
        jobs.append(job_from(manifest | {"metadata": manifest["metadata"] | {"uid": name}}).view())
    creates = _planned(js, jobs)
    assert all(not isinstance(c.source, dict) for c in creates), "no manifest built in the pass"
    want = [m for r in model.spec.replicated_jobs
            for m in construct_jobs(model, r, {j.name for j in jobs}, 0)]
    assert [c.manifest for c in creates] == want, "built when sent, as an eager pass built them"
    assert sum(replicas) == len(creates) + len(jobs)
    for create in creates:
        manifest = create.manifest
        manifest["metadata"]["uid"] = create.name
        jobs.append(job_from(manifest).view())
    assert _planned(js, jobs) == ()


def test_a_large_jobset_is_planned_in_one_pass_in_bounded_memory() -> None:
    js = make_jobset("big", "ns").uid("u").replicated_job("w", replicas=150_000).obj()
    tracemalloc.start()
    creates = _planned(js, [])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [c.name for c in creates[:2]] == ["big-w-0", "big-w-1"]
    assert len(creates) == 150_000
    # 150,000 manifests built at once were about 1.5 GB; the lazy creates measured 26-31 MiB
    assert peak < 48 * 1024 * 1024, f"one pass held {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize(
    ("replicas", "parallelism"),
    [
        pytest.param(2_000_000_000, None, id="two billion Jobs"),
        pytest.param(1_000, 1_000, id="a thousand Jobs of a thousand pods"),
        pytest.param(MAX_JOBSET_PODS + 1, 0, id="parallelism 0 still counts one pod per Job"),
    ],
)
def test_a_jobset_no_cluster_holds_is_malformed_at_once(
    replicas: int, parallelism: int | None
) -> None:
    builder = make_jobset("huge", "ns").uid("u").replicated_job("w", replicas=replicas)
    if parallelism is not None:
        builder.job_spec("w", parallelism=parallelism)
    started = time.process_time()
    with pytest.raises(MalformedJobSetError) as bad:
        observe(builder.obj())
    assert time.process_time() - started < 0.1
    (error,) = bad.value.errors
    assert error.path == "spec.replicatedJobs[0].replicas"
    assert f"at most {MAX_JOBSET_PODS}" in error.message


def test_the_bound_is_reached_not_exceeded() -> None:
    js = make_jobset("edge", "ns").replicated_job("w", replicas=MAX_JOBSET_PODS).obj()
    assert observe(js).jobset.spec.replicated_jobs[0].replicas == MAX_JOBSET_PODS


@pytest.mark.parametrize(
    ("template_spec", "field"),
    [
        pytest.param("a string", "spec.replicatedJobs[0].template.spec.template",
                     id="a pod template that is a string"),
        pytest.param({"spec": {"containers": "x"}},
                     "spec.replicatedJobs[0].template.spec.template.spec.containers",
                     id="containers that are a string"),
        pytest.param({"spec": {"containers": []}},
                     "spec.replicatedJobs[0].template.spec.template.spec.containers",
                     id="no containers, which every Job would be refused for"),
    ],
)
def test_a_malformed_template_is_found_by_the_full_check(
    template_spec: object, field: str
) -> None:
    js = make_jobset("t", "ns").replicated_job("w", replicas=1).obj()
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] = template_spec
    with pytest.raises(MalformedJobSetError) as bad:
        observe(js, check_templates=True)
    assert [e.path for e in bad.value.errors] == [field]


def test_a_jobset_nested_too_deep_is_malformed() -> None:
    js = make_jobset("d", "ns").replicated_job("w", replicas=1).obj()
    deep: object = "x"
    for _ in range(200):
        deep = {"a": deep}
    js["spec"]["replicatedJobs"][0]["template"]["metadata"] = {"annotations": deep}
    with pytest.raises(MalformedJobSetError, match="deeper than 100 levels"):
        observe(js, check_templates=True)
