"""`jobset-infra plan` on a small throwaway project: tree, YAML output, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobset_infra.cli import main

PROGRAM = """
import pulumi, pulumi_kubernetes as k8s
cfg = pulumi.Config()
settings = cfg.require_object("settings")
if settings.get("replicas", 0) < 0:
    raise ValueError("settings.replicas: must be >= 0\\nsettings.name: required")
k8s.core.v1.Namespace("ns", metadata={"name": settings["name"]})
"""


def _project(tmp_path: Path, config: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: jobset-infra\nmain: stacks\n")
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "__main__.py").write_text(PROGRAM)
    (stacks / "Pulumi.demo.yaml").write_text(config)
    return tmp_path


def test_plan_prints_tree_and_writes_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config:\n  jobset-infra:settings:\n    name: team-a\n")
    out = tmp_path / "out"
    code = main(["plan", "--stack", "demo", "--project-dir", str(project), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    assert "kubernetes:core/v1:Namespace" in captured.out
    assert "Planning stack demo" in captured.err
    [written] = sorted(out.iterdir())
    assert yaml.safe_load(written.read_text())["metadata"]["name"] == "team-a"


def test_program_errors_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config:\n  settings: {name: x, replicas: -1}\n")
    code = main(["plan", "--stack", "demo", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 1
    assert "error: settings.replicas: must be >= 0" in err
    assert "error: settings.name: required" in err
    assert "Traceback" not in err


def test_unknown_stack_lists_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config: {}\n")
    code = main(["plan", "--stack", "prod", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 1
    assert "no stack 'prod'" in err
    assert "(stacks: demo)" in err


def test_broken_stack_yaml_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config: [unclosed\n")
    assert main(["plan", "--stack", "demo", "--project-dir", str(project)]) == 1
    assert "not valid YAML" in capsys.readouterr().err
