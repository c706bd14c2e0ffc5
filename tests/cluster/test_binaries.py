"""Where the real binaries are looked for, and what a missing one says."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobset_infra.cluster.binaries import MissingBinaryError, find, find_tools


def executable(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("holders", "winner"),
    [
        pytest.param(("explicit", "cache", "assets", "path"), "explicit",
                     id="JOBSET_INFRA_TOOLS wins over everything"),
        pytest.param(("cache", "assets", "path"), "cache",
                     id="make tools' folder wins over KUBEBUILDER_ASSETS and PATH"),
        pytest.param(("assets", "path"), "assets", id="KUBEBUILDER_ASSETS wins over PATH"),
        pytest.param(("path",), "path", id="PATH is the last resort"),
    ],
)
def test_lookup_order(tmp_path: Path, holders: tuple[str, ...], winner: str) -> None:
    folders = {"explicit": tmp_path / "explicit", "cache": tmp_path / "cache/tools/bin",
               "assets": tmp_path / "assets", "path": tmp_path / "path"}
    for holder in holders:
        executable(folders[holder], "kube-apiserver")
    env = {"JOBSET_INFRA_TOOLS": str(folders["explicit"]), "JOBSET_INFRA_CACHE":
           str(tmp_path / "cache"), "KUBEBUILDER_ASSETS": str(folders["assets"]),
           "PATH": str(folders["path"])}
    assert find("kube-apiserver", env) == folders[winner] / "kube-apiserver"


def test_missing_tools_are_named_with_the_command_that_builds_them(tmp_path: Path) -> None:
    env = {"JOBSET_INFRA_CACHE": str(tmp_path), "PATH": ""}
    executable(tmp_path / "tools/bin", "etcd")
    with pytest.raises(MissingBinaryError) as err:
        find_tools(env)
    message = str(err.value)
    assert "kube-apiserver, kube-controller-manager, kube-scheduler, kwok not found" in message
    assert "make tools" in message


def test_envtest_shape_needs_only_etcd_and_the_apiserver(tmp_path: Path) -> None:
    env = {"JOBSET_INFRA_CACHE": str(tmp_path), "PATH": ""}
    for name in ("etcd", "kube-apiserver"):
        executable(tmp_path / "tools/bin", name)
    tools = find_tools(env, apiserver_only=True)
    assert tools.kube_apiserver == tmp_path / "tools/bin/kube-apiserver"
