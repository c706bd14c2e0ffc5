"""Our component package (pulumi-package/) run by our Python language host (marker real).

The engine runs a component package written in Python through the language host's `RunPlugin`:
the host runs the plugin folder with the virtualenv its PulumiPlugin.yaml names and streams its
output back, the first stdout line being the port of the plugin's ResourceProvider service.
These tests play the engine's part over the same gRPC services (the SDK's generated stubs), so
they need only the host `make tools` builds: the package starts, answers GetSchema with the
five components, and a plugin whose virtualenv is missing fails naming it. Then the whole
engine: examples/yaml-consumer, a Pulumi YAML program that uses the package, deploys onto a
fresh local cluster and its JobSet completes.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, provider_pb2, provider_pb2_grpc

from jobset_infra.cluster.binaries import MissingBinaryError, find
from jobset_infra.cluster.command import controller_image
from jobset_infra.cluster.deploy import watch_jobset
from jobset_infra.cluster.engine import Engine, engine_env
from jobset_infra.cluster.kueue_system import kueue_image
from tests.realcluster import REQUIRE_ENV, real_cluster
from tests.realpulumi import engine_or_skip, example_copy, kueue_chart

pytestmark = [pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(300)]

PACKAGE = Path(__file__).resolve().parents[2] / "pulumi-package"
COMPONENTS = {f"jobset-infra:index:{name}" for name in (
    "GkeCluster", "TpuSlicePools", "JobSetSystem", "Kueue", "JobSet")}
# The plugin's engine address: it is only dialled for logs, which these calls do not send.
NO_ENGINE = "127.0.0.1:1"
STACK = "local"


def _host_or_skip() -> Path:
    try:
        return find("pulumi-language-python")
    except MissingBinaryError as err:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {err}")
        pytest.skip(f"real Pulumi engine tier: {err}")


@contextmanager
def _language_host(*flags: str) -> Iterator[language_pb2_grpc.LanguageRuntimeStub]:
    """Our language host, started as the engine starts it (it prints its port first)."""
    with tempfile.TemporaryFile("w+") as stderr:  # a file: -v=9 logs more than a pipe holds
        host = subprocess.Popen([str(_host_or_skip()), *flags], stdout=subprocess.PIPE,
                                stderr=stderr, text=True)
        try:
            with _runtime_stub(host, stderr) as stub:
                yield stub
        finally:
            host.terminate()
            host.wait(10)


@contextmanager
def _runtime_stub(host: subprocess.Popen[str],
                  stderr: IO[str]) -> Iterator[language_pb2_grpc.LanguageRuntimeStub]:
    """The host's service at the port its first line names, or a failure with what it said
    instead (the engine would only say "could not read plugin [...]: exit status 2")."""
    assert host.stdout is not None
    line = host.stdout.readline().strip()
    if not line.isdigit():
        host.wait(10)
        stderr.seek(0)
        raise AssertionError(f"the host exited {host.returncode} without a port: "
                             f"{stderr.read()[:2000]}")
    with grpc.insecure_channel(f"127.0.0.1:{line}") as channel:
        yield language_pb2_grpc.LanguageRuntimeStub(channel)


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


def engine_flags(plugin: Path) -> list[str]:
    """Every flag an engine starts a language host with, before its address: logging and
    tracing (sdk/v3's buildPluginArguments, --logflow on), and from the plugin host
    pulumi-language-yaml runs (sdk/v3 v3.206.0) the plugin's root and each runtime option of
    its PulumiPlugin.yaml (Pulumi's Python runtime has three)."""
    return ["--logtostderr", "-v=9", "--tracing", "file:/dev/null", "-logflow",
            f"-root={plugin}", f"-virtualenv={yaml_virtualenv(plugin)}", "-toolchain=pip",
            "-typechecker=mypy"]


def test_the_host_accepts_every_flag_an_engine_passes() -> None:
    """pulumi-language-yaml started our host with -root and -virtualenv, and a host that did
    not declare them exited 2 ("could not read plugin [pulumi-language-python]: exit status
    2"). Flags it does not use are accepted: the requests carry the same facts."""
    with _language_host(*engine_flags(PACKAGE)) as host:
        info = host.GetPluginInfo(empty_pb2.Empty())
    assert info.version


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


@pytest.mark.timeout(900)  # a cluster, Kueue and two language hosts; 300 s for the rest
def test_a_yaml_program_deploys_the_system_kueue_and_a_jobset_that_completes(
    tmp_path: Path,
) -> None:
    """examples/yaml-consumer with the real engine: the YAML language host runs the program, ours
    runs the package; JobSetSystem and Kueue (both from their images on the cluster's system
    node) and a JobSet created by type token, the JobSet after `${system.ready}` and
    `${kueue.ready}`, run to Completed."""
    engine_or_skip()
    started = time.monotonic()
    with real_cluster("cpu:2", auto_complete_seconds=3, system_node=True) as cluster:
        cluster_seconds = time.monotonic() - started
        project = example_copy("yaml-consumer", tmp_path / "project", packages=True)
        state = cluster.layout.folder / "pulumi"
        engine = Engine(project, state, engine_env(state, plugins=["pulumi-language-yaml"]))
        engine.select(STACK)
        for key, value in (("kubeconfig", str(cluster.kubeconfig)),
                           ("kueueChart", kueue_chart()),
                           ("controllerImage", controller_image()),
                           ("kueueImage", kueue_image())):
            engine.config_set(STACK, key, value)
        update = engine.up(STACK)
        assert update.outputs["jobset"] == "hello-yaml"
        assert update.outputs["childJobs"] == ["hello-yaml-workers-0", "hello-yaml-workers-1"]
        ended = asyncio.run(watch_jobset(cluster, "default", "hello-yaml", 300,
                                         lambda _line: None))
        assert ended == "Completed"
        # No destroy: the cluster and the stack's state go with it, and destroying these
        # components is checked elsewhere (test_outputs_program.py: JobSetSystem and a JobSet;
        # test_real_engine.py: Kueue). It took 41 s here, a quarter of the test.
        print(f"cluster {cluster_seconds:.0f} s, up {update.seconds:.0f} s, Completed "
              f"{time.monotonic() - started - cluster_seconds - update.seconds:.0f} s after "
              "config and up")
