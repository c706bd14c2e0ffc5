"""The idle controller stays light: started from a kubeconfig with static credentials and with
secure metrics (a self-signed certificate), once ready and before any JobSet it has loaded none
of kubernetes_asyncio's client, cryptography or the CEL machinery. Modules are counted, never
memory or time (docs/architecture.md has the measured RSS)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from jobset_infra.sim.apiserver.server import SimThread, write_kubeconfig
from jobset_infra.sim.command import register_crd

REPO = Path(__file__).resolve().parents[2]

# Runs the controller; a thread waits until /readyz answers 200, asks /metrics over TLS (any
# HTTP answer proves the self-signed certificate serves), writes what was imported, then stops
# the controller with SIGTERM as a kubelet would.
_PROBE = """
import json, os, signal, ssl, sys, threading, time, urllib.error, urllib.request
health, metrics, out = sys.argv[1], sys.argv[2], sys.argv[3]

def ready():
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=2).status
    except (OSError, urllib.error.URLError):
        return 0

def tls_status():
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        return urllib.request.urlopen(f"https://127.0.0.1:{metrics}/metrics", timeout=5,
                                      context=context).status
    except urllib.error.HTTPError as err:
        return err.code

def watch():
    deadline = time.monotonic() + 100
    while ready() != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    status = tls_status()
    with open(out, "w") as handle:
        json.dump({"ready": ready(), "metrics": status, "modules": sorted(sys.modules)}, handle)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=watch, daemon=True).start()
from jobset_infra.controller.runtime.main import main
sys.exit(main(sys.argv[4:]))
"""

# Loaded only where used: by a kubeconfig that needs an exec plugin or auth provider, by the
# metrics certificate's child process, by the first JobSet's spec check.
_NOT_WHEN_IDLE = ("kubernetes_asyncio", "cryptography", "celpy", "lark", "pendulum",
                  "jobset_infra.api.crd.cel", "jobset_infra.sim")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.slow
def test_the_idle_controller_loads_only_what_idling_needs(tmp_path: Path) -> None:
    with SimThread(port=0, token="s3cret") as sim:
        assert sim.sim is not None
        register_crd(sim.sim.store)
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", sim.url, token="s3cret")
        health, metrics, out = free_port(), free_port(), tmp_path / "idle.json"
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, str(health), str(metrics), str(out),
             f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--log-level=error",
             f"--health-probe-bind-address=127.0.0.1:{health}",
             f"--metrics-bind-address=127.0.0.1:{metrics}"],
            capture_output=True, text=True, timeout=150, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    seen = json.loads(out.read_text())
    assert seen["ready"] == 200  # it synced its caches through the kubeconfig's credentials
    assert seen["metrics"] in (401, 403)  # TLS served; the scrape was refused for no token
    modules = seen["modules"]
    loaded = [m for m in modules if any(m == n or m.startswith(n + ".") for n in _NOT_WHEN_IDLE)]
    assert loaded == []
    # About 560 today; kubernetes_asyncio's client alone is 1,232 more.
    assert len(modules) < 650, len(modules)
