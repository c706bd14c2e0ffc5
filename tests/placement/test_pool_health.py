"""Slice health: a domain's failures keep it out for a decaying cool-down (pool_health.py)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.resilience import Cause
from jobset_infra.placement.pool_health import (
    DomainFailure,
    HealthPolicy,
    kept_out,
    ledger_from_text,
    ledger_text,
    recorded,
    score,
)

T0 = datetime(2026, 12, 2, 7, 0, 0, tzinfo=UTC)
KEY = "cloud.google.com/gke-nodepool"
POLICY = HealthPolicy()  # half-life 10 minutes, threshold 0.5


def failure(domain: str, cause: Cause, minutes: float = 0.0, uid: str = "") -> DomainFailure:
    at = T0 + timedelta(minutes=minutes)
    return DomainFailure(KEY, domain, cause, at, f"ns/{domain}-job", uid or f"{domain}@{minutes}")


@pytest.mark.parametrize(
    ("ledger", "minutes_later", "kept", "for_minutes"),
    [
        pytest.param([failure("p0", Cause.NODE_NOT_READY)], 0, True, 10.0,
                     id="one NotReady node keeps its pool out, its cool-down one half-life"),
        pytest.param([failure("p0", Cause.NODE_NOT_READY)], 9.9, True, None,
                     id="it is still out just before the half-life ends"),
        pytest.param([failure("p0", Cause.NODE_NOT_READY)], 10.1, False, None,
                     id="and back once the half-life has passed"),
        pytest.param([failure("p0", Cause.NODE_NOT_READY, uid="a"),
                      failure("p0", Cause.TPU_DEVICE_ERROR, uid="b")], 0, True, 20.0,
                     id="two infrastructure failures at once keep it out for two half-lives"),
        pytest.param([failure("p0", Cause.SIGNAL)], 0, False, None,
                     id="one process killed by a signal does not keep its pool out"),
        pytest.param([failure("p0", Cause.SIGNAL, uid="a"), failure("p0", Cause.SIGNAL, uid="b")],
                     0, True, 10.0, id="a pool whose slice is killed twice is kept out"),
        pytest.param([failure("p0", Cause.USER_EXIT, uid=str(i)) for i in range(20)], 0, False,
                     None, id="the program's own exits never count against the pool"),
        pytest.param([failure("p0", Cause.PREEMPTED)], 0, False, None,
                     id="a preemption says nothing about the pool's health"),
    ],
)
def test_a_domain_is_kept_out_while_its_decayed_score_reaches_the_threshold(
    ledger: list[DomainFailure], minutes_later: float, kept: bool, for_minutes: float | None
) -> None:
    now = T0 + timedelta(minutes=minutes_later)
    found = kept_out(ledger, now, POLICY)
    assert ((KEY, "p0") in found) is kept
    if for_minutes is not None:
        until = found[(KEY, "p0")].until
        assert abs((until - now).total_seconds() - 60 * for_minutes) < 1e-3


def test_the_description_names_the_causes_the_last_failure_and_the_end() -> None:
    ledger = [failure("p3", Cause.NODE_NOT_READY, 0, "a"),
              failure("p3", Cause.NODE_NOT_READY, 1, "b"),
              failure("p3", Cause.USER_EXIT, 2, "c")]
    [found] = kept_out(ledger, T0 + timedelta(minutes=2), POLICY).values()
    assert found.describe().startswith("p3 (2 x node_not_ready, the last at 07:01:00Z; until 07:")


def test_disabled_health_keeps_nothing_out() -> None:
    ledger = [failure("p0", Cause.NODE_DELETED)]
    assert kept_out(ledger, T0, HealthPolicy(enabled=False)) == {}


def test_a_failure_is_recorded_once_per_job_and_domain() -> None:
    one = failure("p0", Cause.NODE_NOT_READY, uid="job-1")
    ledger = recorded((), [one], T0, POLICY)
    assert recorded(ledger, [one], T0, POLICY) == ledger == (one,)


def test_the_ledger_forgets_failures_that_no_longer_count_and_keeps_the_newest() -> None:
    old = failure("p0", Cause.NODE_NOT_READY, -71, "old")  # 7.1 half-lives: below 1/128
    user = failure("p1", Cause.USER_EXIT, 0, "user")  # weight 0: never counts
    many = [failure("p2", Cause.NODE_NOT_READY, i / 60, str(i)) for i in range(20)]
    ledger = recorded((), [old, user, *many], T0, POLICY)
    assert old not in ledger and user not in ledger
    assert [f.job_uid for f in ledger] == [str(i) for i in range(4, 20)]  # the newest 16


def test_the_stored_form_reads_back_and_skips_what_does_not_parse() -> None:
    ledger = (failure("p0", Cause.TPU_DEVICE_ERROR, 1.5, "u1"),
              failure("p1", Cause.SIGNAL, 2, "u2"))
    assert ledger_from_text(ledger_text(ledger)) == ledger
    text = ledger_text(ledger).replace('"tpu_device_error"', '"gremlins"')
    assert ledger_from_text(text) == ledger[1:]
    for garbage in ("", "[", "[1, 2]", '{"failures": {"a": 1}}', '{"failures": [7, null]}'):
        assert ledger_from_text(garbage) == ()


# --------------------------------------------------------------------------- properties

_CAUSES = st.sampled_from(list(Cause))
_FAILURES = st.lists(
    st.builds(
        failure,
        domain=st.sampled_from(["p0", "p1", "p2"]),
        cause=_CAUSES,
        minutes=st.floats(min_value=-120, max_value=0, allow_nan=False),
        uid=st.uuids().map(str),
    ),
    max_size=25,
)
_MINUTES = st.floats(min_value=0, max_value=120, allow_nan=False)


@given(_FAILURES, _FAILURES, _MINUTES)
def test_more_failures_never_shorten_a_cool_down(
    ledger: list[DomainFailure], more: list[DomainFailure], minutes: float
) -> None:
    now = T0 + timedelta(minutes=minutes)
    before = kept_out(ledger, now, POLICY)
    after = kept_out([*ledger, *more], now, POLICY)
    for domain, out in before.items():
        assert domain in after and after[domain].until >= out.until - timedelta(microseconds=1)


@given(_FAILURES, _MINUTES)
def test_a_domain_comes_back_exactly_when_its_cool_down_ends(
    ledger: list[DomainFailure], minutes: float
) -> None:
    now = T0 + timedelta(minutes=minutes)
    for domain, out in kept_out(ledger, now, POLICY).items():
        assert domain in kept_out(ledger, out.until - timedelta(seconds=1), POLICY)
        assert domain not in kept_out(ledger, out.until + timedelta(seconds=1), POLICY)


@given(_FAILURES, _MINUTES)
def test_a_domain_without_infrastructure_failures_or_signals_is_never_kept_out(
    ledger: list[DomainFailure], minutes: float
) -> None:
    now = T0 + timedelta(minutes=minutes)
    counting = {(f.topology_key, f.domain) for f in ledger if f.weight > 0}
    assert set(kept_out(ledger, now, POLICY)) <= counting


@given(_FAILURES, _MINUTES)
def test_forgetting_changes_no_score_by_more_than_what_was_forgotten(
    ledger: list[DomainFailure], minutes: float
) -> None:
    now = T0 + timedelta(minutes=minutes)
    kept = recorded((), ledger, now, POLICY)
    assert recorded(kept, [], now, POLICY) == kept  # idempotent
    for domain in ("p0", "p1", "p2"):
        full = score([f for f in ledger if f.domain == domain], now, POLICY)
        pruned = score([f for f in kept if f.domain == domain], now, POLICY)
        # each failure forgotten for its age weighs below 1/64 of the threshold; those beyond
        # the newest max_per_domain weigh at most 1 each
        floor = POLICY.threshold / 64
        assert pruned <= full + 1e-9
        if len(ledger) <= POLICY.max_per_domain:
            assert math.isclose(pruned, full, abs_tol=len(ledger) * floor + 1e-9)
