"""A no-op reconcile is one linear pass over the Jobs (CPU time, so a busy machine is fine)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.types import ChildJob, CreateJob
from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import make_jobset

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _steady(n: int) -> tuple[dict[str, object], list[ChildJob]]:
    js = make_jobset("js", "ns").uid("u").replicated_job("w", replicas=n).success_policy().obj()
    js["metadata"]["resourceVersion"] = "1"
    jobs: list[ChildJob] = []
    while creates := reconcile(observe(js, jobs), NOW).of_type(CreateJob):  # passes of <= 500
        for action in creates:
            action.manifest["metadata"]["uid"] = f"u{len(jobs)}"
            jobs.append(job_from(action.manifest).ready().view())
    update = reconcile(observe(js, jobs), NOW).status_update
    assert update is not None
    return {**js, "status": update.status}, jobs


def _cpu_seconds(js: dict[str, object], jobs: list[ChildJob]) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        plan = reconcile(observe(js, jobs), NOW)
        best = min(best, time.process_time() - start)
        assert plan.is_empty
    return best


def test_noop_reconcile_grows_linearly_with_jobs() -> None:
    small, large = _steady(500), _steady(4000)
    ratio = _cpu_seconds(*large) / max(_cpu_seconds(*small), 1e-4)
    assert ratio < 24, f"8x the Jobs cost {ratio:.1f}x the CPU time (quadratic would be ~64x)"
