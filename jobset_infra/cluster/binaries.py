"""Where the real binaries are: built by `make tools`, given by the user, or on PATH.

Looked up in this order, the first folder that has the binary wins:

1. `$JOBSET_INFRA_TOOLS` (a folder of binaries the user names explicitly);
2. the folder `tools/build.py` links every binary it built into (`<cache>/tools/bin`);
3. `$KUBEBUILDER_ASSETS` (envtest's folder: etcd, kube-apiserver, kubectl);
4. `$PATH`.

Nothing is ever downloaded here; a missing binary is an error that names the command to run.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

BUILD_COMMAND: Final = "make tools"  # the same as `python3 tools/build.py`


class MissingBinaryError(RuntimeError):
    """A binary the command needs is not built or not found; the message says how to get it."""


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """The cache folder shared with tools/build.py (keep the two in step)."""
    env = os.environ if env is None else env
    if env.get("JOBSET_INFRA_CACHE"):
        return Path(env["JOBSET_INFRA_CACHE"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jobset-infra"


def search_folders(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders looked in, in order (PATH last)."""
    env = os.environ if env is None else env
    folders: list[Path] = []
    if env.get("JOBSET_INFRA_TOOLS"):
        folders.append(Path(env["JOBSET_INFRA_TOOLS"]))
    folders.append(cache_root(env) / "tools" / "bin")
    if env.get("KUBEBUILDER_ASSETS"):
        folders.append(Path(env["KUBEBUILDER_ASSETS"]))
    folders.extend(Path(p) for p in env.get("PATH", "").split(os.pathsep) if p)
    return folders


def find(name: str, env: Mapping[str, str] | None = None) -> Path:
    """The path of binary `name`; MissingBinaryError names where it looked and the fix."""
    for folder in search_folders(env):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise MissingBinaryError(
        f"{name} not found: run `{BUILD_COMMAND}` (builds the pinned tools from the Go module "
        "proxy, once per pin set), or point JOBSET_INFRA_TOOLS or KUBEBUILDER_ASSETS at a "
        f"folder that has it"
    )


@dataclass(frozen=True)
class Tools:
    """The control-plane binaries one cluster runs."""

    etcd: Path
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kwok: Path

    @staticmethod
    def names() -> Sequence[str]:
        return ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")

    def version_lines(self) -> dict[str, str]:
        """Each binary's own `--version` line (what /version and the docs report)."""
        return {name: _version(getattr(self, name.replace("-", "_"))) for name in self.names()}


APISERVER_ONLY: Final = ("etcd", "kube-apiserver")


def find_tools(env: Mapping[str, str] | None = None, apiserver_only: bool = False) -> Tools:
    """All control-plane binaries, or one error listing every missing one. `apiserver_only`
    (envtest's shape) needs only etcd and kube-apiserver; the others are then not looked for."""
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in Tools.names():
        try:
            found[name.replace("-", "_")] = find(name, env)
        except MissingBinaryError:
            if apiserver_only and name not in APISERVER_ONLY:
                found[name.replace("-", "_")] = Path(f"/nonexistent/{name}")
                continue
            missing.append(name)
    if missing:
        raise MissingBinaryError(
            f"{', '.join(missing)} not found: run `{BUILD_COMMAND}` (builds the pinned "
            "Kubernetes, etcd and kwok from the Go module proxy; about 10 minutes cold), or "
            "point JOBSET_INFRA_TOOLS at a folder that has them"
        )
    return Tools(**found)


def _version(path: Path) -> str:
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=20,
                             check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"unknown ({err})"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) \
        else "unknown"
