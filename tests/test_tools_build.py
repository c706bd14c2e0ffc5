"""tools/build.py: files copied out of a pinned module into a group's bin folder."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tools_build", ROOT / "tools" / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tools_build"] = module
    spec.loader.exec_module(module)
    return module


def _fake_go(tmp_path: Path, module_dir: Path) -> dict[str, str]:
    """A `go` whose `mod download -json` answers with `module_dir`, as the real one would."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(f"#!/bin/sh\necho '{json.dumps({'Dir': str(module_dir)})}'\n")
    go.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_a_module_file_is_copied_writable_and_a_script_stays_executable(tmp_path: Path) -> None:
    build = _build()
    module = tmp_path / "mod"
    (module / "python" / "cmd").mkdir(parents=True)
    script = module / "python" / "cmd" / "pulumi-language-python-exec"
    script.write_text("#!/usr/bin/env python3\n")
    schema = module / "schema.json"
    schema.write_text("{}")
    for path in (script, schema):
        path.chmod(0o444)  # the module cache is read-only
    env = _fake_go(tmp_path, module)
    out = tmp_path / "bin"
    out.mkdir()
    build._copy_extra(build.ModuleFile("m", "python/cmd/pulumi-language-python-exec", "exec"),
                      tmp_path, out, env)
    build._copy_extra(build.ModuleFile("m", "schema.json", "provider.schema.json"),
                      tmp_path, out, env)
    assert (out / "exec").read_text() == "#!/usr/bin/env python3\n"
    assert oct((out / "exec").stat().st_mode & 0o777) == "0o755"
    assert oct((out / "provider.schema.json").stat().st_mode & 0o777) == "0o644"


def test_a_file_the_module_lacks_stops_the_build_with_its_name(tmp_path: Path) -> None:
    build = _build()
    env = _fake_go(tmp_path, tmp_path / "empty")
    with pytest.raises(SystemExit, match=r"m has no missing\.json"):
        build._copy_extra(build.ModuleFile("m", "missing.json", "x"), tmp_path, tmp_path, env)


def test_the_pulumi_groups_copy_the_launcher_and_the_schema_their_binaries_read() -> None:
    build = _build()
    groups = {g.name: g for g in build.GROUPS}
    [launcher] = groups["pulumi"].extra_files
    assert launcher.name == "pulumi-language-python-exec"  # beside pulumi-language-python
    [schema] = groups["pulumi-kubernetes"].extra_files
    go_main = (ROOT / "tools" / "pulumi-kubernetes" / "cmd" / "pulumi-resource-kubernetes"
               / "main.go").read_text()
    assert f'SchemaFile = "{schema.name}"' in go_main


def test_a_binarys_compiler_flags_are_part_of_its_groups_key() -> None:
    build = _build()
    [provider] = [g for g in build.GROUPS if g.name == "pulumi-kubernetes"]
    assert provider.binaries[0].gcflags  # the generated SDK built without inlining
    plain = build.Group(provider.name, tuple(
        build.Binary(b.name, b.package, b.stamps, b.tags) for b in provider.binaries),
        provider.env, provider.extra_files)
    # A new -gcflags is a new build, so the cached provider built with full inlining is not reused.
    assert build.group_key(provider, "go1.26") != build.group_key(plain, "go1.26")


def test_the_node_group_keeps_the_control_planes_module_graph() -> None:
    # kubelet and kube-proxy reuse what the kube group compiled (the shared Go build cache)
    # only while every module both groups pin is at the same version, replaces included.
    build = _build()
    kube = build.pinned_versions(ROOT / "tools" / "kube" / "go.mod")
    node = build.pinned_versions(ROOT / "tools" / "node" / "go.mod")
    differing = {m: (v, node[m]) for m, v in kube.items() if node.get(m) != v}
    assert differing == {}

    def replaces(group: str) -> list[str]:
        text = (ROOT / "tools" / group / "go.mod").read_text()
        return sorted(line.strip() for line in text.splitlines() if "=>" in line)

    assert replaces("node") == replaces("kube")


def test_a_go_commands_output_goes_to_its_log_with_its_status_and_cpu(tmp_path: Path) -> None:
    build = _build()
    log = tmp_path / "go-build.log"
    status, cpu = build._run_go(
        ["sh", "-c", "echo 'go: downloading a v1'; echo 'go: downloading b v2' >&2; exit 3"],
        tmp_path, dict(os.environ), log)
    assert (status, log.read_text().count("go: downloading")) == (3, 2)
    assert cpu >= 0
    assert build._downloads(log) == ", 2 modules downloaded"
