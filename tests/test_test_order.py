"""The order tests/conftest.py gives the files (xdist hands them out in it): real first."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.conftest import real_control_plane_files_first


@dataclass
class FakeItem:
    nodeid: str
    markers: set[str] = field(default_factory=set)

    def get_closest_marker(self, name: str) -> str | None:
        return name if name in self.markers else None


def test_real_files_come_first_then_envtest_then_the_rest_each_file_kept_whole() -> None:
    items = [
        FakeItem("tests/a.py::t1"),
        FakeItem("tests/env.py::t1"),
        FakeItem("tests/env.py::t2", {"envtest"}),
        FakeItem("tests/real.py::t1"),
        FakeItem("tests/real.py::t2", {"real"}),
        FakeItem("tests/a.py::t2"),
    ]
    real_control_plane_files_first(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == [
        "tests/real.py::t1", "tests/real.py::t2",
        "tests/env.py::t1", "tests/env.py::t2",
        "tests/a.py::t1", "tests/a.py::t2",
    ]


@pytest.mark.parametrize(
    "marker", [pytest.param("real", id="a real test"), pytest.param("envtest", id="an envtest")]
)
def test_one_marked_test_moves_its_whole_file(marker: str) -> None:
    items = [FakeItem("tests/b.py::t1"), FakeItem("tests/c.py::t1"),
             FakeItem("tests/c.py::t2", {marker})]
    real_control_plane_files_first(items)  # type: ignore[arg-type]
    assert [i.nodeid for i in items] == ["tests/c.py::t1", "tests/c.py::t2", "tests/b.py::t1"]
