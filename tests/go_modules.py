"""Go modules the tools build from: pinned versions and the module zips in the Go module cache.

The real-cluster Kueue tests read Kueue's CRDs and configuration API from the module zip the Go
build left in the module cache (never copied into this repository).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.cluster.binaries import MissingBinaryError, find
from tests.realcluster import REQUIRE_ENV

TOOLS = Path(__file__).parents[1] / "tools"
JsonObj = dict[str, Any]


def _missing(what: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {what}")
    pytest.skip(what)


def binary_or_skip(name: str) -> Path:
    try:
        return find(name)
    except MissingBinaryError as err:
        _missing(str(err))
        raise


def pinned_version(group: str, module: str) -> str:
    """The version of `module` that tools/<group>/go.mod pins."""
    text = (TOOLS / group / "go.mod").read_text()
    match = re.search(rf"^\s*{re.escape(module)} (v\S+)", text, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"tools/{group}/go.mod does not pin {module}")
    return match.group(1)


def _module_cache() -> Path:
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    go = shutil.which("go")
    if go is not None:
        found = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True,
                               check=False).stdout.strip()
        if found:
            return Path(found)
    return Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod"


@dataclass(frozen=True)
class ModuleZip:
    """One module's zip in the Go module cache, read without unpacking it."""

    module: str
    version: str
    path: Path

    @classmethod
    def pinned(cls, group: str, module: str) -> ModuleZip:
        version = pinned_version(group, module)
        path = _module_cache() / "cache" / "download" / module / "@v" / f"{version}.zip"
        if not path.is_file():
            _missing(f"{module}@{version} is not in the Go module cache ({path}): run "
                     f"`python3 tools/build.py {group}`")
        return cls(module, version, path)

    def yaml_documents(self, folder: str) -> list[JsonObj]:
        """Every YAML document of the files directly in `folder` of the module."""
        prefix = f"{self.module}@{self.version}/{folder.strip('/')}/"
        with zipfile.ZipFile(self.path) as archive:
            names = sorted(n for n in archive.namelist() if n.startswith(prefix)
                           and "/" not in n[len(prefix):] and n.endswith(".yaml"))
            return [doc for n in names for doc in yaml.safe_load_all(archive.read(n)) if doc]
