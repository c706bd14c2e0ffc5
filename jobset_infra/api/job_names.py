"""The names of a JobSet's children, declared once (upstream `GenJobName`, Kubernetes' pods).

A child Job is `<jobset>-<replicatedJob>-<index>`; its Indexed pods are `<job>-<index>-<suffix>`
(five random characters from the Job controller). The controller names Jobs with these, the
workload planner lists them, placement's preview check and the validation of name lengths use
them, and `test_child_job_names_are_declared_once` fails on another spelling of the formula.
Pure.
"""

from __future__ import annotations

__all__ = ["child_job_name", "indexed_pod_name"]


def child_job_name(jobset: str, replicated_job: str, index: int) -> str:
    """Return the name of the `index`-th Job of `replicated_job`: `<jobset>-<rjob>-<index>`."""
    return f"{jobset}-{replicated_job}-{index}"


def indexed_pod_name(job: str, completion_index: int, suffix: str) -> str:
    """Return the name Kubernetes' Job controller gives an Indexed Job's pod."""
    return f"{job}-{completion_index}-{suffix}"
