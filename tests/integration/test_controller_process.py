"""`jobset-controller` as a process and the in-process endpoints: /healthz, /readyz, /metrics with
controller-runtime's names, graceful SIGTERM, config errors, and exec-plugin kubeconfigs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.controller.runtime.main import main
from jobset_infra.controller.runtime.manager import run_controller
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import Cluster, fast_config
from tests.waiting import until

METRIC_NAMES = (
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_time_seconds_bucket",
    "controller_runtime_reconcile_errors_total",
    "workqueue_adds_total",
    "workqueue_depth",
    "workqueue_queue_duration_seconds_bucket",
    "workqueue_work_duration_seconds_bucket",
    "workqueue_retries_total",
    "workqueue_longest_running_processor_seconds",
    "workqueue_unfinished_work_seconds",
    "rest_client_requests_total",
    "leader_election_master_status",
    "jobset_completed_total",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


async def test_endpoints_serve_health_readiness_and_metrics(cluster: Cluster) -> None:
    config = fast_config(
        controller={"watchNamespace": cluster.namespace},
        health={"healthProbeBindAddress": "127.0.0.1:0"},
        metrics={"bindAddress": "127.0.0.1:0", "secureServing": False},  # plain HTTP on loopback
        leaderElection={
            "leaderElect": True,
            "resourceNamespace": cluster.namespace,
            "leaseDuration": "2s",
            "renewDeadline": "1s",
            "retryPeriod": "200ms",
        },
    )
    ctl = await cluster.start_controller(config)
    await ctl.wait_leader(5)
    await cluster.create_jobset(make_jobset("js").replicated_job("a"))
    await until(lambda: _len(cluster.jobs()), "a job")
    await cluster.set_job_status("js-a-0", "completed")
    await until(lambda: cluster.condition("js", "Completed"), "completed")
    health, metrics = ctl.ports["health"], ctl.ports["metrics"]
    loop = asyncio.get_running_loop()
    healthz = await loop.run_in_executor(None, http_get, f"http://127.0.0.1:{health}/healthz")
    readyz = await loop.run_in_executor(None, http_get, f"http://127.0.0.1:{health}/readyz")
    assert healthz[0] == 200 and readyz[0] == 200

    async def scraped() -> str | None:
        code, text = await loop.run_in_executor(
            None, http_get, f"http://127.0.0.1:{metrics}/metrics"
        )
        return text if code == 200 and "jobset_completed_total{" in text else None

    text = await until(scraped, "metrics with jobset_completed_total")
    for name in METRIC_NAMES:
        assert f"\n{name}" in text, f"/metrics lacks {name}"
    assert 'controller_runtime_reconcile_total{controller="jobset",result="success"}' in text
    assert f'jobset_completed_total{{jobset_name="js",namespace="{cluster.namespace}"}} 1.0' in text


async def _len(coro: Any) -> int:
    return len(await coro)


def test_bad_flag_exits_2_with_the_flag_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--kube-api-burst=0"]) == 2
    assert "--kube-api-burst" in capsys.readouterr().err


@pytest.fixture
def sim_url() -> Iterator[str]:
    from jobset_infra.sim.apiserver.server import SimThread
    from jobset_infra.sim.command import register_crd

    with SimThread(port=0) as sim:
        sim.call(register_crd)
        yield sim.url


@pytest.mark.slow
def test_process_serves_probes_and_stops_gracefully_on_sigterm(sim_url: str) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jobset_infra.controller.runtime.main",
            f"--master={sim_url}",
            f"--health-probe-bind-address=127.0.0.1:{port}",
            "--metrics-bind-address=0",
            "--log-format=json",
            "--leader-elect=false",
        ],
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        deadline = time.monotonic() + 20
        while http_get(f"http://127.0.0.1:{port}/readyz")[0] != 200:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the controller never became ready"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    logs = [
        json.loads(line)
        for line in (proc.stderr.read() if proc.stderr else "").splitlines()
        if line.startswith("{")
    ]
    assert any(entry["msg"] == "shutting down" for entry in logs)
    assert all({"ts", "level", "logger", "msg"} <= set(entry) for entry in logs)


@pytest.mark.slow
async def test_kubeconfig_with_an_exec_credential_plugin(tmp_path: Path) -> None:
    from jobset_infra.sim.apiserver.server import Sim, write_kubeconfig
    from jobset_infra.sim.command import register_crd

    plugin = tmp_path / "auth-plugin.py"
    plugin.write_text(
        textwrap.dedent("""
        import json
        print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1",
                          "kind": "ExecCredential", "status": {"token": "s3cret"}}))
    """)
    )
    async with Sim(port=0, token="s3cret") as sim:
        register_crd(sim.store)
        path = write_kubeconfig(tmp_path / "kubeconfig", sim.url)
        config: dict[str, Any] = __import__("yaml").safe_load(path.read_text())
        config["users"][0]["user"] = {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": [str(plugin)],
                "interactiveMode": "Never",
            }
        }
        path.write_text(__import__("yaml").safe_dump(config))
        async with run_controller(fast_config(), kubeconfig=str(path)) as ctl:
            await ctl.wait_leader(5)
            assert ctl.controller.synced()
            assert (
                ctl.metrics.sample(
                    "rest_client_requests_total",
                    {"code": "200", "method": "GET", "host": sim.url.removeprefix("http://")},
                )
                >= 3
            )


async def test_reconcile_logs_are_json_with_namespace_name_and_reconcile_id(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    from jobset_infra.controller.runtime.logs import JsonFormatter

    caplog.set_level(logging.INFO, logger="jobset_infra.controller.runtime.controller")
    ctl = await cluster.start_controller()
    await ctl.wait_leader(5)
    await cluster.create_jobset(make_jobset("js").replicated_job("a", replicas=2))

    async def reconcile_logs() -> list[dict[str, Any]]:
        return [
            json.loads(JsonFormatter().format(r))
            for r in caplog.records
            if r.name.endswith("runtime.controller") and r.getMessage() == "reconciled"
        ]

    entries = await until(reconcile_logs, "a 'reconciled' log record")
    entry = entries[0]
    assert {"ts", "level", "logger", "msg"} <= set(entry)
    # what Cloud Logging reads from a JSON line: the severity and the message
    assert (entry["severity"], entry["message"]) == ("INFO", "reconciled")
    assert (entry["controller"], entry["namespace"], entry["name"]) == (
        "jobset",
        cluster.namespace,
        "js",
    )
    assert entry["writes"] >= 1
    assert len(entry["reconcileID"]) == 32
    ids = [e["reconcileID"] for e in entries]
    assert len(set(ids)) == len(ids), "each reconcile has its own id"


@pytest.mark.sim_only("needs the sim's fault injection")
async def test_serve_exits_1_when_the_lease_is_lost(cluster: Cluster) -> None:
    """`jobset-controller` exits (code 1, so the Deployment restarts it as a standby) when its
    Lease cannot be renewed within renewDeadline."""
    from jobset_infra.controller.runtime.main import EXIT_LOST_LEASE, serve
    from jobset_infra.controller.runtime.resources import LEASES
    from jobset_infra.sim.apiserver.faults import Fault, FaultInjector, FaultRule

    config = fast_config(
        controller={"watchNamespace": cluster.namespace},
        leaderElection={
            "leaderElect": True,
            "resourceName": "exit-test",
            "resourceNamespace": cluster.namespace,
            "leaseDuration": "1s",
            "renewDeadline": "800ms",
            "retryPeriod": "200ms",
        },
    )
    loop = asyncio.get_running_loop()
    serving = asyncio.create_task(serve(config, url=cluster.sim.url))
    broken = FaultInjector(
        rules=(FaultRule(Fault.ERROR, code=503, resources=frozenset({"leases"})),)
    )
    try:

        async def held() -> bool:
            try:
                lease = await cluster.api.get(LEASES, "exit-test", cluster.namespace)
            except Exception:
                return False
            return bool((lease.get("spec") or {}).get("holderIdentity"))

        await until(held, "the controller holds its Lease")
        assert not serving.done()
        cluster.sim.sim.add_hook(broken)
        assert await asyncio.wait_for(serving, 15) == EXIT_LOST_LEASE
    finally:
        with contextlib.suppress(ValueError):  # not added if the Lease was never held
            cluster.sim.sim.remove_hook(broken)
        if not serving.done():
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
        for sig in (signal.SIGTERM, signal.SIGINT):  # serve() installed handlers on this loop
            loop.remove_signal_handler(sig)
