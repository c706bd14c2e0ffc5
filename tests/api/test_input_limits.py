"""Every bound of api.input_limits, and validate refusing what would have taken it down."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api.input_limits import (
    MANIFEST_LIMITS,
    LimitError,
    Limits,
    check_depth,
    json_depth,
    loads_json,
    read_bounded,
)
from jobset_infra.api.yaml_io import YamlError, load_documents
from jobset_infra.validate_command import check_text

SMALL = Limits(max_bytes=1000, max_depth=5, max_nodes=50, max_alias_nodes=10, what="input")


def billion_laughs(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "bound"),
    [
        pytest.param(billion_laughs(9), "aliases", id="a 9-level alias bomb is refused"),
        pytest.param("a: &a [*a]\n", "aliases", id="a recursive alias is refused"),
        pytest.param("x: " + "[" * 6 + "]" * 6, "depth", id="flow nesting beyond the limit"),
        pytest.param("x:\n" + "".join("  " * i + "- \n" for i in range(1, 8)), "depth",
                     id="block nesting beyond the limit"),
        pytest.param("a: &a [[[[1]]]]\nb: [*a]\n", "depth", id="an alias that nests too deep"),
        pytest.param("- x\n" * 60, "nodes", id="too many nodes"),
        pytest.param("x" * 1001, "size", id="too many bytes"),
    ],
)
def test_yaml_over_a_bound_is_refused_naming_it(text: str, bound: str) -> None:
    with pytest.raises(YamlError) as info:
        load_documents(text, SMALL)
    assert info.value.limit is not None and info.value.limit.bound == bound
    assert f"limit {info.value.limit.limit}" in str(info.value) or bound in ("size", "aliases")


def test_aliases_within_the_budget_load() -> None:
    (doc,) = load_documents("a: &a {b: 1}\nc: *a\n", SMALL)
    assert doc == {"a": {"b": 1}, "c": {"b": 1}}


def test_anchors_are_per_document() -> None:
    docs = load_documents("a: &a [1, 2]\n---\nb: [3]\n", SMALL)
    assert docs == [{"a": [1, 2]}, {"b": [3]}]


def test_a_seven_level_bomb_is_refused_at_once() -> None:
    started = time.monotonic()
    with pytest.raises(YamlError, match="aliases"):
        load_documents(billion_laughs(7))
    assert time.monotonic() - started < 1.0  # it took 33 s and 1.7 GB before


def test_reading_stops_at_the_size_limit() -> None:
    endless = io.BytesIO(b"\0" * (SMALL.max_bytes * 3))
    with pytest.raises(LimitError, match="size limit is 1000 bytes"):
        read_bounded(endless, SMALL)
    assert endless.tell() == SMALL.max_bytes + 1


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        pytest.param(b"1", 0, id="a scalar"),
        pytest.param(b"[]", 1, id="an empty list"),
        pytest.param(b'{"a": [1, {"b": "[[[["}]}', 3, id="brackets in strings do not count"),
        pytest.param(b'["\\"[[", [[]]]', 3, id="escaped quotes stay in strings"),
        pytest.param(b"[" * 500 + b"]" * 500, 500, id="a deep list"),
        pytest.param(b"[[],[[]],[]]", 3, id="siblings"),
    ],
)
def test_json_depth(text: bytes, depth: int) -> None:
    assert json_depth(text) == depth


@given(st.recursive(st.none() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=30))
def test_json_depth_matches_the_decoded_value(value: object) -> None:
    def depth(v: object) -> int:
        children = v.values() if isinstance(v, dict) else v if isinstance(v, list) else None
        return 0 if children is None else 1 + max((depth(c) for c in children), default=0)

    assert json_depth(json.dumps(value).encode()) == depth(value)


def test_loads_json_refuses_depth_before_decoding() -> None:
    with pytest.raises(LimitError, match="deeper than 5 levels"):
        loads_json(b"[" * 6 + b"]" * 6, SMALL)
    assert loads_json(b"[" * 5 + b"]" * 5, SMALL) == [[[[[]]]]]


@pytest.mark.parametrize("interruptible", [
    pytest.param(False, id="the plain decode"),
    pytest.param(True, id="the decode that hands the GIL around"),
])
def test_json_the_c_scanner_cannot_nest_is_decoded_by_the_python_one(
    monkeypatch: pytest.MonkeyPatch, interruptible: bool
) -> None:
    """Python 3.12+ stops json's C scanner below the API server's 10,000 levels (a
    RecursionError whatever sys.setrecursionlimit says); the pure-Python scanner takes over."""
    from jobset_infra.api import input_limits

    def c_scanner_out_of_stack(*_args: object, **_kwargs: object) -> object:
        raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")

    monkeypatch.setattr(input_limits.json, "loads", c_scanner_out_of_stack)
    raw = b'{"deep": ' + b"[" * 3000 + b"1" + b"]" * 3000 + b', "n": 7}'
    value = loads_json(raw, Limits(1 << 20, 5000, 100_000, 0, "response"),
                       interruptible=interruptible)
    assert value["n"] == 7 and json_depth(raw) == 3001


def test_check_depth_is_iterative() -> None:
    value: object = []
    for _ in range(50_000):  # far beyond the recursion limit
        value = [value]
    with pytest.raises(LimitError, match="deeper than 100 levels"):
        check_depth(value, 100)


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        pytest.param(billion_laughs(9).encode(), "YAML aliases in the file expand to more than",
                     id="the 638-byte alias bomb"),
        pytest.param(b"x: " + b"[" * 200 + b"]" * 200, "nests deeper than 100 levels",
                     id="deep nesting"),
    ],
)
def test_validate_reports_the_bound(data: bytes, fragment: str) -> None:
    (line,) = check_text("bomb.yaml", data)
    assert line.startswith("bomb.yaml: ") and fragment in line


def test_validate_of_dev_zero_stops_at_the_file_limit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from jobset_infra.cli import main

    assert Path("/dev/zero").exists()
    started = time.monotonic()
    assert main(["validate", "/dev/zero"]) == 1
    assert time.monotonic() - started < 5
    assert f"file size limit is {MANIFEST_LIMITS.max_bytes} bytes" in capsys.readouterr().out


def test_the_manifest_depth_limit_holds_a_jobset_crd() -> None:
    crd = Path(__file__).parents[2] / "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"
    (document,) = load_documents(crd.read_bytes())
    check_depth(document, MANIFEST_LIMITS.max_depth)
    assert isinstance(yaml.safe_load(crd.read_text()), dict)
