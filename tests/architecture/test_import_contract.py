"""The layering contract (.importlinter), checked by import-linter, and shown able to fail.

`lint-imports` runs in .ci/run; here the same check runs over the real tree, and over a copy of
the package into which one import breaking each contract was written, so no contract can pass
whatever the code does.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.architecture.scan import REPO

CONTRACT = REPO / ".importlinter"

# (file to append to, the import that breaks a contract, the contract's section name)
BREAKS = [
    pytest.param("tpu/catalog.py", "import jobset_infra.api.models", "api-tpu",
                 id="tpu importing api breaks their independence"),
    pytest.param("cluster/local.py", "import jobset_infra.sim.cluster.nodes", "no-sim",
                 id="the real launcher importing the sim"),
    pytest.param("sim/cluster/scheduler.py", "import jobset_infra.controller.runtime.kube",
                 "sim-without-controller", id="the sim importing the controller"),
    pytest.param("sim/apiserver/store.py", "import jobset_infra.tpu.catalog",
                 "sim-apiserver-alone", id="the sim's API server importing tpu"),
    pytest.param("api/models.py", "import jobset_infra.controller.core.types", "layers",
                 id="api importing the controller points upwards"),
    pytest.param("manifests/meta.py", "import jobset_infra.placement.fit", "manifests",
                 id="manifests importing placement"),
    pytest.param("controller/core/reconcile.py", "import jobset_infra.tpu.slice", "core",
                 id="the core importing the TPU catalog"),
    pytest.param("controller/runtime/main.py", "import jobset_infra.manifests.rbac", "runtime",
                 id="the runtime importing manifests"),
    pytest.param("stack/config.py", "import pulumi", "pulumi",
                 id="pulumi in the stack's pure config"),
    pytest.param("placement/fit.py", "import asyncio", "pure-io",
                 id="asyncio in a deciding package"),
    pytest.param("controller/core/draft.py", "import random", "pure-randomness",
                 id="randomness in the core"),
]


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command;"
         "sys.exit(lint_imports_command())", "--config", str(CONTRACT), "--no-cache"],
        check=False, cwd=root, capture_output=True, text=True, timeout=300,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
    )


def _contract_names() -> dict[str, str]:
    parser = configparser.ConfigParser()
    parser.read(CONTRACT)
    prefix = "importlinter:contract:"
    return {s.removeprefix(prefix): parser[s]["name"] for s in parser.sections()
            if s.startswith(prefix)}


def test_the_import_contract_is_kept() -> None:
    result = _lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_contract_breaks_when_its_rule_does(tmp_path: Path) -> None:
    # One copy, every break written at once: each contract must report its own.
    shutil.copytree(REPO / "jobset_infra", tmp_path / "jobset_infra",
                    ignore=shutil.ignore_patterns("__pycache__", "*.yaml", "*.json"))
    for param in BREAKS:
        path, line, _ = param.values
        with (tmp_path / "jobset_infra" / str(path)).open("a", encoding="utf-8") as f:
            f.write(f"\n{line}  # a deliberate break\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    names = _contract_names()
    broken = {key for key, name in names.items()
              if f"{' '.join(name.split())} BROKEN" in " ".join(result.stdout.split())}
    assert broken == {str(p.values[2]) for p in BREAKS} == set(names), result.stdout


def test_every_package_of_ours_is_in_a_layer() -> None:
    # A new top-level package outside the layers would escape the one-way rule.
    parser = configparser.ConfigParser()
    parser.read(CONTRACT)
    layers = {name.strip() for line in parser["importlinter:contract:layers"]["layers"].split("\n")
              for name in line.split("|") if name.strip()}
    package = REPO / "jobset_infra"
    tops = {p.stem if p.is_file() else p.name for p in package.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    in_layers = {name.split(".")[0] for name in layers}
    assert tops - in_layers - {"controller"} == set()
    assert {n for n in layers if n.startswith("controller.")} == {
        f"controller.{p.name}" for p in (package / "controller").iterdir()
        if (p / "__init__.py").is_file()}
