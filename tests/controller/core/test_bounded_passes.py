"""A pass builds and creates at most `max_creates_per_pass` Jobs, whatever the JobSet asks; a
JobSet no cluster could hold, or with a template the API server refuses for every Job, is
malformed (InvalidSpec, nothing created) and costs one cheap check."""

from __future__ import annotations

import time
import tracemalloc
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api.cluster_bounds import MAX_JOBSET_PODS
from jobset_infra.controller.core import MalformedJobSetError, observe, reconcile
from jobset_infra.controller.core.types import ChildJob, CoreConfig, CreateJob
from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import make_jobset

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _created(js: dict[str, object], jobs: list[ChildJob], config: CoreConfig) -> list[str]:
    creates = reconcile(observe(js, jobs), NOW, config).of_type(CreateJob)
    for action in creates:
        action.manifest["metadata"]["uid"] = action.name
        jobs.append(job_from(action.manifest).view())
    return [a.name for a in creates]


@settings(max_examples=25, deadline=None)
@given(
    replicas=st.lists(st.integers(0, 40), min_size=1, max_size=3),
    cap=st.integers(1, 25),
)
def test_passes_of_at_most_the_cap_create_every_job_once(replicas: list[int], cap: int) -> None:
    builder = make_jobset("js", "ns").uid("u")
    for i, n in enumerate(replicas):
        builder.replicated_job(f"r{i}", replicas=n)
    js, jobs, config = builder.obj(), [], CoreConfig(max_creates_per_pass=cap)
    names: list[str] = []
    for _ in range(sum(replicas) + 1):
        batch = _created(js, jobs, config)
        if not batch:
            break
        assert len(batch) <= cap
        names += batch
    assert len(names) == len(set(names)) == sum(replicas)


def test_a_large_jobset_is_built_500_at_a_time() -> None:
    js = make_jobset("big", "ns").uid("u").replicated_job("w", replicas=150_000).obj()
    tracemalloc.start()
    first = _created(js, [], CoreConfig())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert first == [f"big-w-{i}" for i in range(500)]
    assert peak < 20 * 1024 * 1024, f"one pass held {peak / 2**20:.0f} MiB"


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
