"""Child Job construction (upstream TestConstructJobsFromTemplate, TestGlobalJobIndex,
TestGlobalReplicas, TestGroupJobIndex, TestGroupReplicas)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.controller.core.child_jobs import JobIndexes, construct_jobs
from jobset_infra.controller.core.identity import job_key
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset


def _base(name: str = "test-js") -> JobSetBuilder:
    return (
        make_jobset(name, "ns")
        .uid("js-uid")
        .replicated_job("replicated-job-a", replicas=1)
        .replicated_job("replicated-job-b", replicas=3)
    )


def _jobs(
    builder: JobSetBuilder, rjob: str, existing: tuple[str, ...] = (), **kw: Any
) -> list[Any]:
    js = builder.model()
    spec = next(r for r in js.spec.replicated_jobs if r.name == rjob)
    restarts = js.status.restarts if js.status else 0
    return list(construct_jobs(js, spec, set(existing), restarts, **kw))


def _names(jobs: list[dict[str, Any]]) -> list[str]:
    return [j["metadata"]["name"] for j in jobs]


@pytest.mark.parametrize(
    ("existing", "want_names"),
    [
        pytest.param(
            (),
            [
                "test-js-replicated-job-b-0",
                "test-js-replicated-job-b-1",
                "test-js-replicated-job-b-2",
            ],
            id="all jobs created",
        ),
        pytest.param(
            (
                "test-js-replicated-job-b-0",
                "test-js-replicated-job-b-1",
                "test-js-replicated-job-b-2",
            ),
            [],
            id="no jobs created",
        ),
        pytest.param(
            ("test-js-replicated-job-b-1",),
            ["test-js-replicated-job-b-0", "test-js-replicated-job-b-2"],
            id="a job that exists (active, succeeded, failed or deleting) is not created again",
        ),
    ],
)
def test_missing_jobs_are_created(existing: tuple[str, ...], want_names: list[str]) -> None:
    assert _names(_jobs(_base(), "replicated-job-b", existing)) == want_names


def test_every_upstream_label_and_annotation_on_job_and_pod_template() -> None:
    builder = _base().restarts(2).job_metadata("replicated-job-b", labels={"user": "x"})
    job = _jobs(builder, "replicated-job-b")[1]
    name = "test-js-replicated-job-b-1"
    want = {
        c.JOBSET_NAME_KEY: "test-js",
        c.JOBSET_UID_KEY: "js-uid",
        c.REPLICATED_JOB_NAME_KEY: "replicated-job-b",
        c.REPLICATED_JOB_REPLICAS_KEY: "3",
        c.GLOBAL_REPLICAS_KEY: "4",
        c.JOB_INDEX_KEY: "1",
        c.JOB_GLOBAL_INDEX_KEY: "2",
        c.JOB_KEY: hashlib.sha1(f"ns/{name}".encode()).hexdigest(),
        c.GROUP_NAME_KEY: "default",
        c.GROUP_REPLICAS_KEY: "4",
        c.JOB_GROUP_INDEX_KEY: "2",
        c.RESTARTS_KEY: "2",
    }
    pod_meta = job["spec"]["template"]["metadata"]
    assert job["metadata"]["labels"] == {"user": "x", **want}
    assert job["metadata"]["annotations"] == want
    assert pod_meta["labels"] == want
    assert pod_meta["annotations"] == want
    assert c.JOB_RESTART_ATTEMPT_KEY not in want
    assert job["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "test-js",
            "uid": "js-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert job["metadata"]["namespace"] == "ns"
    assert len(job_key("ns", name)) == 40


@pytest.mark.parametrize(
    ("builder", "rjob", "want_annotations", "want_selector", "want_toleration"),
    [
        pytest.param(
            _base().job_metadata("replicated-job-b", annotations={c.EXCLUSIVE_KEY: "rack"}),
            "replicated-job-b",
            {c.EXCLUSIVE_KEY: "rack"},
            None,
            False,
            id="exclusive placement for a ReplicatedJob",
        ),
        pytest.param(
            _base().job_metadata(
                "replicated-job-b",
                annotations={c.EXCLUSIVE_KEY: "rack", c.NODE_SELECTOR_STRATEGY_KEY: "true"},
            ),
            "replicated-job-b",
            {c.EXCLUSIVE_KEY: "rack", c.NODE_SELECTOR_STRATEGY_KEY: "true"},
            {c.NAMESPACED_JOB_KEY: "ns_test-js-replicated-job-b-0"},
            True,
            id="exclusive placement using nodeSelectorStrategy for a ReplicatedJob",
        ),
        pytest.param(
            _base().exclusive("topology.kubernetes.io/zone"),
            "replicated-job-a",
            {c.EXCLUSIVE_KEY: "topology.kubernetes.io/zone"},
            None,
            False,
            id="exclusive placement for entire JobSet",
        ),
        pytest.param(
            _base().exclusive("rack").annotation(c.NODE_SELECTOR_STRATEGY_KEY, "true"),
            "replicated-job-a",
            {c.EXCLUSIVE_KEY: "rack", c.NODE_SELECTOR_STRATEGY_KEY: "true"},
            {c.NAMESPACED_JOB_KEY: "ns_test-js-replicated-job-a-0"},
            True,
            id="exclusive placement using nodeSelectorStrategy for entire JobSet",
        ),
        pytest.param(
            _base()
            .exclusive("zone")
            .job_metadata("replicated-job-a", annotations={c.EXCLUSIVE_KEY: "rack"}),
            "replicated-job-a",
            {c.EXCLUSIVE_KEY: "rack"},
            None,
            False,
            id="replicated job level exclusive annotation wins over the JobSet level",
        ),
    ],
)
def test_exclusive_placement_annotations(
    builder: JobSetBuilder,
    rjob: str,
    want_annotations: dict[str, str],
    want_selector: dict[str, str] | None,
    want_toleration: bool,
) -> None:
    job = _jobs(builder, rjob)[0]
    for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
        got = {k: v for k, v in meta["annotations"].items() if k.startswith("alpha.")}
        assert got == want_annotations
        assert not any(k.startswith("alpha.") for k in meta["labels"])
    pod = job["spec"]["template"]["spec"]
    assert pod.get("nodeSelector") == want_selector
    toleration = {"key": c.NO_SCHEDULE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    assert (toleration in pod.get("tolerations", [])) is want_toleration


@pytest.mark.parametrize(
    ("builder", "want_subdomain"),
    [
        pytest.param(
            _base().network(enable_dns_hostnames=True), "test-js", id="pod dns hostnames enabled"
        ),
        pytest.param(
            _base().network(enable_dns_hostnames=True, subdomain="sub"),
            "sub",
            id="pod dns hostnames with a custom subdomain",
        ),
        pytest.param(
            _base().network(enable_dns_hostnames=False), None, id="pod dns hostnames disabled"
        ),
        pytest.param(_base(), None, id="no network: created before defaulting"),
    ],
)
def test_subdomain(builder: JobSetBuilder, want_subdomain: str | None) -> None:
    job = _jobs(builder, "replicated-job-a")[0]
    assert job["spec"]["template"]["spec"].get("subdomain") == want_subdomain


@pytest.mark.parametrize(
    ("builder", "want_suspend"),
    [
        pytest.param(_base().suspend(True), True, id="suspend job set"),
        pytest.param(_base().suspend(False), False, id="resume job set"),
        pytest.param(_base(), False, id="suspend unset"),
    ],
)
def test_jobs_follow_jobset_suspend(builder: JobSetBuilder, want_suspend: bool) -> None:
    assert all(j["spec"]["suspend"] is want_suspend for j in _jobs(builder, "replicated-job-b"))


def test_coordinator_label_and_annotation() -> None:
    builder = _base().network(enable_dns_hostnames=True).coordinator("replicated-job-a")
    for job in _jobs(builder, "replicated-job-b"):
        for meta in (job["metadata"], job["spec"]["template"]["metadata"]):
            assert meta["labels"][c.COORDINATOR_KEY] == "test-js-replicated-job-a-0-0.test-js"
            assert meta["annotations"][c.COORDINATOR_KEY] == "test-js-replicated-job-a-0-0.test-js"


@pytest.mark.parametrize(
    ("job_restarts", "want"),
    [
        pytest.param(
            (0, 2, 1), ["0", "2", "1"], id="JobRestartAttempt based on ReplicatedJobsStatus"
        ),
        pytest.param((), ["0", "0", "0"], id="JobRestartAttempt zero before any per-Job restart"),
        pytest.param(
            None,
            [None, None, None],
            id="JobRestartAttempt not added when RestartJob feature is disabled",
        ),
    ],
)
def test_job_restart_attempt(job_restarts: tuple[int, ...] | None, want: list[str | None]) -> None:
    jobs = _jobs(_base(), "replicated-job-b", job_restarts=job_restarts)
    got = [j["metadata"]["labels"].get(c.JOB_RESTART_ATTEMPT_KEY) for j in jobs]
    assert got == want
    assert [
        j["spec"]["template"]["metadata"]["annotations"].get(c.JOB_RESTART_ATTEMPT_KEY)
        for j in jobs
    ] == want


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(_base(), id="multiple replicated jobs"),
        pytest.param(_base().startup_policy("InOrder"), id="startup-policy"),
    ],
)
def test_jobs_of_every_replicated_job(builder: JobSetBuilder) -> None:
    js = builder.model()
    jobs = [job for rjob in js.spec.replicated_jobs for job in construct_jobs(js, rjob, set(), 0)]
    labels = [job["metadata"]["labels"] for job in jobs]
    assert _names(jobs) == [
        "test-js-replicated-job-a-0",
        *(f"test-js-replicated-job-b-{i}" for i in range(3)),
    ]
    assert [x[c.REPLICATED_JOB_NAME_KEY] for x in labels] == ["replicated-job-a"] + [
        "replicated-job-b"
    ] * 3
    assert [x[c.JOB_INDEX_KEY] for x in labels] == ["0", "0", "1", "2"]
    assert [x[c.JOB_GLOBAL_INDEX_KEY] for x in labels] == ["0", "1", "2", "3"]
    assert {x[c.GLOBAL_REPLICAS_KEY] for x in labels} == {"4"}
    assert all(job["spec"]["suspend"] is False for job in jobs)


def test_template_spec_is_copied_not_shared() -> None:
    js = _base().model()
    rjob = js.spec.replicated_jobs[1]
    jobs = construct_jobs(js, rjob, set(), 0)
    jobs[0]["spec"]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert rjob.template["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.36"
    assert jobs[1]["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox:1.36"


@pytest.mark.parametrize(
    (
        "replicas",
        "groups",
        "want_global_replicas",
        "want_global_offset",
        "want_group_replicas",
        "want_group_offset",
    ),
    [
        pytest.param([], [], 0, {}, {}, {}, id="empty"),
        pytest.param([4], ["default"], 4, {"r0": 0}, {"default": 4}, {"r0": 0}, id="single"),
        pytest.param(
            [2, 3, 5],
            ["default"] * 3,
            10,
            {"r0": 0, "r1": 2, "r2": 5},
            {"default": 10},
            {"r0": 0, "r1": 2, "r2": 5},
            id="multiple in one group",
        ),
        pytest.param(
            [2, 3, 5],
            ["g1", "g2", "g1"],
            10,
            {"r0": 0, "r1": 2, "r2": 5},
            {"g1": 7, "g2": 3},
            {"r0": 0, "r1": 0, "r2": 2},
            id="multiple groups",
        ),
        pytest.param(
            [2, 0, 5],
            ["g1", "g2", "g1"],
            7,
            {"r0": 0, "r1": 2, "r2": 2},
            {"g1": 7, "g2": 0},
            {"r0": 0, "r1": 0, "r2": 2},
            id="a group without replicas",
        ),
    ],
)
def test_job_indexes(
    *,
    replicas: list[int],
    groups: list[str],
    want_global_replicas: int,
    want_global_offset: dict[str, int],
    want_group_replicas: dict[str, int],
    want_group_offset: dict[str, int],
) -> None:
    builder = make_jobset("js")
    for i, (n, g) in enumerate(zip(replicas, groups, strict=True)):
        builder.replicated_job(f"r{i}", replicas=n, group_name=g)
    indexes = JobIndexes.of(builder.model().spec.replicated_jobs)
    assert indexes.global_replicas == want_global_replicas
    assert indexes.global_offset == want_global_offset
    assert indexes.group_replicas == want_group_replicas
    assert indexes.group_offset == want_group_offset


@given(
    rjobs=st.lists(
        st.tuples(st.integers(0, 4), st.sampled_from(["default", "g1", "g2"])),
        min_size=1,
        max_size=4,
    )
)
def test_indexes_of_all_jobs_are_dense_and_unique(rjobs: list[tuple[int, str]]) -> None:
    builder = make_jobset("js", "ns").uid("u")
    for i, (replicas, group) in enumerate(rjobs):
        builder.replicated_job(f"r{i}", replicas=replicas, group_name=group)
    js = builder.model()
    jobs = [j for r in js.spec.replicated_jobs for j in construct_jobs(js, r, set(), 0)]
    labels = [j["metadata"]["labels"] for j in jobs]
    total = sum(n for n, _ in rjobs)
    assert sorted(int(x[c.JOB_GLOBAL_INDEX_KEY]) for x in labels) == list(range(total))
    assert all(x[c.GLOBAL_REPLICAS_KEY] == str(total) for x in labels)
    for group in {g for _, g in rjobs}:
        in_group = [x for x in labels if x[c.GROUP_NAME_KEY] == group]
        size = sum(n for n, g in rjobs if g == group)
        assert sorted(int(x[c.JOB_GROUP_INDEX_KEY]) for x in in_group) == list(range(size))
        assert all(x[c.GROUP_REPLICAS_KEY] == str(size) for x in in_group)
    assert len({x[c.JOB_KEY] for x in labels}) == len(jobs) == total
    for job in jobs:  # the controller's keys are the same on the Job and its pod template
        pod_labels = job["spec"]["template"]["metadata"]["labels"]
        assert all(pod_labels[k] == v for k, v in job["metadata"]["labels"].items())
