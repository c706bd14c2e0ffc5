"""A real etcd + kube-apiserver from envtest binaries ($KUBEBUILDER_ASSETS), as in envtest:
no kubelet, no controller-manager, so no garbage collector and no Job controller.

Only used when KUBEBUILDER_ASSETS is set; the tests that need it are skipped otherwise.
Authentication is a static admin token; the serving certificate is self-signed by the apiserver.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from jobset_infra.controller.runtime.auth import ClusterAccess

TOKEN = "envtest-admin-token"


def assets_dir() -> Path | None:
    value = os.environ.get("KUBEBUILDER_ASSETS")
    return Path(value) if value else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EnvTest:
    url: str
    workdir: Path
    processes: list[subprocess.Popen[bytes]]

    def access(self) -> ClusterAccess:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE

        async def token(_: bool) -> str:
            return f"Bearer {TOKEN}"

        return ClusterAccess(host=self.url, ssl_context=context, token_source=token)

    def stop(self) -> None:
        for proc in reversed(self.processes):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start(assets: Path, timeout: float = 60.0) -> EnvTest:
    """Start etcd and kube-apiserver from `assets`; wait until /readyz answers."""
    workdir = Path(tempfile.mkdtemp(prefix="envtest-"))
    etcd_client, etcd_peer, secure = _free_port(), _free_port(), _free_port()
    key = workdir / "sa.key"
    subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
    (workdir / "tokens.csv").write_text(f'{TOKEN},admin,admin,"system:masters"\n')
    etcd = subprocess.Popen(
        [
            str(assets / "etcd"),
            "--data-dir",
            str(workdir / "etcd"),
            "--listen-client-urls",
            f"http://127.0.0.1:{etcd_client}",
            "--advertise-client-urls",
            f"http://127.0.0.1:{etcd_client}",
            "--listen-peer-urls",
            f"http://127.0.0.1:{etcd_peer}",
            "--initial-advertise-peer-urls",
            f"http://127.0.0.1:{etcd_peer}",
            "--initial-cluster",
            f"default=http://127.0.0.1:{etcd_peer}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    apiserver = subprocess.Popen(
        [
            str(assets / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{etcd_client}",
            f"--cert-dir={workdir / 'certs'}",
            f"--secure-port={secure}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--token-auth-file={workdir / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={key}",
            f"--service-account-signing-key-file={key}",
            "--service-account-issuer=https://envtest.local",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--allow-privileged=true",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = EnvTest(url=f"https://127.0.0.1:{secure}", workdir=workdir, processes=[etcd, apiserver])
    try:
        _wait_ready(env, timeout)
    except BaseException:
        env.stop()
        raise
    return env


def _wait_ready(env: EnvTest, timeout: float) -> None:
    import urllib.request

    context = env.access().ssl_context
    deadline = time.monotonic() + timeout
    request = urllib.request.Request(
        env.url + "/readyz", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(request, context=context, timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"kube-apiserver at {env.url} not ready within {timeout:g}s")


async def wait_established(check: object, timeout: float = 30.0) -> None:
    """Poll an async predicate until it returns True (CRD Established)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("CRD not established")
