"""How the README's `-n 2` spreads the suite over two pytest-xdist workers: which files travel
together (a shared cluster), and in which order they are handed out (longest first).

Whole files go to a worker (`--dist loadfile`, pyproject.toml), in the order
`pytest_collection_modifyitems` leaves them (`--no-loadscope-reorder`), each time a worker has
two tests or fewer left. The wall time of the run is the longer worker's, so the files go out
longest first (LPT: a long file started last leaves the other worker idle while it runs; the
many short files at the end even the two workers out). The order comes from `SECONDS`, measured
per file; a real-cluster or envtest file not measured yet is ranked by its tier's default.

A `GROUPS` entry keeps several files on one worker, one after the other, so a fixture of wider
than module scope (a package's one real cluster) starts once instead of once per file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from xdist.scheduler import LoadFileScheduling

ROOT = Path(__file__).resolve().parents[1]
# Files that share a cluster through a package-scoped fixture: prefix -> the unit of work.
GROUPS: dict[str, str] = {
    "tests/chaos/": "tests/chaos",  # one control plane and controller fleet for the tier
}

# Seconds per unit of work on one worker of `pytest -q -n 2` (setup, calls and teardown summed
# from `--durations=0`). Only the order they give matters; re-measure when a file grows or a new
# long one lands. Real-cluster files: each file's own measurement (commit or docs/ figure) at
# the load noted. The rest (20 s and more): `pytest -n 2 -m "not real and not envtest"
# --durations=0` on 2026-12-07 at load 13 (1,578 s in all), halved to the CI run's load of 4-6.
SECONDS: dict[str, float] = {
    "tests/chaos": 174.0,  # both files, one cluster: the warm CI of 4f82fc3 (2026-12-07 18:20)
    "tests/e2e/test_examples_run.py": 317.0,  # the warm CI of 4f82fc3
    "tests/realnode/test_real_node.py": 348.0,  # the warm CI of 4f82fc3
    "tests/stacks/test_real_engine.py": 403.0,  # system node: 263 + 140 s (-n 0, load 2-4)
    "tests/stacks/test_component_package.py": 102.0,  # system node (-n 0, load 2-4)
    "tests/reliability/test_hostile_inputs.py": 55.0,  # the warm CI of 4f82fc3
    "tests/e2e/test_placement_modes.py": 108.0,  # system node, Kueue as shipped (-n 0, load 2-4)
    "tests/stacks/test_pulumi_new_template.py": 84.0,  # load 20-25
    "tests/e2e/test_gated_features.py": 83.0,  # docs/api.md
    "tests/stacks/test_outputs_program.py": 100.0,  # system node, the warm CI of 4f82fc3: 94 s
    "tests/cluster/test_command.py": 64.0,  # the warm CI of 4f82fc3
    "tests/stacks/test_pool_drain_real.py": 140.0,  # system node (-n 0, load 2-4)
    "tests/e2e/test_slice_health.py": 74.0,  # the warm CI of 4f82fc3
    "tests/architecture/test_architecture.py": 45.0,
    "tests/sim/test_command.py": 45.0,
    "tests/benchmarks/test_real_smoke.py": 44.0,
    "tests/reliability/test_one_jobset_cannot_stall.py": 30.0,
    "tests/controller/core/test_properties.py": 30.0,
    "tests/sim/test_field_validation.py": 20.0,
    "tests/components/test_jobset_system.py": 17.0,
    "tests/api/test_properties.py": 15.0,
    "tests/reliability/test_fault_suite.py": 15.0,
    "tests/e2e/test_acceptance_regressions.py": 15.0,
    "tests/plan/test_command.py": 14.0,
    "tests/conformance/test_sim.py": 14.0,
    "tests/reliability/test_bad_input.py": 14.0,
    "tests/benchmarks/test_quick.py": 12.0,
    "tests/stacks/test_stacks.py": 12.0,
    "tests/controller/core/test_bounded_passes.py": 10.0,
    "tests/sim/test_body_limits.py": 10.0,
    "tests/components/test_jobset.py": 10.0,
}

# A unit of work not in SECONDS yet: a real cluster's file typically takes a minute or more,
# an envtest file (one kube-apiserver per worker, shared) some seconds.
DEFAULT_REAL = 60.0
DEFAULT_ENVTEST = 10.0


class Item(Protocol):
    nodeid: str

    def get_closest_marker(self, name: str) -> object | None: ...


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the group of files its file is in."""
    path = nodeid.split("::", 1)[0]
    for prefix, group in GROUPS.items():
        if path.startswith(prefix):
            return group
    return path


def expected_seconds(unit: str, marked: Callable[[str], bool]) -> float:
    if unit in SECONDS:
        return SECONDS[unit]
    if marked("real"):
        return DEFAULT_REAL
    return DEFAULT_ENVTEST if marked("envtest") else 0.0


def longest_first(items: list[Item]) -> None:
    """Sort `items` so that units of work come longest first, each unit whole and in its own
    order (its module-scoped clusters start once); units of no known cost keep their order."""
    markers: dict[str, set[str]] = {}
    for item in items:
        found = markers.setdefault(unit_of(item.nodeid), set())
        found.update(m for m in ("real", "envtest") if item.get_closest_marker(m))
    cost = {unit: expected_seconds(unit, names.__contains__) for unit, names in markers.items()}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(unit_of(item.nodeid), index)
    items.sort(key=lambda item: (-cost[unit_of(item.nodeid)], first[unit_of(item.nodeid)]))


class GroupedFileScheduling(LoadFileScheduling):
    """xdist's `loadfile`, with the files of a `GROUPS` entry as one unit of work."""

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

