"""`jobset-infra cluster up | status | down` as a user runs them, with the real kubectl."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.realcluster import tools_or_skip
from tests.realnodes import node_tools_or_skip
from tests.waiting import until_sync

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, env: dict[str, str] | None = None,
        timeout: float = 180) -> subprocess.CompletedProcess[str]:
    command = [str(BIN / "jobset-infra"), "cluster", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
        except KeyboardInterrupt:
            # The test run was stopped (Ctrl-C, SIGTERM to its group): `cluster up` got the
            # signal too and is stopping what it started. subprocess.run would SIGKILL it
            # midway, leaving etcd behind; let it finish.
            proc.wait(timeout=60)
            raise
    return subprocess.CompletedProcess(command, proc.returncode, out, err)


def kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run([str(BIN / "kubectl"), f"--kubeconfig={kubeconfig}", *args],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_up_without_the_tools_names_the_command_that_builds_them(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "JOBSET_INFRA_CACHE": str(tmp_path / "empty"),
           "HOME": str(tmp_path)}
    done = cli("up", "--dir", str(tmp_path / "c"), env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "not found: run `make tools`" in done.stderr


def test_up_reports_a_component_that_exits_with_its_log(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"):
        path = tools / name
        path.write_text("#!/bin/sh\necho \"$0: no space left on device\" >&2\nexit 1\n")
        path.chmod(0o755)
    env = {**os.environ, "JOBSET_INFRA_TOOLS": str(tools)}
    done = cli("up", "--dir", str(tmp_path / "c"), env=env)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "etcd exited during start-up" in done.stderr
    assert "no space left on device" in done.stderr


def test_status_and_down_of_no_cluster(tmp_path: Path) -> None:
    status = cli("status", "--dir", str(tmp_path / "none"))
    assert (status.returncode, "no cluster recorded" in status.stderr) == (1, True)
    down = cli("down", "--dir", str(tmp_path / "none"))
    assert (down.returncode, "nothing to stop" in down.stdout) == (0, True)


def test_status_as_json_says_which_components_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recorded cluster whose processes are gone: every component reported, exit 1."""
    from jobset_infra.cli import main

    folder = tmp_path / "c"
    folder.mkdir()
    ports = dict(etcd_client=1, etcd_peer=2, apiserver=3, controller_manager=4, scheduler=5,
                 kwok=6)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (folder / "state.json").write_text(json.dumps({
        "ports": ports, "admin_token": "t", "nodes": "cpu:1",
        "processes": [{"name": "etcd", "pid": int(dead), "binary": "/bin/etcd",
                       "log": str(folder / "etcd.log")}]}))
    assert main(["cluster", "status", "--dir", str(folder), "-o", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["recorded"] is True and report["running"] is False
    assert report["components"] == [{"name": "etcd", "pid": int(dead), "running": False}]
    assert report["url"] == "https://127.0.0.1:3" and report["nodePools"] == ["default-pool"]
    assert main(["cluster", "status", "--dir", str(tmp_path / "none"), "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["recorded"] is False


def processes_in(folder: Path) -> list[str]:
    """The command lines of live processes that name `folder` (the cluster's own)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        if str(folder) in text:
            found.append(text)
    return found


@pytest.mark.real
def test_up_stopped_by_sigterm_stops_what_it_started(tmp_path: Path) -> None:
    """A `cluster up` killed mid-start (a CI timeout, `kill`) leaves no process behind: they
    run in their own session, so only `up` itself can stop them."""
    tools_or_skip()
    folder = tmp_path / "c"
    up = subprocess.Popen([str(BIN / "jobset-infra"), "cluster", "up", "--dir", str(folder)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert up.stdout is not None
    for line in up.stdout:  # the test's timeout bounds this
        if "starting kube-controller-manager" in line:
            break
    assert any("kube-apiserver" in p for p in processes_in(folder)), "nothing started yet"
    up.send_signal(signal.SIGTERM)
    assert up.wait(timeout=60) == 128 + signal.SIGTERM
    assert processes_in(folder) == []


@pytest.mark.real
def test_the_tpu_example_runs_to_completed_one_pool_per_slice() -> None:
    """README's session: cluster up with TPU pools and our controller (from its image, on the
    cluster's system node), kubectl apply the example, its Pods exit 0, the JobSet is Completed
    and deleted with its Jobs; down leaves no process or file."""
    tools_or_skip()
    node_tools_or_skip()
    # A short folder, as the default one is: kubelet's unix sockets live under its root folder
    # in the cluster's, and a socket's path has at most 107 bytes (pytest's tmp_path is longer).
    folder = Path(tempfile.mkdtemp(prefix="jsi-cmd-")) / "cluster"
    up = cli("up", "--nodes", "v5e-2x4:4", "--controller", "--dir", str(folder),
             "--name", "cmd-test")
    assert up.returncode == 0, up.stderr + up.stdout
    kubeconfig = Path(cli("status", "--dir", str(folder), "--kubeconfig").stdout.strip())
    state = json.loads((folder / "state.json").read_text())
    pids = [p["pid"] for p in state["processes"]]
    try:
        again = cli("up", "--dir", str(folder))
        assert (again.returncode, "already running" in again.stderr) == (1, True)
        kubectl(kubeconfig, "apply", "-f", str(ROOT / "examples/tpu-multislice/jobset.yaml"))
        selector = "-l=jobset.sigs.k8s.io/jobset-name=tpu-multislice"

        def all_running() -> bool:
            phases = kubectl(kubeconfig, "get", "pods", selector,
                             "-o=jsonpath={.items[*].status.phase}").split()
            return phases == ["Running"] * 8

        until_sync(all_running, "8 Pods Running", timeout=120)
        pools = kubectl(kubeconfig, "get", "pods", selector, "-o=jsonpath={range .items[*]}"
                        "{.metadata.labels.batch\\.kubernetes\\.io/job-name} "
                        "{.spec.nodeName}{\"\\n\"}{end}")
        by_job: dict[str, set[str]] = {}
        for line in pools.splitlines():
            job, node = line.split()
            by_job.setdefault(job, set()).add(node.rsplit("-node-", 1)[0])
        assert len(by_job) == 4 and all(len(p) == 1 for p in by_job.values()), by_job
        assert len(set().union(*by_job.values())) == 4  # one pool per slice
        kubectl(kubeconfig, "annotate", "pods", selector, "jobset-infra.dev/exit-code=0")

        def completed() -> bool:
            return kubectl(kubeconfig, "get", "jobset", "tpu-multislice",
                           "-o=jsonpath={.status.terminalState}") == "Completed"

        until_sync(completed, "the JobSet Completed", timeout=120)
        # The JobSet CRD was served before the garbage collector started, so it knows JobSets
        # now, not only after its next 30 s discovery: a foreground deletion ends at once.
        kubectl(kubeconfig, "delete", "jobset", "tpu-multislice", "--cascade=foreground",
                "--timeout=10s")
        assert kubectl(kubeconfig, "get", "jobs", selector, "-o=name") == ""
        assert cli("status", "--dir", str(folder)).returncode == 0
    finally:
        down = cli("down", "--dir", str(folder))
    assert down.returncode == 0, down.stderr
    assert not folder.exists()
    folder.parent.rmdir()
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text(
        ).rsplit(")", 1)[-1].split()[0], pid
