"""One cache of what is known about each JobSet's spec: each check runs once per spec version."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.controller.core.types import CoreConfig, EmitEvent, Observed, Plan
from jobset_infra.controller.runtime.decider import core_config, core_decider
from jobset_infra.controller.runtime.spec_cache import SpecCache
from jobset_infra.testing.jobsets import make_jobset

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _js(
    name: str = "js", generation: int | None = 1, uid: str = "u1", replicas: int = 1,
    restart_job: bool = False,
) -> dict[str, Any]:
    builder = make_jobset(name, "ns").uid(uid).replicated_job("a", replicas=replicas)
    if restart_job:  # the RestartJob gate is off: the spec check reports it
        builder = builder.rule("RestartJob")
    return (builder.generation(generation) if generation is not None else builder).obj()


def _checked(cache: SpecCache, *jobsets: dict[str, Any]) -> list[Plan]:
    decide = core_decider(CoreConfig(), cache)
    return [decide(Observed(js), NOW) for js in jobsets]


def test_the_same_generation_is_checked_once() -> None:
    cache = SpecCache(CoreConfig())
    _checked(cache, _js(), _js())
    assert cache.checks == 1


def test_a_new_generation_is_checked_again_and_its_verdict_kept() -> None:
    cache = SpecCache(CoreConfig())
    first, second = _checked(cache, _js(generation=1, restart_job=True),
                             _js(generation=2, replicas=2, restart_job=True))
    for plan in (first, second):  # RestartJob without its gate: InvalidSpec each time
        assert [e.reason for e in plan.of_type(EmitEvent)] == [c.INVALID_SPEC_REASON]
    assert cache.checks == 2


def test_without_a_spec_version_nothing_is_remembered() -> None:
    cache = SpecCache(CoreConfig())
    _checked(cache, _js(generation=None), _js(generation=None))
    assert cache.checks == 2 and len(cache) == 0


def test_the_cache_forgets_the_least_recently_used_beyond_its_capacity() -> None:
    cache = SpecCache(CoreConfig(), capacity=2)
    _checked(cache, *(_js(uid=uid) for uid in ("a", "b", "c")), _js(uid="c"))
    assert cache.checks == 3 and len(cache) == 2
    _checked(cache, _js(uid="a"))  # evicted: checked again
    assert cache.checks == 4


def _string_template(generation: int = 1) -> dict[str, Any]:
    js = make_jobset("js", "ns").uid("u").generation(generation).replicated_job("w").obj()
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"] = "a string"
    return js


def _with_status(js: dict[str, Any], plan: Plan) -> dict[str, Any]:
    update = plan.status_update
    assert update is not None
    return {**js, "status": update.status}


def test_a_malformed_jobset_is_reported_once_then_costs_nothing() -> None:
    cache = SpecCache(CoreConfig())
    decide = core_decider(core_config(ControllerConfig()), cache)
    js = _string_template()
    first = decide(Observed(js), NOW)
    assert [e.reason for e in first.of_type(EmitEvent)] == [c.INVALID_SPEC_REASON]
    assert "template.spec.template" in first.of_type(EmitEvent)[0].message
    reported = _with_status(js, first)
    assert decide(Observed(reported), NOW).is_empty  # the report stands: settled
    calls: list[bool] = []

    def observe_counting(check: bool) -> Any:
        calls.append(check)
        raise AssertionError("a settled JobSet is not parsed again")

    plan = cache.decide(reported, observe_counting, lambda o: Plan(), NOW)
    assert plan.is_empty and calls == []


def test_the_full_parse_check_runs_once_per_generation() -> None:
    cache = SpecCache(CoreConfig())
    parses: list[bool] = []

    def observed(check: bool) -> Any:
        parses.append(check)
        return Observed(make_jobset("js", "ns").model())

    for generation in (1, 1, 1, 2, 2):
        js = {"metadata": {"uid": "u", "generation": generation}}
        cache.decide(js, observed, lambda o: Plan(), NOW)
    assert parses == [True, False, False, True, False]
    assert cache.checks == 2, "the spec check follows the same versions"


def test_a_crash_in_reconcile_is_reported_as_invalid_spec_not_retried() -> None:
    cache = SpecCache(CoreConfig())
    js = {"metadata": {"name": "js", "namespace": "ns", "uid": "u", "generation": 1}}

    def crash(observed: Any) -> Plan:
        raise AttributeError("'str' object has no attribute 'get'")

    plan = cache.decide(js, lambda check: Observed(make_jobset("js", "ns").model()), crash, NOW)
    (event,) = plan.of_type(EmitEvent)
    assert event.type == "Warning"
    assert "cannot reconcile this JobSet (AttributeError" in event.message


def test_a_deleted_jobset_is_forgotten() -> None:
    cache = SpecCache(CoreConfig())
    _checked(cache, _js(uid="u"))
    assert len(cache) == 1
    cache.forget("u")
    assert len(cache) == 0


def test_the_crd_rules_load_when_first_awaited_in_a_thread_and_count_no_check() -> None:
    # In a fresh interpreter, as the controller starts: the CEL machinery is not loaded until
    # the first pass awaits it, it loads on another thread than the loop's, and loading it
    # runs no check of any JobSet of the cluster.
    probe = (
        "import asyncio, sys, threading\n"
        "from jobset_infra.controller.core.types import CoreConfig\n"
        "from jobset_infra.controller.runtime import spec_cache\n"
        "before = 'jobset_infra.api.crd.cel' in sys.modules\n"
        "cache = spec_cache.SpecCache(CoreConfig())\n"
        "threads = []\n"
        "load = spec_cache._load\n"
        "spec_cache._load = lambda c: (threads.append(threading.current_thread()), load(c))\n"
        "async def twice():\n"
        "    await asyncio.gather(cache.loaded(), cache.loaded())\n"
        "    await cache.loaded()\n"
        "asyncio.run(twice())\n"
        "print(before, 'jobset_infra.api.crd.cel' in sys.modules, cache.checks, len(threads),\n"
        "      threads[0] is not threading.main_thread())\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["False", "True", "0", "1", "True"]
