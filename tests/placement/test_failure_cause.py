"""A failed Job's cause from its pods, their nodes and its pool (failure_cause.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobset_infra.api.resilience import Cause
from jobset_infra.placement.failure_cause import (
    FailureEvidence,
    PodFailure,
    diagnose,
    pod_failure_from_manifest,
)
from jobset_infra.placement.nodes import node_problems
from tests.placement.builders import node_manifest, tpu_node

BACKOFF = "BackoffLimitExceeded"
HEALTHY = tpu_node("n0", "p0")
SICK = replace(HEALTHY, ready=False)


def pod(name: str = "w-0", node: str = "n0", **kw: Any) -> PodFailure:
    return PodFailure(name, node, **kw)


def evidence(*pods: PodFailure, nodes: dict[str, Any] | None = None) -> FailureEvidence:
    return FailureEvidence(pods, {"n0": HEALTHY} if nodes is None else nodes)


@pytest.mark.parametrize(
    ("reason", "message", "found", "pool", "cause", "detail"),
    [
        pytest.param(BACKOFF, "", evidence(pod(), nodes={"n0": None}), (), Cause.NODE_DELETED,
                     "node n0 no longer exists", id="the node the pod ran on is gone"),
        pytest.param(BACKOFF, "", evidence(pod(exit_codes=(1,), exit_reasons=("Error",)),
                                           nodes={"n0": SICK}), (), Cause.NODE_NOT_READY,
                     "node n0 is NotReady", id="a NotReady node explains the exit it caused"),
        pytest.param(BACKOFF, "", None, (HEALTHY, replace(HEALTHY, name="n1", ready=False)),
                     Cause.NODE_NOT_READY, "node n1 (pool p0) is NotReady",
                     id="with no pod left, a NotReady node of the pool still tells"),
        pytest.param(BACKOFF, "", evidence(pod(), nodes={"n0": replace(HEALTHY, problems=(
            "1 of its 4 google.com/tpu devices are unhealthy",))}), (), Cause.TPU_DEVICE_ERROR,
            "node n0: 1 of its 4 google.com/tpu devices are unhealthy",
            id="a chip the device plugin took out of allocatable"),
        pytest.param(BACKOFF, "", evidence(pod(disruption="PreemptionByScheduler")), (),
                     Cause.PREEMPTED, "pod w-0 was preempted (PreemptionByScheduler)",
                     id="a pod the scheduler preempted"),
        pytest.param(BACKOFF, "", evidence(pod(disruption="DeletionByTaintManager")), (),
                     Cause.POD_DISRUPTED, "pod w-0 was disrupted (DeletionByTaintManager)",
                     id="a pod the taint manager evicted"),
        pytest.param("PodFailurePolicy",
                     "Container main for pod ns/w-0 failed with exit code 137 matching FailJob "
                     "rule at index 0", None, (), Cause.SIGNAL, None,
                     id="a podFailurePolicy message names a signal's exit code"),
        pytest.param("PodFailurePolicy",
                     "Pod ns/w-0 has condition DisruptionTarget matching FailJob rule at index 1",
                     None, (), Cause.POD_DISRUPTED, None,
                     id="a podFailurePolicy message names the disruption"),
        pytest.param("DeadlineExceeded", "Job was active longer than specified deadline", None,
                     (), Cause.DEADLINE_EXCEEDED, None, id="the Job's deadline passed"),
        pytest.param(BACKOFF, "", evidence(pod(exit_codes=(3,), exit_reasons=("Error",)),
                                           pod("w-1", exit_codes=(137,), exit_reasons=("Error",))),
                     (), Cause.SIGNAL, "pod w-1 exited with code 137 (Error)",
                     id="a signal says more than another pod's own exit"),
        pytest.param(BACKOFF, "", evidence(pod(exit_codes=(137,), exit_reasons=("OOMKilled",))),
                     (), Cause.OOM_KILLED, "pod w-0 exited with code 137 (OOMKilled)",
                     id="out of memory is the program's limit, not a signal from the host"),
        pytest.param(BACKOFF, "", evidence(pod(exit_codes=(2,), exit_reasons=("Error",))), (),
                     Cause.USER_EXIT, "pod w-0 exited with code 2 (Error)",
                     id="the program's own exit code"),
        pytest.param(BACKOFF, "", None, (HEALTHY,), Cause.UNKNOWN,
                     "BackoffLimitExceeded; no pod left to read, and their nodes are healthy",
                     id="nothing to go by"),
    ],
)
def test_the_most_specific_evidence_names_the_cause(  # noqa: PLR0917 (a table row)
    reason: str, message: str, found: FailureEvidence | None, pool: tuple[Any, ...],
    cause: Cause, detail: str | None,
) -> None:
    diagnosis = diagnose(reason, message, found, pool, "p0" if pool else "")
    assert diagnosis.cause is cause
    assert diagnosis.detail == (detail if detail is not None else message)


def test_a_pod_manifest_keeps_node_disruption_and_exits() -> None:
    manifest = {
        "metadata": {"name": "w-0"},
        "spec": {"nodeName": "n3"},
        "status": {
            "conditions": [{"type": "DisruptionTarget", "status": "True",
                            "reason": "DeletionByTaintManager"}],
            "containerStatuses": [
                {"state": {"terminated": {"exitCode": 143, "reason": "Error"}}},
                {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"state": {"running": {}}},
            ],
        },
    }
    assert pod_failure_from_manifest(manifest) == PodFailure(
        "w-0", "n3", "DeletionByTaintManager", (143,), ("Error",))


@settings(max_examples=30)
@given(st.recursive(st.none() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.sampled_from(["metadata", "spec", "status", "conditions",
                                                       "containerStatuses", "state", "terminated",
                                                       "exitCode", "nodeName", "type"]),
                                      inner, max_size=4),
                    max_leaves=6))
def test_any_pod_shape_gives_a_pod_failure_and_a_diagnosis(value: Any) -> None:
    manifest = value if isinstance(value, dict) else {"status": value}
    found = pod_failure_from_manifest(manifest)
    assert diagnose(BACKOFF, "", FailureEvidence((found,))).cause in Cause


def test_node_problems_reads_unhealthy_chips_and_problem_conditions() -> None:
    manifest = node_manifest("n0", "p0", chips=3)
    manifest["status"]["capacity"] = {"google.com/tpu": "4"}
    manifest["status"]["conditions"] += [
        {"type": "MemoryPressure", "status": "True"},
        {"type": "KernelDeadlock", "status": "True", "reason": "DockerHung"},
        {"type": "FrequentKubeletRestart", "status": "False"},
    ]
    assert node_problems(manifest["status"]) == (
        "1 of its 4 google.com/tpu devices are unhealthy", "condition KernelDeadlock (DockerHung)")
