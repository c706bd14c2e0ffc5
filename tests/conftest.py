"""Shared test configuration: hypothesis profiles (fixed seed, bounded examples in CI) and the
test tiers every test belongs to (docs/architecture.md, "Test tiers")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.schedule import GroupedFileScheduling, longest_first

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# SIGTERM tears the fixtures (and the real clusters) down as Ctrl-C does: tests/sigterm.py
from tests.sigterm import pytest_configure, pytest_runtest_setup  # noqa: E402, F401

ROOT = Path(__file__).resolve().parents[1]
# Folder (or module) -> tier; the longest match wins. Every test gets exactly one of unit, sim,
# e2e and chaos; a folder that is in no tier fails the collection, so none is left out of `-m`.
TIERS: dict[str, str] = {
    "tests": "unit",  # the modules directly in tests/ (Dockerfile, plan command, README)
    "tests/api": "unit",
    "tests/architecture": "unit",
    "tests/cluster": "unit",  # the local cluster's command lines, certificates, processes
    "tests/components": "unit",
    "tests/controller/core": "unit",
    "tests/controller/runtime": "unit",
    "tests/examples": "unit",
    "tests/explain": "unit",  # `jobset-infra explain`: its diagnosis over scripted objects
    "tests/manifests": "unit",
    "tests/placement": "unit",
    "tests/plan": "unit",  # the offline plan: Pulumi's mocks, preview checks, `jobset-infra plan`
    "tests/stack": "unit",  # the stack program's typed config
    "tests/stacks": "unit",
    "tests/tpu": "unit",
    "tests/sim": "sim",
    "tests/conformance": "sim",  # the sim held to the real server's recorded answers
    "tests/integration": "sim",
    "tests/reliability": "sim",
    "tests/benchmarks": "e2e",
    "tests/e2e": "e2e",
    "tests/chaos": "chaos",  # faults on the real control plane (each test also marked `real`)
    "tests/realnode": "e2e",  # the shipped images, built daemonless (and run on real nodes)
}


def tier_of(path: str) -> str | None:
    """The tier of a test file (a path relative to the repository), None if it has none."""
    folder = path.rpartition("/")[0]
    matches = [k for k in TIERS if folder == k or (k != "tests" and folder.startswith(k + "/"))]
    return TIERS[max(matches, key=len)] if matches else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _mark_tiers(items)
    longest_first(items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> GroupedFileScheduling | None:
    """`--dist loadfile` (pyproject.toml) with tests/schedule.py's groups of files."""
    if config.getoption("dist") != "loadfile":
        return None
    return GroupedFileScheduling(config, log)


def _mark_tiers(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        tier = tier_of(path)
        if tier is None:
            raise pytest.UsageError(
                f"{path} is in no test tier: add its folder to TIERS in tests/conftest.py"
            )
        item.add_marker(getattr(pytest.mark, tier))
