"""Fault decisions: seeded, bounded, matched by verb and resource."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.sim.apiserver.faults import (
    Fault,
    FaultInjector,
    FaultRule,
    FaultSpecError,
    RequestInfo,
    parse_rule,
)
from jobset_infra.sim.apiserver.server import Sim

CREATE_JOB = RequestInfo("create", "jobs", "ns", "j")
GET_POD = RequestInfo("get", "pods", "ns", "p")
WATCH_JOBS = RequestInfo("watch", "jobs", "ns")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("code", "want_reason"),
    [
        pytest.param(409, "Conflict", id="409 is a Conflict"),
        pytest.param(429, "TooManyRequests", id="429 is TooManyRequests"),
        pytest.param(500, "InternalError", id="500 is an InternalError"),
        pytest.param(503, "ServiceUnavailable", id="503 is ServiceUnavailable"),
        pytest.param(504, "Timeout", id="504 is a Timeout"),
    ],
)
def test_an_error_rule_answers_with_the_status_a_real_server_sends(
    code: int, want_reason: str
) -> None:
    injector = FaultInjector((FaultRule(Fault.ERROR, code=code),))
    error = injector.decide(CREATE_JOB).error
    assert error is not None
    assert (error.code, error.reason, error.status["kind"]) == (code, want_reason, "Status")


def test_a_429_carries_retry_after() -> None:
    injector = FaultInjector((FaultRule(Fault.ERROR, code=429, retry_after=3),))
    error = injector.decide(CREATE_JOB).error
    assert error is not None and error.retry_after == 3
    assert error.status["details"] == {"retryAfterSeconds": 3}


def test_rules_match_only_their_verbs_and_resources() -> None:
    rule = FaultRule(Fault.ERROR, verbs=frozenset({"create"}), resources=frozenset({"jobs"}))
    injector = FaultInjector((rule,))
    assert injector.decide(CREATE_JOB).error is not None
    assert injector.decide(GET_POD).harmless
    assert injector.decide(RequestInfo("create", "pods")).harmless


def test_the_same_seed_gives_the_same_faults_and_another_seed_others() -> None:
    rule = FaultRule(Fault.ERROR, rate=0.3)

    def pattern(seed: int) -> list[bool]:
        injector = FaultInjector((rule,), seed=seed)
        return [injector.decide(CREATE_JOB).error is not None for _ in range(200)]

    assert pattern(7) == pattern(7)
    assert pattern(7) != pattern(8)
    assert 30 < sum(pattern(7)) < 90


def test_max_count_bounds_how_many_faults_a_rule_injects() -> None:
    injector = FaultInjector((FaultRule(Fault.ERROR, max_count=3),))
    outcomes = [injector.decide(CREATE_JOB).error is not None for _ in range(10)]
    assert outcomes == [True] * 3 + [False] * 7
    assert injector.total == 3


def test_a_time_window_limits_when_a_rule_fires() -> None:
    clock = FakeClock()
    injector = FaultInjector((FaultRule(Fault.ERROR, start=1.0, end=2.0),), clock=clock)
    assert injector.decide(CREATE_JOB).harmless
    clock.now += 1.5
    assert injector.decide(CREATE_JOB).error is not None
    clock.now += 1.0
    assert injector.decide(CREATE_JOB).harmless


def test_fixed_latency_delays_every_request_and_spikes_add_to_it() -> None:
    injector = FaultInjector.fixed_latency(0.005)
    assert [injector.decide(GET_POD).delay for _ in range(3)] == [0.005] * 3
    spiky = FaultInjector((
        FaultRule(Fault.LATENCY, delay=0.005),
        FaultRule(Fault.LATENCY, delay=0.5, max_count=1),
    ))
    assert [spiky.decide(GET_POD).delay for _ in range(2)] == [0.505, 0.005]


def test_a_timeout_hangs_then_answers_504() -> None:
    decision = FaultInjector((FaultRule(Fault.TIMEOUT, delay=0.2),)).decide(GET_POD)
    assert decision.delay == 0.2
    assert decision.error is not None and decision.error.code == 504


def test_watch_faults_apply_to_watches_only() -> None:
    injector = FaultInjector((
        FaultRule(Fault.DROP_WATCH, delay=0.3),
        FaultRule(Fault.EXPIRE_WATCH, resources=frozenset({"pods"})),
    ))
    assert injector.decide(GET_POD).harmless
    assert injector.decide(WATCH_JOBS).drop_after == 0.3
    assert injector.decide(RequestInfo("watch", "pods")).expire


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param(
            "error:code=429,rate=0.1,verbs=create+update,resources=jobs,max=5,retry_after=2",
            FaultRule(Fault.ERROR, rate=0.1, code=429, retry_after=2, max_count=5,
                      verbs=frozenset({"create", "update"}), resources=frozenset({"jobs"})),
            id="an error rule with every field",
        ),
        pytest.param("latency:delay=0.005", FaultRule(Fault.LATENCY, delay=0.005),
                     id="a fixed latency"),
        pytest.param("expire-watch:rate=0.5,end=10",
                     FaultRule(Fault.EXPIRE_WATCH, rate=0.5, end=10.0), id="a windowed 410"),
    ],
)
def test_rules_parse_from_the_command_line_form(text: str, want: FaultRule) -> None:
    assert parse_rule(text) == want


@pytest.mark.parametrize(
    ("text", "want_in_message"),
    [
        pytest.param("explode:rate=1", "fault 'explode' is unknown", id="an unknown fault"),
        pytest.param("error:code=418", "code: 418 cannot be injected", id="a code we cannot send"),
        pytest.param("error:rate=2", "rate: 2.0 is not a probability", id="a rate above 1"),
        pytest.param("error:verbs=fly", "'fly' is not a Kubernetes verb", id="an unknown verb"),
        pytest.param("error:colour=red", "'colour' is not a fault field", id="an unknown field"),
        pytest.param("latency:delay=soon", "delay: 'soon' is not a number", id="not a number"),
        pytest.param("error:rate", "must be written key=value", id="a field without a value"),
    ],
)
def test_bad_rules_are_refused_with_the_field_named(text: str, want_in_message: str) -> None:
    with pytest.raises(FaultSpecError) as caught:
        parse_rule(text)
    assert want_in_message in str(caught.value)


@given(
    rate=st.floats(0.0, 1.0), cap=st.integers(0, 20), seed=st.integers(0, 2**32),
    requests=st.integers(0, 100),
)
def test_a_rule_never_injects_more_than_its_cap(
    rate: float, cap: int, seed: int, requests: int
) -> None:
    injector = FaultInjector((FaultRule(Fault.ERROR, rate=rate, max_count=cap),), seed=seed)
    failed = sum(injector.decide(CREATE_JOB).error is not None for _ in range(requests))
    assert failed <= cap and failed == injector.total
    if rate == 1.0:
        assert failed == min(cap, requests)


# --- Over HTTP, against a running Sim --------------------------------------------------------

JOBS_URL = "/apis/batch/v1/namespaces/default/jobs"
JOB = {
    "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
    "spec": {"template": {"spec": {"restartPolicy": "Never",
                                   "containers": [{"name": "c", "image": "busybox"}]}}},
}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def test_an_injected_429_reaches_the_client_with_retry_after_then_stops(
    session: aiohttp.ClientSession,
) -> None:
    rule = FaultRule(Fault.ERROR, code=429, retry_after=2, verbs=frozenset({"create"}),
                     resources=frozenset({"jobs"}), max_count=1)
    async with Sim() as sim:
        sim.add_hook(FaultInjector((rule,)))
        async with session.post(sim.url + JOBS_URL, json=JOB) as first:
            assert first.status == 429 and first.headers["Retry-After"] == "2"
            assert (await first.json())["reason"] == "TooManyRequests"
        async with session.get(sim.url + JOBS_URL) as listed:
            assert listed.status == 200
        async with session.post(sim.url + JOBS_URL, json=JOB) as second:
            assert second.status == 201


async def test_fixed_latency_slows_every_request_by_that_much(
    session: aiohttp.ClientSession,
) -> None:
    async with Sim() as sim:
        sim.add_hook(FaultInjector.fixed_latency(0.02))
        started = time.monotonic()
        for _ in range(5):
            async with session.get(sim.url + JOBS_URL) as resp:
                assert resp.status == 200
        assert time.monotonic() - started >= 5 * 0.02


async def _watch_events(session: aiohttp.ClientSession, url: str) -> list[dict[str, object]]:
    events = []
    async with session.get(url + JOBS_URL, params={"watch": "true"}) as resp:
        async for line in resp.content:
            if line.strip():
                events.append(json.loads(line))
    return events


async def test_a_forced_410_ends_the_watch_with_an_expired_error_event(
    session: aiohttp.ClientSession,
) -> None:
    async with Sim() as sim:
        sim.add_hook(FaultInjector((FaultRule(Fault.EXPIRE_WATCH, max_count=1),)))
        events = await asyncio.wait_for(_watch_events(session, sim.url), 5)
        assert [e["type"] for e in events] == ["ERROR"]
        status = events[0]["object"]
        assert isinstance(status, dict) and (status["code"], status["reason"]) == (410, "Expired")


async def test_a_dropped_watch_is_closed_by_the_server_after_the_delay(
    session: aiohttp.ClientSession,
) -> None:
    async with Sim() as sim:
        sim.add_hook(FaultInjector((FaultRule(Fault.DROP_WATCH, delay=0.1),)))
        started = time.monotonic()
        events = await asyncio.wait_for(_watch_events(session, sim.url), 5)
        assert events == [] and 0.1 <= time.monotonic() - started < 2
