"""The order tests/schedule.py gives the units of work (xdist hands them out in it): longest
first by measured seconds, then unmeasured real and envtest files, then the rest as collected;
a group of files sharing a cluster is one unit, on one worker."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests import schedule
from tests.schedule import GroupedFileScheduling, longest_first, unit_of


@dataclass
class FakeItem:
    nodeid: str
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> str | None:
        return name if name in self.markers else None


def ordered(items: list[FakeItem]) -> list[str]:
    longest_first(items)  # type: ignore[arg-type]
    return [i.nodeid for i in items]


def test_measured_units_go_longest_first_then_real_then_envtest_then_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schedule, "SECONDS", {"tests/long.py": 300.0, "tests/mid.py": 90.0})
    items = [
        FakeItem("tests/a.py::t1"),
        FakeItem("tests/env.py::t1"),
        FakeItem("tests/env.py::t2", {"envtest"}),
        FakeItem("tests/mid.py::t1", {"real"}),
        FakeItem("tests/real.py::t1"),
        FakeItem("tests/real.py::t2", {"real"}),
        FakeItem("tests/a.py::t2"),
        FakeItem("tests/long.py::t1", {"real"}),
        FakeItem("tests/b.py::t1"),
    ]
    assert ordered(items) == [
        "tests/long.py::t1", "tests/mid.py::t1",
        "tests/real.py::t1", "tests/real.py::t2",  # unmeasured real: DEFAULT_REAL (60 s)
        "tests/env.py::t1", "tests/env.py::t2",
        "tests/a.py::t1", "tests/a.py::t2", "tests/b.py::t1",
    ]


@pytest.mark.parametrize(
    "marker", [pytest.param("real", id="a real test"), pytest.param("envtest", id="an envtest")]
)
def test_one_marked_test_moves_its_whole_file(marker: str) -> None:
    items = [FakeItem("tests/b.py::t1"), FakeItem("tests/c.py::t1"),
             FakeItem("tests/c.py::t2", {marker})]
    assert ordered(items) == ["tests/c.py::t1", "tests/c.py::t2", "tests/b.py::t1"]


def test_a_group_of_files_is_one_unit_kept_together_in_its_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schedule, "GROUPS", {"tests/g/": "tests/g"})
    monkeypatch.setattr(schedule, "SECONDS", {"tests/g": 200.0, "tests/x.py": 100.0})
    items = [
        FakeItem("tests/x.py::t1", {"real"}),
        FakeItem("tests/g/test_a.py::t1", {"real"}),
        FakeItem("tests/a.py::t1"),
        FakeItem("tests/g/test_b.py::t1", {"real"}),
    ]
    assert ordered(items) == [
        "tests/g/test_a.py::t1", "tests/g/test_b.py::t1", "tests/x.py::t1", "tests/a.py::t1"]
    assert unit_of("tests/g/test_b.py::t1[p]") == "tests/g"
    assert unit_of("tests/x.py::Class::t1") == "tests/x.py"


def test_the_scheduler_hands_a_group_out_as_one_scope() -> None:
    split = GroupedFileScheduling._split_scope
    assert split(None, "tests/chaos/test_platform.py::t") == "tests/chaos"  # type: ignore[arg-type]
    assert split(None, "tests/e2e/test_x.py::t") == "tests/e2e/test_x.py"  # type: ignore[arg-type]


def test_every_measured_unit_exists() -> None:
    """A renamed or deleted file leaves no stale entry that would rank nothing."""
    for unit in schedule.SECONDS:
        assert (schedule.ROOT / unit).exists(), f"{unit} in tests/schedule.py SECONDS: no such file"
