"""`jobset-infra sim`: argument checks, serving kubectl, clean shutdown, and the demo."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobset_infra import cli
from jobset_infra.sim import command
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.tool_paths import shown

KUBECTL = Path(sys.executable).parent / "kubectl"
REPO = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    ("argv", "want_in_error"),
    [
        pytest.param(["--port", "70000"], "--port 70000: use 0..65535", id="a port out of range"),
        pytest.param(["--nodes", "v5e-3x3:1"], "topology '3x3' does not exist",
                     id="a TPU topology that does not exist"),
        pytest.param(["--nodes", "v5e-2x4"], "needs a positive count", id="nodes without a count"),
        pytest.param(["--latency", "-1"], "--latency -1.0", id="a negative latency"),
        pytest.param(["--faults", "error:code=418"], "--faults 'error:code=418': code: 418",
                     id="a fault code that cannot be injected"),
        pytest.param(["--auto-complete", "-2"], "--auto-complete -2.0",
                     id="a negative auto-complete time"),
        pytest.param(["--keep"], "--keep: only with --demo", id="--keep without --demo"),
    ],
)
def test_bad_arguments_exit_2_with_a_message_naming_the_flag(
    argv: list[str], want_in_error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert command.run(parse(*argv)) == 2
    err = capsys.readouterr().err
    assert err.startswith("jobset-infra sim: ") and want_in_error in err
    assert "Traceback" not in err


def test_options_combine_latency_and_fault_rules() -> None:
    opts = command.options(parse("--latency", "5", "--faults", "error:code=429,rate=0.1"))
    assert [(r.fault.value, r.delay, r.code) for r in opts.faults] == [
        ("latency", 0.005, 500), ("error", 0.0, 429)
    ]
    assert opts.port == command.DEFAULT_PORT and opts.job_controller


@pytest.mark.parametrize("demo", [[], ["--demo"]], ids=["the server", "the demo"])
def test_a_free_port_is_used_unless_one_is_given(demo: list[str]) -> None:
    """A fixed default port (8080) let kubectl quietly reach whichever server held it."""
    assert command.DEFAULT_PORT == 0
    assert command.options(parse(*demo)).port == 0
    assert command.options(parse(*demo, "--port", "9000")).port == 9000


def _start(*argv: str) -> tuple[subprocess.Popen[str], list[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobset_infra.cli", "sim", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("Press Ctrl-C"):
            return proc, lines
    proc.kill()
    _, err = proc.communicate()
    raise AssertionError(f"sim did not start: {lines} {err}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_the_server_serves_kubectl_and_stops_cleanly_on_a_signal(sig: signal.Signals) -> None:
    proc, lines = _start("--port", "0", "--nodes", "v5e-2x4:1,cpu:1")
    try:
        url = re.search(r"Kubernetes API at (http://127\.0\.0\.1:\d+)", lines[0])
        assert url is not None, lines
        kubeconfig = next(line.split("=", 1)[1] for line in lines if "KUBECONFIG=" in line)
        assert Path(kubeconfig).is_absolute()
        # The kubeconfig is the way in; no --server line to copy with a port in it.
        assert f"  {shown('kubectl')} get jobsets,jobs,pods -A" in lines
        assert not any("--server" in line for line in lines)
        nodes = subprocess.run(
            [str(KUBECTL), "--kubeconfig", kubeconfig, "get", "nodes", "-o", "name"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.split()
        assert nodes == [
            "node/gke-sim-default-pool-node-0",
            "node/gke-sim-v5e-2x4-0-node-0", "node/gke-sim-v5e-2x4-0-node-1",
        ]
        crd = subprocess.run(
            [str(KUBECTL), "--server", url[1], "get", "crd", "-o", "name"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.split()
        assert crd == ["customresourcedefinition.apiextensions.k8s.io/jobsets.jobset.x-k8s.io"]
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "shutting down" in out and "Traceback" not in err


@pytest.mark.parametrize(
    ("family", "host"),
    [
        pytest.param(socket.AF_INET, "127.0.0.1", id="a server on 127.0.0.1"),
        # We could bind 127.0.0.1 beside it, but kubectl's localhost may reach either.
        pytest.param(socket.AF_INET6, "::1", id="a server on ::1 only"),
    ],
)
def test_a_port_another_server_answers_on_is_refused_in_one_line(
    family: socket.AddressFamily, host: str
) -> None:
    with socket.socket(family) as busy:
        busy.bind((host, 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-m", "jobset_infra.cli", "sim", "--port", str(port)],
            capture_output=True, text=True, timeout=30, env=env, cwd=REPO, check=False,
        )
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith(f"jobset-infra sim: port {port} already answers on {host}: ")
    assert "leave out --port" in line
    assert done.stdout == ""  # no banner: nothing started


def test_a_port_nothing_answers_on_is_not_refused() -> None:
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # bound, not listening: nothing answers
        found = asyncio.run(command.answering(port))
    assert found is None


def test_the_demo_runs_a_multislice_jobset_through_a_restart_to_completion(
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    assert cli.main(["sim", "--demo"]) == 0
    out = capsys.readouterr().out
    assert time.monotonic() - started < 30
    for step in (
        "8 TPU nodes in 4 v5e 2x4 slice pools",
        "created JobSet default/pretrain",
        "8/8 pods Running, each slice on its own pool",
        "failing slice pretrain-slice-1",
        "restart 1 of max 3",
        "all 4 slices recreated",
        "JobSet pretrain Completed (AllJobsCompleted: jobset completed successfully), restarts: 1",
    ):
        assert step in out, f"missing {step!r} in:\n{out}"
    pools = re.findall(r"Job pretrain-slice-\d -> node pool (v5e-2x4-\d)", out)
    assert sorted(pools) == ["v5e-2x4-0", "v5e-2x4-1", "v5e-2x4-2", "v5e-2x4-3"]
    # It used to print a kubectl line for a server that stopped 0.2 s later.
    assert "--server" not in out and "KUBECONFIG=" not in out
    tool = shown("jobset-infra")
    assert f"Look at it with kubectl: {tool} sim --demo --keep" in out
    assert f"Run your own: {tool} sim --nodes v5e-2x4:4 --controller --auto-complete 5" in out


@pytest.mark.slow
def test_the_demo_with_keep_serves_kubectl_until_ctrl_c() -> None:
    proc, lines = _start("--demo", "--keep")
    try:
        assert any("JobSet pretrain Completed" in line for line in lines), lines
        kubeconfig = next(line.split("=", 1)[1] for line in lines if "KUBECONFIG=" in line)
        assert f"  {shown('kubectl')} get jobsets,jobs,pods" in lines
        jobset = json.loads(subprocess.run(
            [str(KUBECTL), "--kubeconfig", kubeconfig, "get", "jobset", "pretrain", "-o", "json"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout)
        assert jobset["status"]["restarts"] == 1
        assert {c["type"]: c["status"] for c in jobset["status"]["conditions"]}["Completed"] == (
            "True")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "shutting down" in out and "Traceback" not in err


@pytest.mark.slow
def test_with_the_controller_a_jobset_applied_by_kubectl_runs_to_completion(
    tmp_path: Path,
) -> None:
    jobset = (
        make_jobset("train", "default")
        .exclusive("cloud.google.com/gke-nodepool")
        .replicated_job("slice", replicas=2, parallelism=2)
        .pod_spec("slice", restartPolicy="Never",
                  containers=[{"name": "main", "image": "busybox:1.36",
                               "resources": {"limits": {"google.com/tpu": "4"}}}],
                  tolerations=[{"key": "google.com/tpu", "operator": "Exists"}],
                  nodeSelector={"cloud.google.com/gke-tpu-topology": "2x4"})
        .obj()
    )
    manifest = tmp_path / "jobset.json"
    manifest.write_text(json.dumps(jobset))
    proc, lines = _start("--port", "0", "--nodes", "v5e-2x4:2", "--controller",
                         "--auto-complete", "0.3")
    try:
        kubeconfig = next(line.split("=", 1)[1] for line in lines if "KUBECONFIG=" in line)

        def kubectl(*args: str) -> str:
            return subprocess.run(
                [str(KUBECTL), "--kubeconfig", kubeconfig, *args],
                capture_output=True, text=True, timeout=60, check=True,
            ).stdout

        assert "jobset.jobset.x-k8s.io/train created" in kubectl("create", "-f", str(manifest))
        kubectl("wait", "--for=condition=Completed", "jobset/train", "--timeout=30s")
        jobs = json.loads(kubectl("get", "jobs", "-o", "json"))["items"]
        pools = {
            j["metadata"]["name"]: j["spec"]["template"]["spec"]["nodeSelector"][
                "cloud.google.com/gke-nodepool"]
            for j in jobs
        }
        assert sorted(pools.values()) == ["v5e-2x4-0", "v5e-2x4-1"]
        pods = json.loads(kubectl("get", "pods", "-o", "json"))["items"]
        assert len(pods) == 4
        for pod in pods:  # each slice ran on the nodes of its own pool only
            pool = pools[pod["metadata"]["labels"]["job-name"]]
            assert pod["spec"]["nodeName"].startswith(f"gke-sim-{pool}-node-")
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err


def test_a_kubeconfig_that_cannot_be_written_is_an_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert command.run(parse("--port", "0", "--kubeconfig", "/proc/no-such-dir/kubeconfig")) == 1
    err = capsys.readouterr().err
    assert "cannot write the kubeconfig to /proc/no-such-dir/kubeconfig" in err
    assert "Traceback" not in err
