"""Expectations: unobserved creates/deletes block decisions until seen or expired."""

from __future__ import annotations

from jobset_infra.controller.runtime.expectations import Expectations


def test_creates_are_satisfied_once_every_name_is_observed() -> None:
    exp = Expectations(timeout=300)
    exp.expect("ns/js", now=0, creates={"js-a-0": None, "js-a-1": "pool-1"})
    assert not exp.satisfied("ns/js", now=1)
    assert sorted(n for _, n, _ in exp.pending_creates()) == ["js-a-0", "js-a-1"]
    assert exp.observe_create("ns/js", "js-a-0") is False
    assert exp.observe_create("ns/js", "unrelated") is False
    assert exp.observe_create("ns/js", "js-a-1") is True
    assert exp.satisfied("ns/js", now=1)


def test_deletes_are_tracked_by_uid() -> None:
    exp = Expectations()
    exp.expect("k", now=0, deletes={"u1", "u2"})
    assert exp.pending_count("k") == (0, 2)
    exp.observe_delete("k", "u1")
    assert not exp.satisfied("k", now=0)
    assert exp.observe_delete("k", "u2") is True


def test_expired_expectations_stop_blocking() -> None:
    exp = Expectations(timeout=300)
    exp.expect("k", now=100, creates={"j": None})
    assert exp.expired("k", now=399) is False
    assert not exp.satisfied("k", now=399)
    assert exp.expired("k", now=400) is True
    assert exp.satisfied("k", now=400)
    assert list(exp.pending_creates()) == []


def test_nothing_expected_records_nothing() -> None:
    exp = Expectations()
    exp.expect("k", now=0)
    assert exp.deadline("k") is None
    assert exp.satisfied("k", now=0)
