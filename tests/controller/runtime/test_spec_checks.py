"""The spec check runs once per JobSet generation, and again when the spec changes."""

from __future__ import annotations

import subprocess
import sys

from jobset_infra.api.models import JobSet
from jobset_infra.controller.core.types import CoreConfig
from jobset_infra.controller.runtime.spec_checks import SpecChecks
from jobset_infra.testing.jobsets import make_jobset


def _js(
    name: str = "js", generation: int | None = 1, uid: str = "u1", replicas: int = 1
) -> JobSet:
    builder = make_jobset(name, "ns").uid(uid).replicated_job("a", replicas=replicas)
    return (builder.generation(generation) if generation is not None else builder).model()


def test_the_same_generation_is_checked_once() -> None:
    checks = SpecChecks(CoreConfig())
    first = checks.problems(_js())
    assert checks.problems(_js()) == first == ()
    assert checks.runs == 1


def test_a_new_generation_is_checked_again_and_its_verdict_kept() -> None:
    checks = SpecChecks(CoreConfig())
    assert checks.problems(_js("j" * 60, generation=1)) != ()  # Job names too long
    assert checks.problems(_js("j" * 60, generation=2, replicas=2)) != ()
    assert checks.runs == 2


def test_without_a_generation_nothing_is_cached() -> None:
    checks = SpecChecks(CoreConfig())
    checks.problems(_js(generation=None))
    checks.problems(_js(generation=None))
    assert checks.runs == 2


def test_the_cache_forgets_the_least_recently_used_beyond_its_capacity() -> None:
    checks = SpecChecks(CoreConfig(), capacity=2)
    for uid in ("a", "b", "c"):
        checks.problems(_js(uid=uid))
    checks.problems(_js(uid="c"))
    assert checks.runs == 3
    checks.problems(_js(uid="a"))  # evicted: checked again
    assert checks.runs == 4


def test_preparing_loads_the_crd_rules_and_counts_no_check() -> None:
    # In a fresh interpreter, as the controller starts: the CEL machinery is not loaded until
    # prepared, and preparing it runs no check of any JobSet of the cluster.
    probe = (
        "import sys\n"
        "from jobset_infra.controller.core.types import CoreConfig\n"
        "from jobset_infra.controller.runtime.spec_checks import SpecChecks, prepare_spec_check\n"
        "before = 'jobset_infra.api.crd.cel' in sys.modules\n"
        "checks = SpecChecks(CoreConfig())\n"
        "prepare_spec_check(CoreConfig())\n"
        "print(before, 'jobset_infra.api.crd.cel' in sys.modules, checks.runs)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out == ["False", "True", "0"]
