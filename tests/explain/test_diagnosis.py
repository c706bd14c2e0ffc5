"""explain's diagnosis over scripted situations (plain objects as the API server returns them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api import resilience as res
from jobset_infra.explain.command import render_text
from jobset_infra.explain.diagnosis import Gathered, explain
from jobset_infra.placement.pool_health import DomainFailure, ledger_text
from tests.placement.builders import POOL_KEY, TOPO_KEY, make_job, node_manifest

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
UID = "uid-js"


def jobset(*conditions: tuple[str, str, str, str], suspend: bool = False) -> dict[str, Any]:
    return {
        "metadata": {"name": "js", "namespace": "default", "uid": UID,
                     "annotations": {c.EXCLUSIVE_KEY: POOL_KEY}},
        "spec": {"suspend": suspend, "replicatedJobs": [{"name": "w", "template": {"spec": {
            "template": {"spec": {"nodeSelector": {TOPO_KEY: "2x4"}}}}}}]},
        "status": {"conditions": [{"type": t, "status": s, "reason": r, "message": m}
                                  for t, s, r, m in conditions]},
    }


def pools(*names: str, not_ready: str = "") -> list[dict[str, Any]]:
    """TPU pools `names` (2x4 nodes), and a CPU pool the JobSet's pods never select."""
    cpu = node_manifest("cpu-node-0", "default-pool")
    cpu["metadata"]["labels"].pop(TOPO_KEY)
    return [node_manifest(f"{p}-node-{i}", p, ready=p != not_ready)
            for p in names for i in (0, 1)] + [cpu]


def workload(reserved: tuple[str, str] | None, chips: int = 16, checks: list[Any] = ()) -> Any:
    conditions = [] if reserved is None else [
        {"type": "QuotaReserved", "status": reserved[0], "reason": "Pending",
         "message": reserved[1]}]
    return {
        "metadata": {"name": "jobset-js-1", "namespace": "default", "uid": "wl",
                     "ownerReferences": [{"uid": UID}]},
        "spec": {"queueName": "lq", "podSets": [{"name": "w", "count": chips // 4, "template": {
            "spec": {"containers": [{"resources": {"limits": {"google.com/tpu": "4"}}}]}}}]},
        "status": {"conditions": conditions, "admissionChecks": list(checks)},
    }


def admitted(name: str, cq: str = "cq") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team", "uid": name},
            "status": {"admission": {"clusterQueue": cq},
                       "conditions": [{"type": "QuotaReserved", "status": "True"}]}}


LOCAL_QUEUE = {"spec": {"clusterQueue": "cq"}}
CLUSTER_QUEUE = {
    "spec": {"resourceGroups": [{"flavors": [{"name": "v5e", "resources": [
        {"name": "google.com/tpu", "nominalQuota": "32"}]}]}]},
    "status": {"flavorsReservation": [{"name": "v5e", "resources": [
        {"name": "google.com/tpu", "total": "24"}]}]},
}


def pod(name: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "default",
                         "labels": {"job-name": name.rsplit("-", 1)[0]}},
            "spec": {"nodeName": status.pop("node", "")}, "status": status}


def test_queued_over_quota_names_the_quota_and_who_uses_it() -> None:
    g = Gathered(jobset(suspend=True), NOW, kueue=True,
                 workload=workload(("False", "couldn't assign flavors to pod set w: "
                                    "insufficient unused quota for google.com/tpu in flavor "
                                    "v5e, 8 more needed")),
                 workloads=[admitted("other")], local_queue=LOCAL_QUEUE,
                 cluster_queue=CLUSTER_QUEUE)
    found = explain(g)
    assert found.state == "Queued"
    assert "insufficient unused quota" in found.summary
    assert found.workload is not None
    assert found.workload["quota"] == {"v5e": {"resource": "google.com/tpu", "requested": 16,
                                               "nominal": 32, "used": 24}}
    assert found.unblock == ("24 of 32 google.com/tpu of flavor v5e are in use by team/other: "
                             "wait for them to finish, or preempt them with a higher "
                             "WorkloadPriorityClass",)


def test_a_jobset_asking_more_than_the_quota_is_told_to_ask_less() -> None:
    g = Gathered(jobset(suspend=True), NOW, kueue=True, workload=workload(("False", "x"), 64),
                 local_queue=LOCAL_QUEUE, cluster_queue=CLUSTER_QUEUE)
    [fix] = explain(g).unblock
    assert fix.startswith("it asks 64 google.com/tpu but cq's nominalQuota of flavor v5e is 32")


def test_a_pending_admission_check_blocks_an_admitted_quota() -> None:
    check = {"name": "dws", "state": "Pending", "message": "waiting for capacity"}
    g = Gathered(jobset(suspend=True), NOW, kueue=True,
                 workload=workload(("True", "reserved"), checks=[check]))
    found = explain(g)
    assert found.state == "Queued"
    assert [(b.layer, b.reason) for b in found.blockers] == [("kueue", "Pending")]
    assert "admission check dws must turn Ready (waiting for capacity)" in found.unblock


def test_suspended_without_kueue_says_so() -> None:
    found = explain(Gathered(jobset(suspend=True), NOW))
    assert (found.state, found.summary) == ("Suspended",
                                            "the JobSet is suspended; Kueue is not installed")


def test_no_free_pool_lists_pools_and_who_holds_them() -> None:
    message = "2 Job(s) need a cloud.google.com/gke-nodepool domain each; 3 exist"
    holder = make_job("other-w-0", jobset="other").on("p-1").obj()
    g = Gathered(jobset((c.CONDITION_PLACEMENT_PENDING, "True", c.PLACEMENT_NO_FIT_REASON,
                         message)), NOW, nodes=pools("p-0", "p-1", "p-2", not_ready="p-2"),
                 all_jobs=[holder])
    found = explain(g)
    assert found.state == "WaitingForPools"
    assert [(p.name, p.state) for p in found.pools] == [
        ("p-0", "free"), ("p-1", "occupied"), ("p-2", "not-ready")]
    assert found.pools[1].holder == "default/other"
    assert found.unblock[0].startswith("wait for the Jobs holding pools to finish (default/other)")
    assert "repair (or uncordon) the nodes of p-2" in found.unblock


def test_a_kept_out_pool_says_why_and_until_when() -> None:
    ledger = ledger_text([DomainFailure(POOL_KEY, "p-0", res.Cause.TPU_DEVICE_ERROR,
                                        NOW, "default/x", "u")])
    g = Gathered(jobset((c.CONDITION_PLACEMENT_PENDING, "True", c.PLACEMENT_NO_FIT_REASON, "no")),
                 NOW, nodes=pools("p-0", "p-1"), ledger=ledger)
    found = explain(g)
    assert [(p.name, p.state) for p in found.pools] == [("p-0", "kept-out"), ("p-1", "free")]
    assert found.pools[0].detail == "p-0 (tpu_device_error, the last at 12:00:00Z; until 12:10:00Z)"
    assert any("cool-down ends" in u for u in found.unblock)


@pytest.mark.parametrize(
    ("status", "want_reason"),
    [
        pytest.param({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/6 nodes are available: 6 Insufficient cpu."}]}, "Unschedulable",
            id="a pod the scheduler cannot place"),
        pytest.param({"phase": "Pending", "containerStatuses": [
            {"name": "main", "state": {"waiting": {"reason": "ImagePullBackOff",
                                                   "message": "Back-off pulling image"}}}]},
            "ImagePullBackOff", id="a container whose image cannot be pulled"),
    ],
)
def test_pods_that_cannot_start_are_named(status: dict[str, Any], want_reason: str) -> None:
    g = Gathered(jobset(), NOW, pods=[pod("js-w-0-0", **status), pod("js-w-1-0", phase="Running")])
    found = explain(g)
    assert found.state == "PodsBlocked"
    [blocker] = found.blockers
    assert (blocker.layer, blocker.reason) == ("pods", want_reason)
    assert blocker.subject.startswith("pod js-w-0-0")


def test_a_failed_jobset_gives_each_failed_job_its_cause_from_exit_codes_and_nodes() -> None:
    failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
              "message": "Job has reached the specified backoff limit"}
    jobs = [{"metadata": {"name": "js-w-0"}, "status": {"conditions": [failed]}},
            {"metadata": {"name": "js-w-1"}, "status": {"conditions": [failed]}}]
    exited = {"phase": "Failed", "containerStatuses": [
        {"name": "main", "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]}
    pods_ = [pod("js-w-0-0", node="p-0-node-0", **exited),
             pod("js-w-1-0", node="p-1-node-0", **exited)]
    g = Gathered(jobset((c.CONDITION_FAILED, "True", c.FAILED_JOBS_REASON, "jobset failed")),
                 NOW, jobs=jobs, pods=pods_, nodes=pools("p-0", "p-1", not_ready="p-1"))
    found = explain(g)
    assert found.state == "Failed"
    assert [(f["job"], f["cause"], f["exitCodes"]) for f in found.failures] == [
        ("js-w-0", "user_exit", [3]), ("js-w-1", "node_not_ready", [3])]
    assert found.failures[1]["infrastructure"] is True
    assert "js-w-1: node_not_ready" in found.unblock[0]


def test_running_and_the_text_form() -> None:
    g = Gathered(jobset(), NOW, pods=[pod("js-w-0-0", phase="Running")])
    found = explain(g)
    assert (found.state, found.summary) == ("Running", "every Job is running")
    text = render_text(found.to_json())
    assert text.startswith("JobSet default/js: Running\n  every Job is running")
