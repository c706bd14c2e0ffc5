"""Children are found as upstream finds them: by their controller's UID, not by a label a user
can remove; and a Job that holds a child's name without being its child is reported (condition
JobNameConflict and a Warning event), not silently counted as created."""

from __future__ import annotations

from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.controller.runtime.kube import MERGE_PATCH
from jobset_infra.controller.runtime.manager import RunningController
from jobset_infra.controller.runtime.resources import JOBS
from jobset_infra.testing.jobsets import job_template, make_jobset
from tests.integration.conftest import Cluster
from tests.integration.test_controller_behaviours import wait_condition, wait_jobs
from tests.waiting import until


async def test_a_child_whose_labels_were_removed_still_counts(
    cluster: Cluster, controller: RunningController
) -> None:
    await cluster.create_jobset(
        make_jobset("js").replicated_job("w", replicas=2).failure_policy(max_restarts=1))
    await wait_jobs(cluster, ["js-w-0", "js-w-1"])
    removed = {key: None for key in (c.JOBSET_NAME_KEY, c.RESTARTS_KEY,
                                     c.REPLICATED_JOB_NAME_KEY, c.JOB_INDEX_KEY)}
    await cluster.api.patch(JOBS, "js-w-0", {"metadata": {"labels": removed}},
                            namespace=cluster.namespace, content_type=MERGE_PATCH)
    await cluster.set_job_status("js-w-0", "failed")

    async def restarted() -> bool:
        jobs = await cluster.jobs()
        attempts = [(j["metadata"].get("labels") or {}).get(c.RESTARTS_KEY) for j in jobs]
        return attempts == ["1", "1"]

    await until(restarted, "both Jobs recreated as restart attempt 1")
    js = await cluster.jobset("js") or {}
    assert js["status"]["restarts"] == 1, "the unlabelled child's failure restarted the JobSet"


async def test_a_job_holding_a_childs_name_is_reported_until_it_is_gone(
    cluster: Cluster, controller: RunningController
) -> None:
    squatter: dict[str, Any] = {"metadata": {"name": "js-w-1", "namespace": cluster.namespace},
                                **job_template()}
    squatter["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    await cluster.api.create(JOBS, squatter, cluster.namespace)
    await cluster.create_jobset(make_jobset("js").replicated_job("w", replicas=2))
    condition = await wait_condition(cluster, "js", c.CONDITION_JOB_NAME_CONFLICT)
    assert condition["reason"] == c.JOB_NAME_TAKEN_REASON
    assert "js-w-1 (no controller)" in condition["message"]
    warnings = await until(lambda: cluster.events(c.JOB_NAME_TAKEN_REASON),
                           "a Warning event naming the Job")
    assert warnings[0]["type"] == "Warning" and "js-w-1" in warnings[0]["note"]
    await cluster.api.delete(JOBS, "js-w-1", namespace=cluster.namespace)
    jobs = await wait_jobs(cluster, ["js-w-0", "js-w-1"])
    assert all(j["metadata"]["ownerReferences"][0]["kind"] == c.KIND for j in jobs)

    async def cleared() -> bool:
        js = await cluster.jobset("js") or {}
        return any(x["type"] == c.CONDITION_JOB_NAME_CONFLICT and x["status"] == "False"
                   for x in (js.get("status") or {}).get("conditions") or ())

    await until(cleared, "JobNameConflict=False once the name is free")
