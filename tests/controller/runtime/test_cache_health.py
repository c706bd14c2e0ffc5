"""What the probes and the leader decide from the caches' states (cache_health.py)."""

from __future__ import annotations

import dataclasses

import pytest

from jobset_infra.controller.runtime.cache_health import (
    API_NOT_SERVED,
    CacheState,
    liveness,
    may_lead,
    must_give_up,
    readiness,
    settled,
)

JOBSETS = CacheState("jobsets", required=True, listed=True)
JOBS = CacheState("jobs", required=True, listed=True)
NODES = CacheState("nodes", required=False, listed=True)
FORBIDDEN = dict(failing_since=10.0, error="list: 403 Forbidden: no", forbidden=True)


def with_(state: CacheState, **change: object) -> CacheState:
    return dataclasses.replace(state, **change)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("caches", "ready", "live"),
    [
        pytest.param([JOBSETS, JOBS, NODES], True, True, id="all in sync: ready and alive"),
        pytest.param([JOBSETS, with_(JOBS, listed=False)], False, True,
                     id="a required cache still listing: not ready, alive"),
        pytest.param([with_(JOBSETS, **FORBIDDEN), JOBS], False, True,
                     id="a required cache refused: not ready, but alive (a restart fixes no RBAC)"),
        pytest.param([JOBSETS, with_(JOBS, failing_since=3.0, error="watch: 0 TransportError")],
                     False, True, id="a required watch failing: not ready until it works again"),
        pytest.param([JOBSETS, JOBS, with_(NODES, **FORBIDDEN)], True, True,
                     id="an optional cache refused: ready (its feature degrades)"),
        pytest.param([JOBSETS, with_(JOBS, running=False)], False, False,
                     id="a cache whose task ended: neither ready nor alive"),
        pytest.param([JOBSETS, JOBS, with_(NODES, running=False)], True, False,
                     id="an optional cache whose task ended: not alive (a bug, restart us)"),
    ],
)
def test_probes(caches: list[CacheState], ready: bool, live: bool) -> None:
    assert readiness(caches).ok is ready
    assert liveness(caches).ok is live


def test_a_failing_probe_says_which_cache_and_why() -> None:
    verdict = readiness([with_(JOBSETS, **FORBIDDEN), JOBS])
    assert verdict.text() == "jobsets: out of sync (list: 403 Forbidden: no)"
    assert readiness([with_(JOBS, listed=False)]).text() == "jobs: not listed yet"


def test_not_ready_until_the_api_server_takes_a_jobset_create() -> None:
    assert readiness([JOBSETS, JOBS], api_served=False).reasons == (API_NOT_SERVED,)
    assert readiness([JOBSETS, JOBS], api_served=True).ok


def test_a_broken_leadership_loop_is_not_alive() -> None:
    verdict = liveness([JOBSETS], leadership_running=False)
    assert not verdict.ok and "leadership" in verdict.text()


@pytest.mark.parametrize(
    ("caches", "now", "expected"),
    [
        pytest.param([JOBSETS, JOBS], 100.0, (), id="in sync: keep leading"),
        pytest.param([with_(JOBS, failing_since=95.0, error="watch: x")], 100.0, (),
                     id="out of sync for less than the grace: keep leading"),
        pytest.param([with_(JOBS, failing_since=90.0, error="watch: x")], 100.0,
                     ("jobs: out of sync (watch: x)",),
                     id="out of sync for the grace: give the Lease up"),
        pytest.param([with_(NODES, failing_since=0.0, error="x")], 100.0, (),
                     id="an optional cache out of sync: keep leading"),
    ],
)
def test_when_a_leader_gives_up(caches: list[CacheState], now: float,
                                expected: tuple[str, ...]) -> None:
    assert must_give_up(caches, now, grace=10.0) == expected


def test_only_a_replica_in_sync_runs_for_the_lease() -> None:
    assert may_lead([JOBSETS, JOBS, with_(NODES, **FORBIDDEN)])
    assert not may_lead([JOBSETS, with_(JOBS, failing_since=1.0)])
    assert not may_lead([with_(JOBSETS, listed=False)])


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        pytest.param(with_(JOBS, listed=False), False, id="a required cache not listed: wait"),
        pytest.param(with_(JOBS, listed=False, **FORBIDDEN), False,
                     id="a required cache refused: wait (and time out naming it)"),
        pytest.param(with_(NODES, listed=False, **FORBIDDEN), True,
                     id="an optional cache refused: go on without it"),
        pytest.param(with_(NODES, listed=False, failing_since=1.0, error="500"), False,
                     id="an optional cache failing otherwise: wait"),
        pytest.param(NODES, True, id="listed: go on"),
    ],
)
def test_start_up_waits_for(state: CacheState, expected: bool) -> None:
    assert settled(state) is expected
