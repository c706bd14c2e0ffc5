"""Regressions found by acceptance testing the commands as a user runs them (notes in
/work/notes/acceptance.md): each test runs the real console script."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_controller_config_that_is_not_text_is_a_named_error(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_bytes(bytes(range(128, 256)))
    done = subprocess.run([BIN / "jobset-controller", "--config", str(config)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"--config: {config} is not UTF-8 text" in done.stderr


@pytest.mark.slow
def test_controller_stops_at_once_on_sigterm_while_its_caches_cannot_sync() -> None:
    """The kubelet sends SIGTERM and waits 30 s; the cache-sync timeout is 120 s."""
    proc = subprocess.Popen(
        [BIN / "jobset-controller", f"--master=http://127.0.0.1:{_closed_port()}",
         "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the first failed list: the event loop is running
        assert "failed" in line, line
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        code = proc.wait(timeout=20)
        assert (code, time.monotonic() - started < 10) == (0, True)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()



def test_plan_out_that_cannot_be_a_folder_is_a_named_error(tmp_path: Path) -> None:
    from jobset_infra.plan.out_folder import OutFolderError, write_plan

    in_the_way = tmp_path / "plan"
    in_the_way.write_text("not a folder")
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
    for out in (in_the_way, in_the_way / "sub"):
        with pytest.raises(OutFolderError,
                           match=f"^--out {re.escape(str(out))}: cannot write there"):
            write_plan([obj], [], out)
    assert write_plan([obj], [], tmp_path / "fresh").objects[0].name == "000-namespace-x.yaml"


@pytest.mark.parametrize("where", [pytest.param("folder", id="crd -o onto a folder"),
                                   pytest.param("missing/crd.yaml", id="crd -o under a file")])
def test_crd_output_that_cannot_be_written_is_a_named_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    from jobset_infra.cli import main

    (tmp_path / "folder").mkdir()
    (tmp_path / "missing").write_text("a file where a folder should be")
    target = tmp_path / where
    assert main(["crd", "-o", str(target)]) == 1
    assert capsys.readouterr().err.startswith(f"{target}: cannot write the CRD")


async def test_leader_election_in_a_missing_namespace_is_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """`jobset-controller --leader-elect` against a cluster without the Lease namespace used to
    wait silently forever (the failure was logged at debug level only)."""
    from jobset_infra.controller.runtime.manager import start_controller
    from jobset_infra.sim.apiserver.server import Sim
    from jobset_infra.sim.command import register_crd
    from tests.e2e.conftest import until
    from tests.integration.conftest import fast_config

    config = fast_config(leaderElection={"leaderElect": True, "resourceNamespace": "nowhere",
                                         "leaseDuration": "1s", "renewDeadline": "800ms",
                                         "retryPeriod": "200ms"})
    caplog.set_level("WARNING", logger="jobset_infra.controller.runtime.leader")
    async with Sim(port=0) as sim:
        register_crd(sim.store)
        ctl = await start_controller(config, url=sim.url)
        try:
            record = await until(lambda: next((r for r in caplog.records
                                               if "cannot create Lease" in r.getMessage()), None),
                                 "a warning about the Lease")
        finally:
            await ctl.stop()
    assert record is not None
    assert record.levelname == "WARNING"
    assert 'namespaces "nowhere" not found' in record.getMessage()
    assert not ctl.is_leader


@pytest.mark.slow
def test_the_watch_the_demo_suggests_works_with_the_real_kubectl(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The demo used to end with `kubectl get jobsets,jobs,pods -w`, which kubectl refuses
    ("you may only specify a single resource type")."""
    from jobset_infra.cli import main
    from jobset_infra.sim.apiserver.server import SimThread
    from jobset_infra.sim.command import register_crd

    assert main(["sim", "--demo"]) == 0
    hint = capsys.readouterr().out.strip().splitlines()[-1]
    command = re.search(r"watch(?: it)?: (?:\S*/)?kubectl (get \S+ -w)", hint)
    assert command is not None, hint
    with SimThread(port=0) as sim:
        sim.call(register_crd)
        kubeconfig = sim.kubeconfig(tmp_path / "kubeconfig")
        with pytest.raises(subprocess.TimeoutExpired):  # still watching: not refused
            subprocess.run([BIN / "kubectl", f"--kubeconfig={kubeconfig}",
                            *command.group(1).split()], capture_output=True, timeout=3,
                           check=True)


@pytest.mark.parametrize(
    ("metadata", "problem"),
    [
        pytest.param({}, "metadata.name: Required value: name or generateName is required",
                     id="a JobSet without a name is refused as the API server refuses it"),
        pytest.param({"name": "Bad_Name"}, 'metadata.name: Invalid value: "Bad_Name": a lowercase'
                     " RFC 1123 subdomain", id="a name that is no DNS subdomain is refused"),
        pytest.param({"name": 5}, "metadata.name: Invalid value: 5: must be a string",
                     id="a number as name is one error, not CEL overload noise"),
        pytest.param({"generateName": "train-"}, None, id="generateName alone is enough"),
    ],
)
def test_validate_checks_the_name_as_the_api_server_does(
    metadata: dict[str, object], problem: str | None
) -> None:
    from jobset_infra.api.check import check_jobset

    manifest = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                "metadata": metadata, "spec": {}}
    errors = [str(e) for e in check_jobset(manifest).errors]
    if problem is None:
        assert errors == []
    else:
        assert len(errors) == 1 and errors[0].startswith(problem), errors
