"""The workload mix the fault suite runs, and the "cluster" that decides how each Job ends.

Every JobSet's fate is a pure function of (JobSet, restart attempt, job index), never of timing,
so a run with faults must end exactly like a run without them:

- `ok`      two CPU Jobs that succeed                                  -> Completed, 0 restarts
- `flaky`   Job 0 fails in attempts 0 and 1, maxRestarts 3               -> Completed, 2 restarts
- `doomed`  Job 0 always fails, maxRestarts 1                            -> Failed, 1 restart
- `paused`  created suspended; resumed (as Kueue would) once suspended   -> Completed, 0 restarts
- `tpu-a`   exclusive, 2 slices, Job 1 fails in attempt 0                -> Completed, 1 restart
- `tpu-b`, `tpu-c` exclusive, 2 slices each: with `tpu-a` they want 6 of the 4 pools, so they
  queue for placement and must never share a pool                       -> Completed, 0 restarts

`Driver` plays the Job controller's outcomes: it succeeds or fails a Job through the sim's fake
Job controller (straight into the store, so the injected API faults never touch it) once the Job
has been running for a seeded while, so exclusive pools are held long enough to be contended.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.cluster.job_controller import JobController
from jobset_infra.testing.jobsets import make_jobset

JOBSETS = GVR(c.GROUP, c.VERSION, c.PLURAL)
JOBS = GVR("batch", "v1", "jobs")
NS = "default"
POOL_KEY = "cloud.google.com/gke-nodepool"
NODES = "v5e-2x4:4,cpu:2"
TPU = "google.com/tpu"


@dataclass(frozen=True)
class Fate:
    """How a JobSet's Jobs end: `fails(attempt, index)` says which Job fails in which attempt."""

    fails: Callable[[int, int], bool]
    want: str  # terminal condition type
    want_restarts: int


FATES: dict[str, Fate] = {
    "ok": Fate(lambda a, i: False, c.CONDITION_COMPLETED, 0),
    "flaky": Fate(lambda a, i: i == 0 and a < 2, c.CONDITION_COMPLETED, 2),
    "doomed": Fate(lambda a, i: i == 0, c.CONDITION_FAILED, 1),
    "paused": Fate(lambda a, i: False, c.CONDITION_COMPLETED, 0),
    "tpu-a": Fate(lambda a, i: i == 1 and a == 0, c.CONDITION_COMPLETED, 1),
    "tpu-b": Fate(lambda a, i: False, c.CONDITION_COMPLETED, 0),
    "tpu-c": Fate(lambda a, i: False, c.CONDITION_COMPLETED, 0),
}
EXCLUSIVE = ("tpu-a", "tpu-b", "tpu-c")


def cpu_jobset(name: str, max_restarts: int) -> dict[str, Any]:
    builder = (
        make_jobset(name, NS)
        .replicated_job("w", replicas=2, parallelism=1)
        .pod_spec("w", restartPolicy="Never")
        .job_spec("w", backoffLimit=0)
        .failure_policy(max_restarts=max_restarts)
    )
    return builder.obj()


def tpu_jobset(name: str, max_restarts: int) -> dict[str, Any]:
    builder = (
        make_jobset(name, NS)
        .exclusive(POOL_KEY)
        .replicated_job("slice", replicas=2, parallelism=2)
        .pod_spec(
            "slice",
            restartPolicy="Never",
            containers=[{"name": "jax", "image": "jax:tpu", "resources": {"limits": {TPU: "4"}}}],
            nodeSelector={
                "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
                "cloud.google.com/gke-tpu-topology": "2x4",
            },
            tolerations=[{"key": TPU, "operator": "Exists", "effect": "NoSchedule"}],
        )
        .job_spec("slice", backoffLimit=0)
        .failure_policy(max_restarts=max_restarts)
    )
    return builder.obj()


def workload() -> list[dict[str, Any]]:
    """The JobSets of one run, in creation order."""
    paused = cpu_jobset("paused", 1)
    paused["spec"]["suspend"] = True
    return [
        cpu_jobset("ok", 1),
        cpu_jobset("flaky", 3),
        cpu_jobset("doomed", 1),
        paused,
        tpu_jobset("tpu-a", 2),
        tpu_jobset("tpu-b", 1),
        tpu_jobset("tpu-c", 1),
    ]


def terminal_state(jobset: dict[str, Any]) -> tuple[str, int] | None:
    """(Completed|Failed, restarts) once the JobSet has finished, else None."""
    status = jobset.get("status") or {}
    for cond in status.get("conditions") or ():
        if cond["type"] in (c.CONDITION_COMPLETED, c.CONDITION_FAILED) and cond["status"] == "True":
            return cond["type"], int(status.get("restarts", 0))
    return None


def finished(job: dict[str, Any]) -> bool:
    return any(
        cond["type"] in ("Complete", "Failed") and cond["status"] == "True"
        for cond in (job.get("status") or {}).get("conditions") or ()
    )


def attempt_of(job: dict[str, Any]) -> int:
    return int(job["metadata"]["labels"][c.RESTARTS_KEY])


class Driver:
    """Ends running Jobs as their JobSet's fate says, after a seeded 0.1-0.4 s of running; and
    resumes `paused` once the controller has suspended it (what Kueue does on admission)."""

    def __init__(self, store: Store, jobs: JobController, seed: int) -> None:
        self.store, self.jobs = store, jobs
        self._random = random.Random(seed)
        self._running_since: dict[str, float] = {}
        self._hold: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        self.resumed = False

    async def __aenter__(self) -> Driver:
        self._task = asyncio.create_task(self._loop())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self._resume_paused()
            for job in list(self.store.iter_objects(JOBS, NS)):
                await self._maybe_end(job, loop.time())
            await asyncio.sleep(0.02)

    def _resume_paused(self) -> None:
        if self.resumed:
            return
        paused = self.store.try_get(JOBSETS, "paused", NS)
        conds = ((paused or {}).get("status") or {}).get("conditions") or ()
        if any(x["type"] == c.CONDITION_SUSPENDED and x["status"] == "True" for x in conds):
            assert paused is not None
            self.store.update(JOBSETS, {**paused, "spec": {**paused["spec"], "suspend": False}})
            self.resumed = True

    async def _maybe_end(self, job: dict[str, Any], now: float) -> None:
        meta = job["metadata"]
        key = f"{meta['name']}@{meta['uid']}"
        if meta.get("deletionTimestamp") or job["spec"].get("suspend") or finished(job):
            return
        parallelism = job["spec"].get("parallelism", 1)
        if (job.get("status") or {}).get("ready", 0) < parallelism:
            return
        started = self._running_since.setdefault(key, now)
        hold = self._hold.setdefault(key, self._random.uniform(0.1, 0.4))
        if now - started < hold:
            return
        labels = meta["labels"]
        fate = FATES[labels[c.JOBSET_NAME_KEY]]
        index = int(labels[c.JOB_INDEX_KEY])
        attempt = attempt_of(job)
        with contextlib.suppress(StatusError):  # deleted by a restart meanwhile
            if fate.fails(attempt, index):
                await self.jobs.fail_job(NS, meta["name"])
            elif not any(fate.fails(attempt, i) for i in range(8)):
                await self.jobs.succeed_job(NS, meta["name"])
        # In a failing attempt the other Jobs keep running until the restart deletes them.
