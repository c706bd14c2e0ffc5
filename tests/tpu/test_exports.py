"""Every tpu module declares its public API in __all__, and the package imports nothing of ours."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import jobset_infra.tpu as tpu_package

MODULES = sorted(m.name for m in pkgutil.iter_modules(tpu_package.__path__))


def _top_level_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_") and n != "__all__"}


@pytest.mark.parametrize("name", [m for m in MODULES if m != "__init__"])
def test_all_lists_exactly_the_public_definitions(name: str) -> None:
    module = importlib.import_module(f"jobset_infra.tpu.{name}")
    source = Path(tpu_package.__path__[0], f"{name}.py").read_text()
    assert set(module.__all__) == _top_level_names(source)


def test_package_exports_resolve() -> None:
    assert all(hasattr(tpu_package, n) for n in tpu_package.__all__)


@pytest.mark.parametrize("name", MODULES)
def test_tpu_depends_on_nothing_else_of_ours(name: str) -> None:
    source = Path(tpu_package.__path__[0], f"{name}.py").read_text()
    imported = {
        node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module
    }
    ours = {m for m in imported if m.startswith("jobset_infra")}
    assert all(m.startswith("jobset_infra.tpu") for m in ours), ours
    assert not any(m.startswith("pulumi") for m in imported)
