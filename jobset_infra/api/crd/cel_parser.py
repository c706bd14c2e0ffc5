"""celpy's CEL parser with its LALR tables kept on disk between runs.

celpy builds its Lark parser from the CEL grammar the first time an Environment is made, and
Lark's LALR analysis of that grammar was most of `jobset-infra validate`'s time and a second of
the controller's start (1.5 s of 2.5 s measured here on 2026-12-02). Lark can save the analysed
tables and load them (about 0.1 s); we give it the same grammar and options celpy uses, so the
parser is the one celpy would build. The file is keyed by Lark itself (a digest of the grammar,
the options, Lark's and Python's versions, checked on every load); a stale, torn or unwritable
file only costs the analysis, never a wrong parser. It is written under a unique name and
renamed into place, so processes starting together never read half a file.

Each expression's parse is kept on disk too (`parsed`), in a file named by a digest of its
text, so a run whose expressions were all seen before loads neither the tables nor the parser
(`install_deferred_parser` gives celpy a stand-in that builds the real parser only when a parse
is asked for). Their folder is named by celpy's grammar and Lark's version; a torn or foreign
file is ignored (parsed again). One file per expression: a run reads only the trees it uses,
and a rule whose tree is kept (`known`) is not even read until it is evaluated: `validate` of
a new JobSet never reads the transition rules' trees (0.6 MB for the replicated jobs' one).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import celpy
import lark
from celpy.celparser import CELParser

__all__ = [
    "cache_dir",
    "install_cached_parser",
    "install_deferred_parser",
    "known",
    "parsed",
    "save_atomically",
]

_FILE: Final = "cel-lalr-{lark}.pickle"
_TREES_FOLDER: Final = "cel-trees-{grammar}-{lark}"


def cache_dir() -> Path | None:
    """Where jobset-infra keeps what it can recompute: $XDG_CACHE_HOME/jobset-infra, else
    ~/.cache/jobset-infra; None when neither is an absolute path (a container user without a
    home), so nothing is written relative to the working directory."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
    return base / "jobset-infra" if base.is_absolute() else None


def save_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` under a unique name first and rename it into place, so a reader
    sees the old file, the new one or none, never a torn one; failures are ignored: what is
    kept here is only a shortcut, recomputed when absent."""
    staged = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        staged.write_bytes(data)
        staged.replace(path)


def install_cached_parser(folder: Path | None = None) -> None:
    """Give celpy its parser, loaded from `folder` (default `cache_dir()`) or built and saved
    there. Does nothing when celpy already has one."""
    if CELParser.CEL_PARSER is None:
        CELParser.CEL_PARSER = _loaded_parser(folder)


def _loaded_parser(folder: Path | None) -> lark.Lark:
    folder = folder or cache_dir()
    if folder is None:
        return _parser(False)  # built, as celpy builds its own
    path = folder / _FILE.format(lark=lark.__version__)
    if path.is_file():
        return _parser(str(path))
    staged = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    parser = _parser(str(staged))  # Lark logs, and carries on, if it cannot save
    with contextlib.suppress(OSError):
        staged.replace(path)
    return parser


def _parser(cache: str | bool) -> lark.Lark:
    """Lark over celpy's grammar with celpy's options (celparser.CELParser.__init__)."""
    return lark.Lark(
        _grammar(),
        parser="lalr",
        start="expr",
        debug=True,
        g_regex_flags=re.M,
        lexer_callbacks={"IDENT": CELParser.ambiguous_literals},
        propagate_positions=True,
        maybe_placeholders=False,
        priority="invert",
        tree_class=lark.Tree,
        cache=cache,
    )



class _DeferredParser:
    """Stands in for celpy's parser until a parse is asked for, then installs the real one.
    Never None meanwhile: threads asking at once (the controller compiles rules on a loader
    thread and on its event loop) may each load a parser, and every one of them parses."""

    def __init__(self, folder: Path | None) -> None:
        self._folder = folder

    def parse(self, text: str) -> Any:
        real = CELParser.CEL_PARSER
        if not isinstance(real, lark.Lark):
            real = _loaded_parser(self._folder)
            CELParser.CEL_PARSER = real
        return real.parse(text)


def install_deferred_parser(folder: Path | None = None) -> None:
    """Let celpy make Environments without building or loading its parser (it does in
    `Environment()`); the first parse loads it as `install_cached_parser` does."""
    if CELParser.CEL_PARSER is None:
        CELParser.CEL_PARSER = _DeferredParser(folder)  # type: ignore[assignment]


def parsed(text: str, parse: Callable[[str], Any], folder: Path | None = None) -> Any:
    """The tree of CEL expression `text`: read back when an earlier run parsed it, else
    `parse(text)`, saved (one small file per expression, so a run reads only the trees it
    uses; written under a unique name and renamed into place)."""
    path = _tree_path(folder or cache_dir(), text)
    if path is not None:
        with contextlib.suppress(Exception):  # absent, torn or not ours: parse instead
            tree = pickle.loads(path.read_bytes())
            if isinstance(tree, lark.Tree):
                return tree
    tree = parse(text)
    if path is not None:
        save_atomically(path, pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL))
    return tree


def known(text: str, folder: Path | None = None) -> bool:
    """Whether an earlier run parsed `text`: its tree is kept only after a parse succeeded, so
    the expression is known to compile and its tree can wait until it is evaluated."""
    path = _tree_path(folder or cache_dir(), text)
    return path is not None and path.is_file()


def _tree_path(folder: Path | None, text: str) -> Path | None:
    if folder is None:
        return None
    name = hashlib.sha256(text.encode()).hexdigest()[:32]
    return folder / _trees_folder() / f"{name}.pickle"


@functools.cache
def _trees_folder() -> str:
    return _TREES_FOLDER.format(grammar=_grammar_digest(), lark=lark.__version__)


def _grammar_digest() -> str:
    """What a tree depends on besides Lark: celpy's grammar (celpy has no __version__)."""
    return hashlib.sha256(_grammar().encode()).hexdigest()[:12]


def _grammar() -> str:
    return (Path(celpy.__file__).parent / "cel.lark").read_text()
