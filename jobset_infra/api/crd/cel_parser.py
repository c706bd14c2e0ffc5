"""celpy's CEL parser with its LALR tables kept on disk between runs.

celpy builds its Lark parser from the CEL grammar the first time an Environment is made, and
Lark's LALR analysis of that grammar was most of `jobset-infra validate`'s time and a second of
the controller's start (1.5 s of 2.5 s measured here on 2026-12-02). Lark can save the analysed
tables and load them (about 0.1 s); we give it the same grammar and options celpy uses, so the
parser is the one celpy would build. The file is keyed by Lark itself (a digest of the grammar,
the options, Lark's and Python's versions, checked on every load); a stale, torn or unwritable
file only costs the analysis, never a wrong parser. It is written under a unique name and
renamed into place, so processes starting together never read half a file.
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Final

import celpy
import lark
from celpy.celparser import CELParser

__all__ = ["cache_dir", "install_cached_parser"]

_FILE: Final = "cel-lalr-{lark}.pickle"


def cache_dir() -> Path | None:
    """Where jobset-infra keeps what it can recompute: $XDG_CACHE_HOME/jobset-infra, else
    ~/.cache/jobset-infra; None when neither is an absolute path (a container user without a
    home), so nothing is written relative to the working directory."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"))
    return base / "jobset-infra" if base.is_absolute() else None


def install_cached_parser(folder: Path | None = None) -> None:
    """Give celpy its parser, loaded from `folder` (default `cache_dir()`) or built and saved
    there. Does nothing when celpy already has one."""
    if CELParser.CEL_PARSER is not None:
        return
    folder = folder or cache_dir()
    if folder is None:
        CELParser()  # celpy builds its own
        return
    path = folder / _FILE.format(lark=lark.__version__)
    if path.is_file():
        CELParser.CEL_PARSER = _parser(str(path))
        return
    staged = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
    CELParser.CEL_PARSER = _parser(str(staged))  # Lark logs, and carries on, if it cannot save
    with contextlib.suppress(OSError):
        staged.replace(path)


def _parser(cache: str) -> lark.Lark:
    """Lark over celpy's grammar with celpy's options (celparser.CELParser.__init__)."""
    grammar = (Path(celpy.__file__).parent / "cel.lark").read_text()
    return lark.Lark(
        grammar,
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

