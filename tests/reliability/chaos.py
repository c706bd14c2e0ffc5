"""One fault-suite run: the sim (API server, fake Job controller, scheduler, 4 TPU pools and a CPU
pool), the workload of `scenario`, two controller replicas with Lease election, seeded API faults
and a killer that crashes a replica at random moments and starts a fresh one.

    outcome = await run(Chaos(seed=1, rates=MODERATE, kills=4))
    outcome.terminal     # {"ok": ("Completed", 0), ...}
    outcome.violations   # invariant violations seen on any committed write

Everything listens on 127.0.0.1 only; every fault rule and the killer are capped, and `run` gives
up after `deadline` seconds, so a run is bounded in time and count.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.controller.runtime.manager import RunningController, start_controller
from jobset_infra.sim.apiserver.faults import Fault, FaultInjector, FaultRule
from jobset_infra.sim.apiserver.hooks import ApiRequest, InterceptLike
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.server import Sim
from jobset_infra.sim.cluster.job_controller import JobController
from jobset_infra.sim.cluster.nodes import create_nodes
from jobset_infra.sim.cluster.scheduler import Scheduler
from jobset_infra.tpu.node_pools import parse_nodes
from tests.reliability.invariants import Invariants
from tests.reliability.scenario import FATES, JOBSETS, NODES, NS, Driver, terminal_state, workload

CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
CRD_FILE = Path(__file__).parents[2] / "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"
WRITES = frozenset({"create", "update", "patch", "delete", "deletecollection"})
LEASE = "jobset-chaos"


@dataclass(frozen=True)
class Rates:
    """Probability per request of each fault (every verb and resource unless said)."""

    conflict: float = 0.0  # 409 on update/patch (a stale resourceVersion, as etcd would)
    throttle: float = 0.0  # 429 with Retry-After: 1
    server_error: float = 0.0  # 500
    timeout: float = 0.0  # hang 0.3 s, then 504
    latency_spike: float = 0.0  # +0.25 s
    drop_watch: float = 0.0  # watch closed by the server after 0.5 s
    expire_watch: float = 0.0  # watch answered with 410 Gone (forces a relist)

    def rules(self, cap: int) -> tuple[FaultRule, ...]:
        writes = frozenset({"update", "patch"})
        return tuple(
            rule
            for rule in (
                FaultRule(Fault.ERROR, code=409, rate=self.conflict, verbs=writes, max_count=cap),
                FaultRule(Fault.ERROR, code=429, retry_after=1, rate=self.throttle, max_count=cap),
                FaultRule(Fault.ERROR, code=500, rate=self.server_error, max_count=cap),
                FaultRule(Fault.TIMEOUT, delay=0.3, rate=self.timeout, max_count=cap),
                FaultRule(Fault.LATENCY, delay=0.25, rate=self.latency_spike, max_count=cap),
                FaultRule(Fault.DROP_WATCH, delay=0.5, rate=self.drop_watch, max_count=cap),
                FaultRule(Fault.EXPIRE_WATCH, rate=self.expire_watch, max_count=cap),
            )
            if rule.rate > 0
        )


NONE = Rates()
MODERATE = Rates(
    conflict=0.05,
    throttle=0.02,
    server_error=0.05,
    timeout=0.01,
    latency_spike=0.03,
    drop_watch=0.2,
    expire_watch=0.1,
)
HEAVY = Rates(
    conflict=0.15,
    throttle=0.05,
    server_error=0.15,
    timeout=0.03,
    latency_spike=0.1,
    drop_watch=0.5,
    expire_watch=0.3,
)


@dataclass(frozen=True)
class Chaos:
    seed: int = 0
    rates: Rates = NONE
    kills: int = 0  # replicas crashed during the run (each replaced by a fresh one)
    kill_gap: tuple[float, float] = (0.4, 1.5)  # seconds between kills
    cap: int = 400  # at most this many faults per rule
    deadline: float = 60.0


@dataclass
class Outcome:
    terminal: dict[str, tuple[str, int]]
    violations: list[str]
    writes: Counter[str]  # controller write requests by resource (faulted ones included)
    injected: int
    kills: int
    lease_losses: int  # replicas that lost the Lease under faults and were restarted
    seconds: float
    quiet_writes: Counter[str]  # non-Lease writes in the quiet second after everything finished
    requests: set[tuple[str, str, str, str | None]] = field(default_factory=set)
    finished_at: dict[str, float] = field(default_factory=dict)  # seconds after the start

    @property
    def workload_writes(self) -> int:
        return sum(n for resource, n in self.writes.items() if resource != "leases")


class Recorder:
    """The first request hook: records every request the controller sends (faulted or not)
    and counts its writes; a dry run stores nothing, so it is no write (a replica replacing
    one that lost the Lease probes that the JobSet kind is served with a dry-run create)."""

    def __init__(self) -> None:
        self.writes: Counter[str] = Counter()
        self.requests: set[tuple[str, str, str, str | None]] = set()

    def __call__(self, request: ApiRequest) -> InterceptLike | None:
        self.requests.add((request.group, request.resource, request.verb, request.subresource))
        if request.verb in WRITES and not request.dry_run:
            self.writes[request.resource] += 1
        return None


def plain_config(**sections: Any) -> ControllerConfig:
    """A controller with no probe or metrics listener, 2 workers, quiet logs; `sections`
    add to (or replace) those top-level sections."""
    return ControllerConfig.model_validate(
        {
            "health": {"healthProbeBindAddress": "0"},
            "metrics": {"bindAddress": "0"},
            "controller": {"workers": 2},
            "logging": {"level": "error"},
            **sections,
        }
    )


def controller_config() -> ControllerConfig:
    """`plain_config` electing a leader on `LEASE` with short timings (failover in ~1 s)."""
    return plain_config(leaderElection={
        "leaderElect": True,
        "resourceName": LEASE,
        "resourceNamespace": NS,
        "leaseDuration": "1s",
        "renewDeadline": "800ms",
        "retryPeriod": "200ms",
    })


async def started_sim(sim: Sim | None = None, *, tpu_nodes: str | None = None) -> Sim:
    """Start `sim` (a bare new one by default) serving the JobSet CRD, with the Nodes of
    `tpu_nodes` (a `parse_nodes` spec) when given."""
    sim = sim or Sim(port=0)
    await sim.start()
    sim.store.create(CRDS, yaml.safe_load(CRD_FILE.read_text()))
    if tpu_nodes is not None:
        await create_nodes(sim.store, parse_nodes(tpu_nodes), datetime.now(UTC))
    return sim


class Replicas:
    """Two controller replicas, kept at two like a Deployment: `kill()` crashes one (no Lease
    release) and starts a new one; a replica whose Lease was lost exits (as `main` does) and
    `supervise()` restarts it, as the kubelet would."""

    def __init__(self, url: str, seed: int) -> None:
        self.url, self.config = url, controller_config()
        self.running: list[RunningController] = []
        self._random = random.Random(seed)
        self._lock = asyncio.Lock()
        self._n = 0
        self.killed = 0
        self.lease_losses = 0

    async def start(self, count: int = 2) -> None:
        async with self._lock:
            for _ in range(count):
                await self._start_one()

    async def _start_one(self) -> None:
        self._n += 1
        for _ in range(20):  # the API server is faulty: its first lists may fail for a while
            try:
                ctl = await start_controller(self.config, url=self.url, identity=f"r{self._n}")
            except Exception:  # a failed start is retried, like a restarted pod
                await asyncio.sleep(0.2)
                continue
            self.running.append(ctl)
            return
        raise AssertionError("a controller replica did not start in 20 attempts")

    async def _replace(self, victim: RunningController, *, crash: bool) -> None:
        self.running.remove(victim)
        if crash:
            victim.kill()  # no graceful release: the successor waits out the Lease
        await victim.stop(release=False)
        await self._start_one()

    async def kill(self) -> None:
        async with self._lock:
            leaders = [r for r in self.running if r.is_leader]
            victim = leaders[0] if leaders and self._random.random() < 0.75 else None
            await self._replace(victim or self._random.choice(self.running), crash=True)
            self.killed += 1

    async def supervise(self) -> None:
        while True:
            await asyncio.sleep(0.05)
            async with self._lock:
                for ctl in [c for c in self.running if c.lost.is_set()]:
                    self.lease_losses += 1
                    await self._replace(ctl, crash=False)

    async def flush_events(self, timeout: float = 10.0) -> None:
        """Wait until every replica sent (or gave up on) the events it queued."""
        async with self._lock:
            for ctl in self.running:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ctl.recorder.flush(), timeout)

    async def idle(self, timeout: float = 15.0) -> None:
        """Wait (bounded) until a leader holds the Lease and has nothing queued, delayed or in
        progress: a write retried after a fault's backoff, or a new leader's first pass after
        the last crash, is still work; the quiet window starts once the controller has none.
        A hot loop never gets here and shows up in the quiet window all the same."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            leaders = [c for c in self.running if c.is_leader]
            if leaders and all(_drained(c) for c in leaders):
                return
            await asyncio.sleep(0.05)

    async def stop(self) -> None:
        async with self._lock:
            for ctl in self.running:
                await ctl.stop()
            self.running.clear()


def _drained(ctl: RunningController) -> bool:
    queue = ctl.controller.queue
    return len(queue) == 0 and not queue.processing and queue.pending_delayed() == 0


async def _killer(replicas: Replicas, chaos: Chaos) -> None:
    pace = random.Random(chaos.seed + 1)
    for _ in range(chaos.kills):
        await asyncio.sleep(pace.uniform(*chaos.kill_gap))
        await replicas.kill()


async def _start_sim() -> tuple[Sim, JobController]:
    sim = Sim(port=0)
    jobs = JobController(sim.store, wait_for_binding=True)
    sim.add_component(jobs)
    sim.add_component(Scheduler(sim.store))
    return await started_sim(sim, tpu_nodes=NODES), jobs


def _terminal(sim: Sim) -> dict[str, tuple[str, int]]:
    out = {}
    for js in sim.store.iter_objects(JOBSETS, NS):
        state = terminal_state(js)
        if state is not None:
            out[js["metadata"]["name"]] = state
    return out


async def run(chaos: Chaos) -> Outcome:
    """Run the workload under `chaos` until every JobSet finished (or the deadline passed)."""
    started = time.monotonic()
    sim, jobs = await _start_sim()
    recorder, invariants = Recorder(), Invariants()
    faults = FaultInjector(rules=chaos.rates.rules(chaos.cap), seed=chaos.seed)
    sim.add_hook(recorder)
    sim.add_hook(faults)
    sim.store.observers.append(invariants.observe)
    replicas = Replicas(sim.url, chaos.seed)
    killer: asyncio.Task[None] | None = None
    supervisor: asyncio.Task[None] | None = None
    try:
        await replicas.start()
        supervisor = asyncio.create_task(replicas.supervise())
        for js in workload():
            sim.store.create(JOBSETS, js, NS)
        killer = asyncio.create_task(_killer(replicas, chaos))
        finished_at: dict[str, float] = {}
        async with Driver(sim.store, jobs, chaos.seed):
            while len(finished_at) < len(FATES):
                for name in _terminal(sim):
                    finished_at.setdefault(name, round(time.monotonic() - started, 1))
                if time.monotonic() - started > chaos.deadline:
                    break
                await asyncio.sleep(0.05)
            # Every crash happens, also after the work is done: a new leader must then find
            # nothing to do (the quiet second below checks it writes nothing).
            remaining = max(0.0, chaos.deadline - (time.monotonic() - started))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(killer), remaining)
            killer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await killer
            await replicas.flush_events()  # events go out asynchronously, retried on faults
            await replicas.idle()
            quiet = await _quiet_writes(recorder)
        terminal = _terminal(sim)
        violations = invariants.violations + invariants.attempt_gaps(
            {name: state[1] for name, state in terminal.items()}
        )
        return Outcome(
            terminal=terminal,
            violations=violations,
            writes=recorder.writes,
            injected=faults.total,
            kills=replicas.killed,
            lease_losses=replicas.lease_losses,
            seconds=time.monotonic() - started,
            quiet_writes=quiet,
            requests=recorder.requests,
            finished_at=finished_at,
        )
    finally:
        for task in (killer, supervisor):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await replicas.stop()
        await sim.stop()


async def _quiet_writes(recorder: Recorder, seconds: float = 1.0) -> Counter[str]:
    """Writes other than Lease renewals in `seconds` after everything finished and every queued
    event went out: a controller with nothing to do must not write (no hot loop)."""
    await asyncio.sleep(0.5)  # the last status write's events and metrics
    before = Counter(recorder.writes)
    await asyncio.sleep(seconds)
    after = Counter(recorder.writes)
    after.pop("leases", None)
    before.pop("leases", None)
    return after - before


def fault_free_terminal() -> dict[str, tuple[str, int]]:
    """What the fates say every JobSet ends as (checked against a fault-free run too)."""
    return {name: (fate.want, fate.want_restarts) for name, fate in FATES.items()}


def describe(outcome: Outcome) -> dict[str, Any]:
    return {
        "seconds": round(outcome.seconds, 1),
        "injected": outcome.injected,
        "kills": outcome.kills,
        "lease_losses": outcome.lease_losses,
        "workload_writes": outcome.workload_writes,
        "lease_writes": outcome.writes.get("leases", 0),
        "quiet_writes": dict(outcome.quiet_writes),
    }
