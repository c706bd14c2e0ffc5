"""Hypothesis strategies for JobSet manifests (valid in shape, not necessarily valid)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from jobset_infra.api import constants as c
from jobset_infra.testing.jobsets import job_template

names = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True)
small = st.integers(min_value=0, max_value=8)
flags = st.none() | st.booleans()


@st.composite
def replicated_jobs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """1-4 replicated jobs with unique names; dependsOn only on earlier ones."""
    rjob_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    out: list[dict[str, Any]] = []
    for i, name in enumerate(rjob_names):
        parallelism = draw(st.integers(min_value=1, max_value=4))
        rjob: dict[str, Any] = {"name": name}
        if draw(st.booleans()):
            rjob["groupName"] = draw(names)
        mode = draw(
            st.sampled_from([None, c.COMPLETION_MODE_INDEXED, c.COMPLETION_MODE_NON_INDEXED])
        )
        rjob["template"] = job_template(parallelism, completion_mode=mode)
        if draw(st.booleans()):
            rjob["replicas"] = draw(small)
        if i > 0 and draw(st.booleans()):
            dep = draw(st.sampled_from(rjob_names[:i]))
            rjob["dependsOn"] = [
                {"name": dep, "status": draw(st.sampled_from(["Ready", "Complete"]))}
            ]
        out.append(rjob)
    return out


def _optional(draw: st.DrawFn, value: st.SearchStrategy[Any]) -> Any:
    return draw(value) if draw(st.booleans()) else None


@st.composite
def jobset_manifests(draw: st.DrawFn, with_status: bool = True) -> dict[str, Any]:
    """A JobSet manifest touching every part of the spec (and optionally the status)."""
    rjobs = draw(replicated_jobs())
    rjob_names = [r["name"] for r in rjobs]
    spec: dict[str, Any] = {"replicatedJobs": rjobs}
    net = _optional(
        draw,
        st.fixed_dictionaries(
            {},
            optional={
                "enableDNSHostnames": st.booleans(),
                "subdomain": names,
                "publishNotReadyAddresses": st.booleans(),
            },
        ),
    )
    if net is not None:
        spec["network"] = net
    if draw(st.booleans()):
        spec["successPolicy"] = {
            "operator": draw(st.sampled_from(["All", "Any"])),
            "targetReplicatedJobs": draw(
                st.lists(st.sampled_from(rjob_names), max_size=2, unique=True)
            ),
        }
    if draw(st.booleans()):
        spec["failurePolicy"] = draw(failure_policies(rjob_names))
    if draw(st.booleans()):
        spec["startupPolicy"] = {"startupPolicyOrder": "AnyOrder"}
    suspend = draw(flags)
    if suspend is not None:
        spec["suspend"] = suspend
    if draw(st.booleans()):
        spec["ttlSecondsAfterFinished"] = draw(small)
    if draw(st.booleans()):
        spec["managedBy"] = "example.com/" + draw(names)
    manifest: dict[str, Any] = {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": draw(names), "namespace": "ns"},
        "spec": spec,
    }
    if with_status and draw(st.booleans()):
        manifest["status"] = draw(statuses(rjob_names))
    return manifest


@st.composite
def failure_policies(draw: st.DrawFn, rjob_names: list[str]) -> dict[str, Any]:
    """A failure policy with 0-3 rules (names optional, so defaulting can name them)."""
    policy: dict[str, Any] = {}
    if draw(st.booleans()):
        policy["maxRestarts"] = draw(small)
    if draw(st.booleans()):
        policy["restartStrategy"] = draw(st.sampled_from(["Recreate", "BlockingRecreate"]))
    rules = []
    for i in range(draw(st.integers(min_value=0, max_value=3))):
        rule: dict[str, Any] = {
            "action": draw(
                st.sampled_from(
                    ["FailJobSet", "RestartJobSet", "RestartJobSetAndIgnoreMaxRestarts"]
                )
            )
        }
        if draw(st.booleans()):
            rule["name"] = f"rule{i}"
        if draw(st.booleans()):
            rule["onJobFailureReasons"] = draw(
                st.lists(
                    st.sampled_from(list(c.VALID_JOB_FAILURE_REASONS)), max_size=2, unique=True
                )
            )
        if draw(st.booleans()):
            rule["targetReplicatedJobs"] = draw(
                st.lists(st.sampled_from(rjob_names), max_size=2, unique=True)
            )
        rules.append(rule)
    if rules:
        policy["rules"] = rules
    return policy


@st.composite
def statuses(draw: st.DrawFn, rjob_names: list[str]) -> dict[str, Any]:
    """A status with counts per replicated job and maybe a condition."""
    status: dict[str, Any] = {"restarts": draw(small)}
    status["replicatedJobsStatus"] = [
        {
            "name": n,
            "ready": draw(small),
            "succeeded": draw(small),
            "failed": draw(small),
            "active": draw(small),
            "suspended": draw(small),
        }
        for n in rjob_names
    ]
    if draw(st.booleans()):
        status["conditions"] = [
            {
                "type": c.CONDITION_COMPLETED,
                "status": "True",
                "reason": c.ALL_JOBS_COMPLETED_REASON,
                "message": c.ALL_JOBS_COMPLETED_MESSAGE,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ]
        status["terminalState"] = c.CONDITION_COMPLETED
    return status
