"""Other projects' managers, run unpatched against the sim: Kueue's (sigs.k8s.io/kueue) and
upstream JobSet's (sigs.k8s.io/jobset), as `tools/build.py` builds them at the pins of
tools/<group>/go.mod.

Their CRDs and configuration API are read at test time from the module zips the Go build left
in the module cache (never copied into this repository). Each manager runs out of cluster with
what that needs and nothing the sim would need: a kubeconfig, its webhook server on loopback
with a throwaway certificate (neither can turn it off), loopback metrics and probes, a
namespace for its leader-election Lease. Its log is kept and shown when a test fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.cluster.binaries import MissingBinaryError, find
from jobset_infra.sim.apiserver.tls import self_signed
from tests.conformance.runner import Target, play_step
from tests.realcluster import REQUIRE_ENV

TOOLS = Path(__file__).parents[2] / "tools"
JsonObj = dict[str, Any]


def _missing(what: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {what}")
    pytest.skip(what)


def binary_or_skip(name: str) -> Path:
    try:
        return find(name)
    except MissingBinaryError as err:
        _missing(str(err))
        raise


def pinned_version(group: str, module: str) -> str:
    """The version of `module` that tools/<group>/go.mod pins."""
    text = (TOOLS / group / "go.mod").read_text()
    match = re.search(rf"^\s*{re.escape(module)} (v\S+)", text, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"tools/{group}/go.mod does not pin {module}")
    return match.group(1)


def _module_cache() -> Path:
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    go = shutil.which("go")
    if go is not None:
        found = subprocess.run([go, "env", "GOMODCACHE"], capture_output=True, text=True,
                               check=False).stdout.strip()
        if found:
            return Path(found)
    return Path(os.environ.get("GOPATH") or Path.home() / "go") / "pkg" / "mod"


@dataclass(frozen=True)
class ModuleZip:
    """One module's zip in the Go module cache, read without unpacking it."""

    module: str
    version: str
    path: Path

    @classmethod
    def pinned(cls, group: str, module: str) -> ModuleZip:
        version = pinned_version(group, module)
        path = _module_cache() / "cache" / "download" / module / "@v" / f"{version}.zip"
        if not path.is_file():
            _missing(f"{module}@{version} is not in the Go module cache ({path}): run "
                     f"`python3 tools/build.py {group}`")
        return cls(module, version, path)

    def yaml_documents(self, folder: str) -> list[JsonObj]:
        """Every YAML document of the files directly in `folder` of the module."""
        prefix = f"{self.module}@{self.version}/{folder.strip('/')}/"
        with zipfile.ZipFile(self.path) as archive:
            names = sorted(n for n in archive.namelist() if n.startswith(prefix)
                           and "/" not in n[len(prefix):] and n.endswith(".yaml"))
            return [doc for n in names for doc in yaml.safe_load_all(archive.read(n)) if doc]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def certificate_folder(folder: Path) -> Path:
    """`folder` holding tls.crt and tls.key for 127.0.0.1 (webhook and metrics servers)."""
    cert, key = self_signed("127.0.0.1")
    folder.mkdir(parents=True, exist_ok=True)
    shutil.move(cert, folder / "tls.crt")
    shutil.move(key, folder / "tls.key")
    shutil.rmtree(cert.parent, ignore_errors=True)
    return folder


@dataclass
class Api:
    """Requests to the sim as its admin (JSON bodies), for the test's own writes and reads."""

    target: Target

    def call(self, method: str, path: str, body: JsonObj | None = None) -> JsonObj:
        step: JsonObj = {"method": method, "path": path}
        if body is not None:
            step["body"] = body
        return play_step(self.target, step, {"ns": "default"})

    def create(self, path: str, body: JsonObj) -> JsonObj:
        answer = self.call("POST", path, body)
        if answer["code"] != 201:
            raise AssertionError(f"POST {path}: {json.dumps(answer)[:800]}")
        return dict(answer["body"])

    def items(self, path: str) -> list[JsonObj]:
        answer = self.call("GET", path)
        assert answer["code"] == 200, answer
        return list(answer["body"]["items"])

    def get(self, path: str) -> JsonObj:
        answer = self.call("GET", path)
        assert answer["code"] == 200, answer
        return dict(answer["body"])


@dataclass
class Manager:
    """A running manager process and where its log goes."""

    process: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def alive(self) -> bool:
        return self.process.poll() is None


@contextmanager
def running(command: list[str], log: Path) -> Iterator[Manager]:
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    manager = Manager(process, log)
    try:
        yield manager
    finally:
        if manager.alive():
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def wait_for(what: str, check: Callable[[], Any], manager: Manager,
             timeout: float = 45.0, interval: float = 0.25) -> Any:
    """`check()`'s first truthy value; fails naming `what`, with the manager's log tail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        if not manager.alive():
            pytest.fail(f"the manager exited ({manager.process.returncode}) before {what}:\n"
                        f"{manager.tail()}")
        time.sleep(interval)
    pytest.fail(f"{what}: not within {timeout:.0f} s; the manager's log ends:\n{manager.tail()}")


def scrape(port: int, token: str) -> int:
    """The HTTP status of GET https://127.0.0.1:<port>/metrics with `token`."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the manager's own self-signed serving certificate
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics",
                                     headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return 0
