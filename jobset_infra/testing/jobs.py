"""Fluent builders of child batch/v1 Jobs for tests, benchmarks and the sim.

    make_job("js", "ns", rjob="workers", index=0).failed(at=t0, reason="BackoffLimitExceeded").obj()
    make_job(...).ready().view()   # the core's slim ChildJob

The status helpers mimic what the kube Job controller writes (upstream's integration tests fake
Job status the same way: `completeJob`, `failJobWithOptions`, `readyJob`).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, Self

from jobset_infra.api import constants as c
from jobset_infra.api.job_names import child_job_name
from jobset_infra.controller.core.types import ChildJob, child_job_from_manifest, format_time

__all__ = ["JobBuilder", "job_from", "make_job"]

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class JobBuilder:
    """Builds one Job manifest step by step; `obj()` returns a deep copy, `view()` a ChildJob."""

    def __init__(self, manifest: dict[str, Any]) -> None:
        self._job = manifest

    # -- metadata ----------------------------------------------------------------------------

    def uid(self, uid: str) -> Self:
        """Set metadata.uid."""
        self._job["metadata"]["uid"] = uid
        return self

    def owner(self, jobset_name: str, jobset_uid: str) -> Self:
        """Set the controller ownerReference to a JobSet."""
        self._job["metadata"]["ownerReferences"] = [
            {
                "apiVersion": c.API_VERSION,
                "kind": c.KIND,
                "name": jobset_name,
                "uid": jobset_uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        return self

    def label(self, key: str, value: str) -> Self:
        """Set one label on the Job and its pod template (as the controller does)."""
        self._job["metadata"].setdefault("labels", {})[key] = value
        self._pod_meta().setdefault("labels", {})[key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        """Set one annotation on the Job (not its pod template)."""
        self._job["metadata"].setdefault("annotations", {})[key] = value
        return self

    def restart_attempt(self, attempt: int) -> Self:
        """Set the restart-attempt label."""
        return self.label(c.RESTARTS_KEY, str(attempt))

    def job_restart_attempt(self, attempt: int) -> Self:
        """Set the job-restart-attempt label (RestartJob gate)."""
        return self.label(c.JOB_RESTART_ATTEMPT_KEY, str(attempt))

    def deleting(self, at: datetime = _EPOCH) -> Self:
        """Mark the Job as being deleted (a foreground-deletion finalizer keeps it around)."""
        self._job["metadata"]["deletionTimestamp"] = format_time(at)
        self._job["metadata"]["finalizers"] = ["foregroundDeletion"]
        return self

    def resource_version(self, rv: str) -> Self:
        """Set metadata.resourceVersion."""
        self._job["metadata"]["resourceVersion"] = rv
        return self

    # -- spec --------------------------------------------------------------------------------

    def parallelism(self, n: int, completions: int | None = None) -> Self:
        """Set spec.parallelism and spec.completions (default: the same)."""
        self._job["spec"]["parallelism"] = n
        self._job["spec"]["completions"] = n if completions is None else completions
        return self

    def suspend(self, value: bool = True) -> Self:
        """Set spec.suspend."""
        self._job["spec"]["suspend"] = value
        return self

    def node_selector(self, **selector: str) -> Self:
        """Set the pod template's nodeSelector."""
        self._pod_spec()["nodeSelector"] = dict(selector)
        return self

    def tolerations(self, *tolerations: dict[str, Any]) -> Self:
        """Set the pod template's tolerations."""
        self._pod_spec()["tolerations"] = [dict(t) for t in tolerations]
        return self

    # -- status (what the kube Job controller would write) -----------------------------------

    def started(self, at: datetime = _EPOCH) -> Self:
        """Set status.startTime."""
        self._status()["startTime"] = format_time(at)
        return self

    def active(self, n: int | None = None) -> Self:
        """Running pods: status.active = n (default parallelism), ready 0."""
        self._status()["active"] = self._pods(n)
        return self

    def ready(self, n: int | None = None) -> Self:
        """All (or n) pods running and ready: active = ready = n."""
        pods = self._pods(n)
        self._status().update(active=pods, ready=pods)
        return self

    def completed(self, at: datetime = _EPOCH) -> Self:
        """Complete=True (with SuccessCriteriaMet), succeeded = parallelism, nothing active."""
        status = self._status()
        status.update(active=0, ready=0, succeeded=self._pods(None))
        status["completionTime"] = format_time(at)
        self._add_condition(
            c.JOB_CONDITION_SUCCESS_CRITERIA_MET, "True", "CompletionsReached", "", at
        )
        self._add_condition(c.JOB_CONDITION_COMPLETE, "True", "CompletionsReached", "", at)
        return self

    def failed(
        self,
        at: datetime = _EPOCH,
        reason: str = c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
        message: str = "Job has reached the specified backoff limit",
    ) -> Self:
        """Failed=True with `reason`/`message` at `at`, as the Job controller finishes a Job."""
        self._status().update(active=0, ready=0, failed=1)
        self._add_condition(c.JOB_CONDITION_FAILURE_TARGET, "True", reason, message, at)
        self._add_condition(c.JOB_CONDITION_FAILED, "True", reason, message, at)
        return self

    def failure_target(
        self,
        at: datetime = _EPOCH,
        reason: str = c.JOB_REASON_BACKOFF_LIMIT_EXCEEDED,
        message: str = "Job has reached the specified backoff limit",
    ) -> Self:
        """Only FailureTarget=True: the Job is failing, its pods are still terminating."""
        self._status().update(failed=1)
        self._add_condition(c.JOB_CONDITION_FAILURE_TARGET, "True", reason, message, at)
        return self

    def condition(
        self, type_: str, reason: str = "", message: str = "", at: datetime = _EPOCH
    ) -> Self:
        """Any condition `type_`=True, as some other Job writer (not the Job controller) sets it."""
        self._add_condition(type_, "True", reason, message, at)
        return self

    def suspended_condition(self, at: datetime = _EPOCH) -> Self:
        """Suspended=True condition (the Job controller sets it on suspended Jobs)."""
        self._add_condition("Suspended", "True", "JobSuspended", "Job suspended", at)
        return self

    # -- output ------------------------------------------------------------------------------

    def obj(self) -> dict[str, Any]:
        """Return a deep copy of the Job manifest."""
        return copy.deepcopy(self._job)

    def view(self) -> ChildJob:
        """Return the core's slim view of the Job."""
        return child_job_from_manifest(self._job)

    # -- helpers -----------------------------------------------------------------------------

    def _pod_meta(self) -> dict[str, Any]:
        template = self._job["spec"].setdefault("template", {})
        meta: dict[str, Any] = template.setdefault("metadata", {})
        return meta

    def _pod_spec(self) -> dict[str, Any]:
        template = self._job["spec"].setdefault("template", {})
        spec: dict[str, Any] = template.setdefault("spec", {})
        return spec

    def _status(self) -> dict[str, Any]:
        status: dict[str, Any] = self._job.setdefault("status", {})
        return status

    def _pods(self, n: int | None) -> int:
        if n is not None:
            return n
        spec = self._job["spec"]
        p, comp = spec.get("parallelism", 1), spec.get("completions")
        return int(min(p, comp) if comp is not None else p)

    def _add_condition(self, type_: str, status: str, reason: str, msg: str, at: datetime) -> None:
        conds = [x for x in self._status().get("conditions", []) if x["type"] != type_]
        stamp = format_time(at)
        conds.append(
            {
                "type": type_,
                "status": status,
                "reason": reason,
                "message": msg,
                "lastProbeTime": stamp,
                "lastTransitionTime": stamp,
            }
        )
        self._status()["conditions"] = conds


def make_job(
    jobset: str,
    namespace: str = "default",
    *,
    rjob: str = "rjob",
    index: int = 0,
    jobset_uid: str = "jobset-uid",
    restart_attempt: int = 0,
    parallelism: int = 1,
) -> JobBuilder:
    """Start a child Job `<jobset>-<rjob>-<index>` owned by the JobSet, named as upstream does."""
    name = child_job_name(jobset, rjob, index)
    job: dict[str, Any] = {
        "apiVersion": c.JOB_API_VERSION,
        "kind": c.JOB_KIND,
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        "spec": {"parallelism": parallelism, "completions": parallelism, "template": {}},
    }
    builder = JobBuilder(job).owner(jobset, jobset_uid)
    builder.label(c.JOBSET_NAME_KEY, jobset).label(c.REPLICATED_JOB_NAME_KEY, rjob)
    builder.label(c.JOB_INDEX_KEY, str(index))
    return builder.restart_attempt(restart_attempt)


def job_from(manifest: dict[str, Any]) -> JobBuilder:
    """Wrap an existing Job manifest (e.g. one a plan created) to change it fluently."""
    return JobBuilder(copy.deepcopy(manifest))
