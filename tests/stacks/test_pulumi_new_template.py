"""`pulumi new` from templates/jobset-infra-local with the real CLI, offline (marker real).

The template becomes a project whose first stack has the template's config (strings prompted,
structured values from Pulumi.yaml's project-level `config:`), the language host finds the
project's venv and installs nothing, and `jobset-infra plan` of the new stack passes. The
Kubernetes provider plugin is installed from the built binary (`pulumi plugin install --file`):
`pulumi new` installs the plugins a project needs and would otherwise download it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from jobset_infra.cluster.binaries import find
from jobset_infra.cluster.engine import engine_env
from tests.realpulumi import engine_or_skip

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(600)]

TEMPLATE = Path(__file__).resolve().parents[2] / "templates" / "jobset-infra-local"


def _pulumi(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(find("pulumi", env)), *args, "--non-interactive"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300, check=False)


def _plan(project: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jobset_infra.cli", "plan", "--stack", "dev",
                           "--project-dir", str(project), "-o", "json", *more],
                          capture_output=True, text=True, timeout=300, check=False)


def test_pulumi_new_from_the_template_makes_a_project_whose_plan_passes(tmp_path: Path) -> None:
    engine_or_skip()
    env = engine_env(tmp_path / "state")
    for folder in ("home", "backend"):
        (tmp_path / "state" / folder).mkdir(parents=True)
    provider = find("pulumi-resource-kubernetes", env)
    installed = _pulumi(env, tmp_path, "plugin", "install", "resource", "kubernetes",
                        version("pulumi_kubernetes"), "--file", str(provider))
    assert installed.returncode == 0, installed.stdout + installed.stderr

    project = tmp_path / "demo"
    project.mkdir()
    (project / "venv").symlink_to(sys.prefix)  # the venv the template's Pulumi.yaml names
    made = _pulumi(env, tmp_path, "new", str(TEMPLATE), "--yes", "--name", "demo",
                   "--stack", "dev", "--dir", str(project), "--force")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "Nothing to install" in made.stdout + made.stderr  # the host used the venv as is

    stack = yaml.safe_load((project / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    assert stack == {"jobset-infra:platform": "local", "jobset-infra:nodes": "v5e-2x4:4,cpu:2",
                     "jobset-infra:kubeconfig": "~/.cache/jobset-infra/clusters/local/kubeconfig"}
    assert yaml.safe_load((project / "Pulumi.yaml").read_text())["name"] == "demo"

    planned = _plan(project)
    assert planned.returncode == 0, planned.stderr
    report = json.loads(planned.stdout)
    assert report["valid"] and report["errors"] == []
    kinds = {(r["type"], r["name"]) for r in report["resources"]}
    assert ("jobset-infra:index:JobSet", "hello-tpu") in kinds
    assert ("jobset-infra:index:Kueue", "kueue") in kinds

    # A stack value overrides the template's: a pool shape GKE has not fails plan naming it.
    wrong = _pulumi(env, project, "config", "set", "-s", "dev", "jobset-infra:nodes",
                    "v5e-3x3:4")
    assert wrong.returncode == 0, wrong.stdout + wrong.stderr
    refused = _plan(project)
    assert refused.returncode == 1
    assert "jobset-infra:nodes" in refused.stderr + refused.stdout
