"""Our component package (pulumi-package/) run by our Python language host (marker real).

The engine runs a component package written in Python through the language host's `RunPlugin`:
the host runs the plugin folder with the virtualenv its PulumiPlugin.yaml names and streams its
output back, the first stdout line being the port of the plugin's ResourceProvider service.
These tests play the engine's part over the same gRPC services (the SDK's generated stubs), so
they need only the host `make tools` builds: the package starts, answers GetSchema with the
five components, and a plugin whose virtualenv is missing fails naming it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import struct_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, provider_pb2, provider_pb2_grpc

from jobset_infra.cluster.binaries import MissingBinaryError, find
from tests.realcluster import REQUIRE_ENV

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(300)]

PACKAGE = Path(__file__).resolve().parents[2] / "pulumi-package"
COMPONENTS = {f"jobset-infra:index:{name}" for name in (
    "GkeCluster", "TpuSlicePools", "JobSetSystem", "Kueue", "JobSet")}
# The plugin's engine address: it is only dialled for logs, which these calls do not send.
NO_ENGINE = "127.0.0.1:1"


def _host_or_skip() -> Path:
    try:
        return find("pulumi-language-python")
    except MissingBinaryError as err:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {err}")
        pytest.skip(f"real Pulumi engine tier: {err}")


@contextmanager
def _language_host() -> Iterator[language_pb2_grpc.LanguageRuntimeStub]:
    """Our language host, started as the engine starts it (it prints its port first)."""
    host = subprocess.Popen([str(_host_or_skip())], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        port = int(host.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield language_pb2_grpc.LanguageRuntimeStub(channel)
    finally:
        host.terminate()
        host.wait(10)


def _plugin_request(folder: Path, virtualenv: str) -> language_pb2.RunPluginRequest:
    """What the engine sends for a plugin folder (entry point ".", runtime options as given
    in PulumiPlugin.yaml)."""
    options = struct_pb2.Struct()
    options.update({"virtualenv": virtualenv})
    info = language_pb2.ProgramInfo(root_directory=str(folder), program_directory=str(folder),
                                    entry_point=".", options=options)
    return language_pb2.RunPluginRequest(pwd=str(folder), args=[NO_ENGINE], info=info,
                                         kind="resource", name="jobset-infra")


def _first_line(stream: Any) -> tuple[str, str]:
    """The plugin's first stdout line, and what it wrote on stderr until then."""
    out, err = b"", b""
    for message in stream:
        which = message.WhichOneof("output")
        if which == "stdout":
            out += message.stdout
            if b"\n" in out:
                return out.split(b"\n", 1)[0].decode().strip(), err.decode()
        elif which == "stderr":
            err += message.stderr
        else:
            raise AssertionError(f"the plugin exited {message.exitcode}: {err.decode()}")
    raise AssertionError(f"the plugin's stream ended without a port: {err.decode()}")


def test_the_language_host_runs_our_package_and_it_serves_the_five_components() -> None:
    virtualenv = yaml_virtualenv(PACKAGE)
    with _language_host() as host:
        started = time.monotonic()
        stream = host.RunPlugin(_plugin_request(PACKAGE, virtualenv))
        try:
            port, _ = _first_line(stream)
            with grpc.insecure_channel(f"127.0.0.1:{int(port)}") as channel:
                provider = provider_pb2_grpc.ResourceProviderStub(channel)
                schema = json.loads(provider.GetSchema(provider_pb2.GetSchemaRequest()).schema)
        finally:
            stream.cancel()
    print(f"the package served its schema {time.monotonic() - started:.1f} s after RunPlugin")
    assert schema["name"] == "jobset-infra"
    assert set(schema["resources"]) == COMPONENTS
    assert all(schema["resources"][token]["isComponent"] for token in COMPONENTS)
    outputs = schema["resources"]["jobset-infra:index:JobSetSystem"]["properties"]
    assert {"ready", "namespace", "image"} <= set(outputs)


def test_a_plugin_whose_virtualenv_is_missing_fails_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "package"
    shutil.copytree(PACKAGE, folder)
    with _language_host() as host:
        stream = host.RunPlugin(_plugin_request(folder, "../no-such-venv"))
        with pytest.raises(grpc.RpcError) as refused:
            _first_line(stream)
    message = refused.value.details() or ""  # type: ignore[attr-defined]  # a grpc.Call
    assert "no-such-venv" in message and "PulumiPlugin.yaml" in message, message


def yaml_virtualenv(folder: Path) -> str:
    """The virtualenv the package's PulumiPlugin.yaml names (what the engine passes on)."""
    plugin = yaml.safe_load((folder / "PulumiPlugin.yaml").read_text())
    virtualenv: str = plugin["runtime"]["options"]["virtualenv"]
    return virtualenv
