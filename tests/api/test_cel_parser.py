"""celpy's parser with its tables on disk: the same parse whether built, saved or loaded, and a
bad or unwritable cache costs only time."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path

import celpy
import lark
import pytest
from celpy.celparser import CELParser

from jobset_infra.api.crd import cel_parser

RULES = [
    "self.replicas >= 0 && size(self.name) <= 63",
    "!has(oldSelf.x) || self.x == oldSelf.x",
    "self.items.all(i, i.startsWith('a')) ? 1 : 2",
    "self.m['key'].lowerAscii() in ['a', 'b'] || true == false",
]


def parse_all() -> list[str]:
    """Every rule parsed with whatever parser celpy has now, as comparable text."""
    parser = CELParser()
    return [repr(_plain(parser.parse(rule))) for rule in RULES]


def _plain(node: object) -> object:
    # A Tree's data is a Token when Lark builds the parser and a str when it loads it: both
    # are the rule's name, which is all celpy reads.
    if hasattr(node, "data"):
        return (str(node.data), [_plain(c) for c in node.children])  # type: ignore[attr-defined]
    return (getattr(node, "type", None), str(node))


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """celpy without a parser (restored afterwards)."""
    monkeypatch.setattr(CELParser, "CEL_PARSER", None)


@pytest.fixture(scope="module")
def built_by_celpy() -> list[str]:
    """The rules as the parser celpy builds itself parses them (built once: it takes seconds)."""
    kept = CELParser.CEL_PARSER
    CELParser.CEL_PARSER = None
    try:
        CELParser()
        return parse_all()
    finally:
        CELParser.CEL_PARSER = kept


@pytest.fixture
def celpys_own(built_by_celpy: list[str], fresh: None) -> list[str]:
    return built_by_celpy


def test_a_saved_then_loaded_parser_parses_as_celpys_own(celpys_own: list[str],
                                                         tmp_path: Path) -> None:
    cel_parser.install_cached_parser(tmp_path)
    assert parse_all() == celpys_own
    saved = list(tmp_path.iterdir())
    assert [p.name for p in saved] == [f"cel-lalr-{__import__('lark').__version__}.pickle"]
    CELParser.CEL_PARSER = None
    cel_parser.install_cached_parser(tmp_path)  # loaded this time
    assert parse_all() == celpys_own


def test_a_torn_cache_file_is_rebuilt_not_trusted(celpys_own: list[str], tmp_path: Path) -> None:
    cel_parser.install_cached_parser(tmp_path)
    (saved,) = tmp_path.iterdir()
    saved.write_bytes(saved.read_bytes()[:5000])
    CELParser.CEL_PARSER = None
    cel_parser.install_cached_parser(tmp_path)
    assert parse_all() == celpys_own


def test_an_unwritable_cache_folder_still_gives_a_parser(celpys_own: list[str],
                                                         tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    cel_parser.install_cached_parser(blocked / "cache")
    assert parse_all() == celpys_own


def test_programs_from_the_loaded_parser_evaluate(fresh: None, tmp_path: Path) -> None:
    cel_parser.install_cached_parser(tmp_path)
    CELParser.CEL_PARSER = None
    cel_parser.install_cached_parser(tmp_path)
    env = celpy.Environment()
    program = env.program(env.compile("size(self.a) == 2 && self.b > 1"))
    activation = {"self": celpy.json_to_cel({"a": [1, 2], "b": 3})}
    assert program.evaluate(activation) == celpy.celtypes.BoolType(True)


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cel_parser.cache_dir() == tmp_path / "jobset-infra"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cel_parser.cache_dir() == tmp_path / "home" / ".cache" / "jobset-infra"


def test_without_a_home_nothing_is_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "relative")
    assert cel_parser.cache_dir() is None


def _never(text: str) -> object:
    raise AssertionError(f"parsed again: {text}")


def test_a_parsed_tree_is_read_back_instead_of_parsed_again(celpys_own: list[str],
                                                            tmp_path: Path) -> None:
    cel_parser.install_cached_parser()  # the tables from the usual folder (built once)
    parser = CELParser()
    first = [cel_parser.parsed(rule, parser.parse, tmp_path) for rule in RULES]
    assert [repr(_plain(t)) for t in first] == celpys_own
    again = [cel_parser.parsed(rule, _never, tmp_path) for rule in RULES]
    assert [repr(_plain(t)) for t in again] == celpys_own
    env = celpy.Environment()
    program = env.program(again[0])
    activation = {"self": celpy.json_to_cel({"replicas": 1, "name": "a"})}
    assert program.evaluate(activation) == celpy.celtypes.BoolType(True)


def test_a_torn_file_of_trees_costs_a_parse(tmp_path: Path) -> None:
    cel_parser.parsed(RULES[0], lambda text: lark.Tree("expr", [text]), tmp_path)
    (saved,) = tmp_path.glob("cel-trees-*/*.pickle")
    saved.write_bytes(saved.read_bytes()[:40])
    tree = cel_parser.parsed(RULES[0], lambda text: lark.Tree("fresh", []), tmp_path)
    assert tree == lark.Tree("fresh", [])


def test_an_expression_is_known_only_once_its_parse_succeeded(tmp_path: Path) -> None:
    assert not cel_parser.known(RULES[0], tmp_path)
    with pytest.raises(ValueError, match="no parse"):
        cel_parser.parsed(RULES[0], _refuse, tmp_path)
    assert not cel_parser.known(RULES[0], tmp_path)  # a failed parse keeps nothing
    cel_parser.parsed(RULES[0], lambda text: lark.Tree("expr", [text]), tmp_path)
    assert cel_parser.known(RULES[0], tmp_path)
    assert not cel_parser.known(RULES[1], tmp_path)


def _refuse(text: str) -> object:
    raise ValueError(f"no parse: {text}")


def test_a_known_rule_is_read_when_it_is_first_evaluated(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    """`Rule.from_schema` reads no kept tree; the rule's first evaluation does, and a rule
    nobody parsed before is still compiled (and refused) at once."""
    from jobset_infra.api.crd import cel

    text = "self.replicas >= 0 && self.replicas < 123457"
    # an earlier run kept its tree (parsed with the usual folder's tables, built once)
    cel_parser.parsed(text, CELParser().parse, tmp_path / "jobset-infra")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cel.compile_expression.cache_clear()
    read: list[str] = []
    real = cel_parser.parsed
    monkeypatch.setattr(cel, "parsed", lambda t, parse: read.append(t) or real(t, parse))
    rule = cel.Rule.from_schema({"rule": text, "message": "in range"})
    assert read == []
    assert rule.evaluate({"replicas": 123457}, None, "spec", "object") is not None
    assert rule.evaluate({"replicas": 1}, None, "spec", "object") is None
    assert read == [text]
    with pytest.raises(cel.RuleCompileError):
        cel.Rule.from_schema({"rule": "self.replicas >= ", "message": "never kept"})


def test_the_parser_is_loaded_only_when_a_parse_is_asked_for(celpys_own: list[str]) -> None:
    cel_parser.install_deferred_parser()
    env = celpy.Environment()
    assert not isinstance(CELParser.CEL_PARSER, lark.Lark)  # no tables built or loaded
    assert repr(_plain(env.compile(RULES[0]))) == celpys_own[0]
    assert isinstance(CELParser.CEL_PARSER, lark.Lark)
    assert parse_all() == celpys_own


def test_threads_asking_at_once_all_get_the_real_parser(celpys_own: list[str]) -> None:
    cel_parser.install_deferred_parser()
    parser = CELParser()
    with concurrent.futures.ThreadPoolExecutor(len(RULES)) as pool:
        trees = list(pool.map(parser.parse, RULES))
    assert [repr(_plain(t)) for t in trees] == celpys_own
