"""Every core behaviour end to end: the real controller over HTTP against an API server.

Job status is set by hand, as upstream's envtest suite does; each test runs on the sim and (when
envtest binaries are present) on a real kube-apiserver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.controller.core.previous_attempts import COLLECTION_MIN_JOBS
from jobset_infra.controller.runtime.kube import MERGE_PATCH, ApiError
from jobset_infra.controller.runtime.manager import RunningController
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, PVCS, SERVICES
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import (
    Cluster,
    fast_config,
    quiescent,
    reconciled,
)
from tests.waiting import until


def labels(job: dict[str, Any]) -> dict[str, str]:
    return dict(job["metadata"].get("labels") or {})


async def wait_jobs(
    cluster: Cluster, names: list[str], timeout: float = 10.0
) -> list[dict[str, Any]]:
    async def check() -> list[dict[str, Any]] | None:
        jobs = await cluster.jobs()
        return jobs if [j["metadata"]["name"] for j in jobs] == sorted(names) else None

    return await until(check, f"jobs {sorted(names)}", timeout=timeout)


async def wait_condition(cluster: Cluster, name: str, type_: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        return await cluster.condition(name, type_)

    return await until(check, f"condition {type_} on {name}")


async def test_create_makes_jobs_service_and_status(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(
        make_jobset("js").replicated_job("a", replicas=2).replicated_job("b")
    )
    jobs = await wait_jobs(cluster, ["js-a-0", "js-a-1", "js-b-0"])
    assert labels(jobs[1])[c.JOB_INDEX_KEY] == "1"
    assert labels(jobs[0])[c.RESTARTS_KEY] == "0"
    assert jobs[0]["metadata"]["ownerReferences"][0]["kind"] == c.KIND
    assert await until(cluster.services, "headless service") == ["js"]

    async def status() -> list[str] | None:
        js = await cluster.jobset("js") or {}
        rjobs = (js.get("status") or {}).get("replicatedJobsStatus") or []
        return sorted(r["name"] for r in rjobs) or None

    assert await until(status, "replicatedJobsStatus") == ["a", "b"]


@dataclass(frozen=True)
class Completion:
    """A success policy, the Jobs marked running then succeeded, and the Jobs left after."""

    operator: str
    running: tuple[str, ...]
    succeed: tuple[str, ...]
    left: tuple[str, ...]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Completion("All", (), ("js-a-0", "js-a-1"), ("js-a-0", "js-a-1")),
                     id="All: both Jobs succeed, then the controller looks again"),
        pytest.param(Completion("Any", ("js-a-1",), ("js-a-0",), ("js-a-0",)),
                     id="Any: one Job succeeds, and deleting the running one rewrites the status"),
    ],
)
async def test_success_completes_the_jobset_once(
    cluster: Cluster, controller: RunningController, case: Completion
) -> None:
    await cluster.create_jobset(
        make_jobset("js").replicated_job("a", replicas=2).success_policy(case.operator)
    )
    await wait_jobs(cluster, ["js-a-0", "js-a-1"])
    for name in case.running:
        await cluster.set_job_status(name, "ready")
    for name in case.succeed:
        await cluster.set_job_status(name, "completed")
    first = await wait_condition(cluster, "js", c.CONDITION_COMPLETED)
    assert first["reason"] == c.ALL_JOBS_COMPLETED_REASON
    # "Once": after completing, the controller keeps reconciling the JobSet (the active Job's
    # deletion writes the status again under Any; three more passes in both cases). A second
    # completion would add to the counter, emit the event again (a series on the first one)
    # or rewrite the condition.
    await wait_jobs(cluster, list(case.left))
    await until(lambda: quiescent(cluster, controller), "the controller caught up")
    await reconciled(controller, f"{cluster.namespace}/js", times=3)
    await until(lambda: quiescent(cluster, controller), "the controller caught up")
    await controller.recorder.flush()
    labels_ = {"jobset_name": "js", "namespace": cluster.namespace}
    assert controller.metrics.sample("jobset_completed_total", labels_) == 1
    events = await cluster.events(c.ALL_JOBS_COMPLETED_REASON)
    assert len(events) == 1, events
    assert events[0]["regarding"]["name"] == "js"
    assert not events[0].get("series"), "the completion event was emitted again"
    assert await cluster.condition("js", c.CONDITION_COMPLETED) == first


@pytest.mark.parametrize(
    ("action", "max_restarts", "want"),
    [
        pytest.param(
            "FailJobSet",
            3,
            (c.CONDITION_FAILED, c.FAIL_JOBSET_ACTION_REASON),
            id="FailJobSet fails the jobset at once",
        ),
        pytest.param(
            "RestartJobSet",
            1,
            (c.CONDITION_RESTARTING, None),
            id="RestartJobSet recreates every job and counts a restart",
        ),
        pytest.param(
            "RestartJobSetAndIgnoreMaxRestarts",
            0,
            (c.CONDITION_RESTARTING, None),
            id="RestartJobSetAndIgnoreMaxRestarts restarts past maxRestarts",
        ),
        pytest.param(
            "RestartJobSet",
            0,
            (c.CONDITION_FAILED, c.REACHED_MAX_RESTARTS_REASON),
            id="RestartJobSet with no restarts left fails the jobset",
        ),
    ],
)
async def test_failure_policy_actions(
    cluster: Cluster,
    controller: RunningController,
    action: str,
    max_restarts: int,
    want: tuple[str, str | None],
) -> None:
    want_condition, want_reason = want
    builder = (
        make_jobset("js")
        .replicated_job("a", replicas=2)
        .failure_policy(max_restarts=max_restarts)
        .rule(action, name="r1")
    )
    await cluster.create_jobset(builder)
    await wait_jobs(cluster, ["js-a-0", "js-a-1"])
    await cluster.set_job_status("js-a-1", "failed")
    cond = await wait_condition(cluster, "js", want_condition)
    if want_reason:
        assert cond["reason"] == want_reason
        return
    jobs = await wait_jobs(cluster, ["js-a-0", "js-a-1"])

    async def restarted() -> bool:
        jobs = await cluster.jobs()
        return len(jobs) == 2 and all(labels(j)[c.RESTARTS_KEY] == "1" for j in jobs)

    await until(restarted, "jobs recreated with restart-attempt 1")
    js = await cluster.jobset("js") or {}
    assert js["status"]["restarts"] == 1
    assert jobs


def requests_sent(ctl: RunningController, method: str) -> float:
    """The controller's requests of `method` so far (rest_client_requests_total, every code)."""
    return sum(sample.value for metric in ctl.metrics.registry.collect()
               for sample in metric.samples
               if sample.name == c.METRIC_REST_REQUESTS_TOTAL
               and sample.labels.get("method") == method)


async def test_a_large_jobsets_restart_deletes_its_previous_attempt_in_one_request(
    cluster: Cluster, controller: RunningController
) -> None:
    n = COLLECTION_MIN_JOBS
    await cluster.create_jobset(
        make_jobset("js").replicated_job("a", replicas=n).failure_policy(max_restarts=1))
    await wait_jobs(cluster, [f"js-a-{i}" for i in range(n)], timeout=30)
    await cluster.set_job_status("js-a-5", "failed")

    async def restarted() -> bool:
        jobs = await cluster.jobs()  # envtest: the test finishes the foreground deletions
        return len(jobs) == n and all(labels(j)[c.RESTARTS_KEY] == "1" for j in jobs)

    await until(restarted, "every Job created again in attempt 1", timeout=30)
    assert requests_sent(controller, "DELETE") == 1


async def test_a_failed_job_is_acted_on_without_waiting_for_the_batch_period(
    cluster: Cluster,
) -> None:
    slow = {"watchNamespace": cluster.namespace, "childEventBatchPeriod": "60s"}
    ctl = await cluster.start_controller(fast_config(controller=slow))
    await ctl.wait_leader(5)
    await cluster.create_jobset(
        make_jobset("js").replicated_job("a").failure_policy(max_restarts=1)
    )
    await wait_jobs(cluster, ["js-a-0"])
    await cluster.set_job_status("js-a-0", "failed")

    async def restarted() -> bool:
        js = await cluster.jobset("js") or {}
        return bool((js.get("status") or {}).get("restarts") == 1)

    # every other child event of this JobSet waits 60 s: only the failure itself wakes it
    await until(restarted, "restarts 1 long before the 60 s batch period", timeout=20)


async def test_default_policy_fails_after_max_restarts(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(
        make_jobset("js").replicated_job("a").failure_policy(max_restarts=1)
    )
    await wait_jobs(cluster, ["js-a-0"])
    await cluster.set_job_status("js-a-0", "failed")

    async def attempt(n: str) -> bool:
        jobs = await cluster.jobs()
        return len(jobs) == 1 and labels(jobs[0])[c.RESTARTS_KEY] == n

    await until(lambda: attempt("1"), "restart attempt 1")
    await cluster.set_job_status("js-a-0", "failed")
    cond = await wait_condition(cluster, "js", c.CONDITION_FAILED)
    assert cond["reason"] == c.REACHED_MAX_RESTARTS_REASON


@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param("Recreate", id="Recreate"),
        pytest.param("BlockingRecreate", id="BlockingRecreate"),
    ],
)
async def test_restart_strategies_recreate_every_job(
    cluster: Cluster, controller: RunningController, strategy: str
) -> None:
    builder = make_jobset("js").replicated_job("a", replicas=2).replicated_job("b")
    await cluster.create_jobset(builder.failure_policy(max_restarts=3, restart_strategy=strategy))
    await wait_jobs(cluster, ["js-a-0", "js-a-1", "js-b-0"])
    await cluster.set_job_status("js-b-0", "failed")

    async def recreated() -> bool:
        jobs = await cluster.jobs()
        return len(jobs) == 3 and all(labels(j)[c.RESTARTS_KEY] == "1" for j in jobs)

    await until(recreated, f"{strategy}: all jobs at restart-attempt 1")
    js = await cluster.jobset("js") or {}
    assert js["status"]["restarts"] == 1
    assert js["status"].get("restartsCountTowardsMax", 1) == 1


async def test_in_order_startup_waits_for_ready_jobs(
    cluster: Cluster, controller: RunningController
) -> None:
    builder = (
        make_jobset("js")
        .replicated_job("leader")
        .replicated_job("workers", replicas=2)
        .startup_policy("InOrder")
    )
    await cluster.create_jobset(builder)
    await wait_jobs(cluster, ["js-leader-0"])
    await wait_condition(cluster, "js", c.CONDITION_STARTUP_POLICY_IN_PROGRESS)
    assert await cluster.job_names() == ["js-leader-0"], "workers wait for the leader to be ready"
    await cluster.set_job_status("js-leader-0", "ready")
    await wait_jobs(cluster, ["js-leader-0", "js-workers-0", "js-workers-1"])
    for name in ("js-workers-0", "js-workers-1"):
        await cluster.set_job_status(name, "ready")
    await wait_condition(cluster, "js", c.CONDITION_STARTUP_POLICY_COMPLETED)


async def test_depends_on_waits_for_completion(
    cluster: Cluster, controller: RunningController
) -> None:
    builder = (
        make_jobset("js")
        .replicated_job("init")
        .replicated_job("main", depends_on=[("init", "Complete")])
    )
    await cluster.create_jobset(builder)
    await wait_jobs(cluster, ["js-init-0"])
    await cluster.set_job_status("js-init-0", "ready")
    await wait_jobs(cluster, ["js-init-0"])
    assert await cluster.job_names() == ["js-init-0"], "Ready is not Complete"
    await cluster.set_job_status("js-init-0", "completed")
    await wait_jobs(cluster, ["js-init-0", "js-main-0"])


async def test_suspend_and_resume_with_kueue_template_edits(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(make_jobset("js").replicated_job("a", replicas=2).suspend())
    jobs = await wait_jobs(cluster, ["js-a-0", "js-a-1"])
    assert all(j["spec"]["suspend"] is True for j in jobs)
    await wait_condition(cluster, "js", c.CONDITION_SUSPENDED)
    # What Kueue does on admission: inject the flavor's node selector, then unsuspend.
    js = await cluster.jobset("js") or {}
    rjobs = js["spec"]["replicatedJobs"]
    pod_spec = rjobs[0]["template"]["spec"]["template"]["spec"]
    pod_spec["nodeSelector"] = {"cloud.google.com/gke-nodepool": "pool-1"}
    await cluster.api.patch(
        JOBSETS,
        "js",
        {"spec": {"replicatedJobs": rjobs}},
        namespace=cluster.namespace,
        content_type=MERGE_PATCH,
    )
    await cluster.api.patch(
        JOBSETS,
        "js",
        {"spec": {"suspend": False}},
        namespace=cluster.namespace,
        content_type=MERGE_PATCH,
    )

    async def resumed() -> bool:
        jobs = await cluster.jobs()
        return len(jobs) == 2 and all(
            not j["spec"].get("suspend")
            and j["spec"]["template"]["spec"]
            .get("nodeSelector", {})
            .get("cloud.google.com/gke-nodepool")
            == "pool-1"
            for j in jobs
        )

    await until(resumed, "jobs resumed with Kueue's node selector")

    async def resumed_condition() -> bool:
        js = await cluster.jobset("js") or {}
        conds = {x["type"]: x for x in (js.get("status") or {}).get("conditions") or ()}
        return conds.get(c.CONDITION_SUSPENDED, {}).get("reason") == c.RESUMED_REASON

    await until(resumed_condition, "Suspended=False ResumeJobs")


async def test_ttl_after_finished_deletes_the_jobset(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(make_jobset("js").replicated_job("a").ttl_after_finished(1))
    await wait_jobs(cluster, ["js-a-0"])
    await cluster.set_job_status("js-a-0", "completed")
    await wait_condition(cluster, "js", c.CONDITION_COMPLETED)

    async def gone() -> bool:
        js = await cluster.jobset("js")
        return js is None or bool(js["metadata"].get("deletionTimestamp"))

    await until(gone, "JobSet deleted by TTL", timeout=10.0)


async def test_deleted_service_is_recreated(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(make_jobset("js").replicated_job("a"))
    assert await until(cluster.services, "service") == ["js"]
    await cluster.api.delete(SERVICES, "js", namespace=cluster.namespace, propagation=None)

    async def recreated() -> bool:
        return await cluster.services() == ["js"]

    await until(recreated, "service recreated")


@pytest.mark.sim_only(
    "the garbage collector removes children (none runs in envtest's shape; the e2e tier covers "
    "it on the full cluster)"
)
async def test_deleting_the_jobset_removes_its_jobs(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(make_jobset("js").replicated_job("a", replicas=3))
    await wait_jobs(cluster, ["js-a-0", "js-a-1", "js-a-2"])
    await cluster.api.delete(JOBSETS, "js", namespace=cluster.namespace, propagation="Foreground")

    async def empty() -> bool:
        return await cluster.jobs(live_only=False) == [] and await cluster.jobset("js") is None

    await until(empty, "jobs and jobset gone")


async def test_restart_job_recreates_only_the_failed_job(cluster: Cluster) -> None:
    config = fast_config(
        controller={"watchNamespace": cluster.namespace}, featureGates={"RestartJob": True}
    )
    ctl = await cluster.start_controller(config)
    await ctl.wait_leader(5)
    builder = (
        make_jobset("js")
        .replicated_job("a", replicas=2)
        .failure_policy(max_restarts=2)
        .rule("RestartJob", name="one")
    )
    await cluster.create_jobset(builder)
    jobs = await wait_jobs(cluster, ["js-a-0", "js-a-1"])
    untouched_uid = jobs[0]["metadata"]["uid"]
    for name in ("js-a-0", "js-a-1"):
        await cluster.set_job_status(name, "ready")
    await cluster.set_job_status("js-a-1", "failed")

    async def recreated() -> bool:
        jobs = await cluster.jobs()
        return (
            len(jobs) == 2
            and labels(jobs[1]).get(c.JOB_RESTART_ATTEMPT_KEY) == "1"
            and jobs[0]["metadata"]["uid"] == untouched_uid
        )

    await until(recreated, "only js-a-1 recreated with job-restart-attempt 1")
    js = await cluster.jobset("js") or {}
    assert js["status"]["restarts"] == 0, "a job restart is not a JobSet restart"

    # Recovery metrics: once the new Job is ready too, the recovery is measured, by cause.
    await cluster.set_job_status("js-a-1", "ready")
    unknown = {"cause": "unknown"}  # a plain BackoffLimitExceeded, no pool to blame

    async def measured() -> float:
        return ctl.metrics.sample("jobset_recovery_seconds_count", unknown)

    await until(measured, "the recovery measured")
    assert ctl.metrics.sample("jobset_restarts_by_cause_total", unknown) == 1
    assert ctl.metrics.sample("jobset_phase_seconds_total", {"phase": "running"}) > 0


async def test_volume_claim_policy_creates_its_pvc_once(
    cluster: Cluster, controller: RunningController
) -> None:
    builder = (
        make_jobset("js")
        .replicated_job("a", replicas=2)
        .volume_mount("a", "data")
        .volume_claim_policy("data", when_deleted="Delete")
    )
    await cluster.create_jobset(builder)
    await wait_jobs(cluster, ["js-a-0", "js-a-1"])

    async def pvcs() -> list[str]:
        items = (await cluster.api.list(PVCS, cluster.namespace))["items"]
        return sorted(p["metadata"]["name"] for p in items)

    assert await until(pvcs, "the policy's PVC") == ["data-js"]
    jobs = await cluster.jobs()
    volumes = jobs[0]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-js"}} in volumes
    await until(lambda: quiescent(cluster, controller), "the controller caught up")
    before = controller.metrics.sample(
        "rest_client_requests_total",
        {"code": "409", "method": "POST", "host": cluster.access.host.split("//")[1]},
    )
    await reconciled(controller, f"{cluster.namespace}/js", times=3)
    after = controller.metrics.sample(
        "rest_client_requests_total",
        {"code": "409", "method": "POST", "host": cluster.access.host.split("//")[1]},
    )
    assert after == before, "a PVC the cache knows is not created again"


async def test_an_invalid_job_template_gets_invalid_spec_and_upstreams_job_creation_failed(
    cluster: Cluster, controller: RunningController
) -> None:
    # upstream's "a JobSet is created with an invalid Job template: should emit a warning event"
    await cluster.create_jobset(make_jobset("js").replicated_job("a", image=""))
    cond = await wait_condition(cluster, "js", c.CONDITION_INVALID_SPEC)
    assert cond["reason"] == c.INVALID_SPEC_REASON

    async def warning() -> list[dict[str, Any]]:
        return await cluster.events(c.JOB_CREATION_FAILED_EVENT)

    (event,) = await until(warning, "a JobCreationFailed event")
    assert event["type"] == "Warning"
    assert (event["regarding"]["kind"], event["regarding"]["name"]) == (c.KIND, "js")
    refusal = (
        'Job.batch "js-a-0" is invalid: spec.template.spec.containers[0].image: Required value'
    )
    assert event["note"] == f'job "js-a-0" creation failed with error: {refusal}'
    assert await cluster.job_names() == []
    if cluster.backend == "envtest":  # the real server words the refusal as the event does
        js = await cluster.jobset("js") or {}
        template = js["spec"]["replicatedJobs"][0]["template"]
        job = {"metadata": {"name": "js-a-0"}, "spec": template["spec"]}
        with pytest.raises(ApiError) as refused:
            await cluster.api.create(JOBS, job, cluster.namespace)
        assert refused.value.message == refusal
