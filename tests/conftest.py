"""Shared test configuration: hypothesis profiles (fixed seed, bounded examples in CI) and the
test tiers every test belongs to (docs/architecture.md, "Test tiers")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

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
    real_control_plane_files_first(items)


def _mark_tiers(items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.fspath)).resolve().relative_to(ROOT).as_posix()
        tier = tier_of(path)
        if tier is None:
            raise pytest.UsageError(
                f"{path} is in no test tier: add its folder to TIERS in tests/conftest.py"
            )
        item.add_marker(getattr(pytest.mark, tier))


def _file_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def real_control_plane_files_first(items: list[pytest.Item]) -> None:
    """Run the files with real-cluster tests first, then the envtest ones, then the rest.

    The README's `-n 2` hands whole files to two pytest-xdist workers in collection order
    (`--dist loadfile --no-loadscope-reorder`, pyproject.toml), a file each time a worker is
    nearly idle. Each real-cluster file takes half a minute to five (its own control plane, the
    real engine), so they start first and the many short files fill in beside them instead of
    one starting last. A file's tests stay together, in their order: its module-scoped
    clusters are started once. A serial run only changes order.
    """
    rank: dict[str, int] = {}
    for item in items:
        kind = 0 if item.get_closest_marker("real") else (
            1 if item.get_closest_marker("envtest") else 2)
        rank[_file_of(item)] = min(rank.get(_file_of(item), 2), kind)
    items.sort(key=lambda item: rank[_file_of(item)])
