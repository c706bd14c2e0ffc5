"""A local Helm chart rendered by the Helm the Pulumi Kubernetes provider links.

The stacks install Kueue's chart through pulumi-kubernetes' Chart, whose Helm lives inside the
provider binary `make tools` builds. A local cluster's Kueue is rendered by that same Helm,
through the provider's own `kubernetes:helm:template` function over its gRPC protocol, as
the engine calls it: the provider is started, configured with the cluster's kubeconfig (so
the chart sees the cluster's version and API groups, as under `pulumi up`), asked once, and
stopped. No Helm binary of its own to build, pin and keep at the provider's version.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Final

from jobset_infra.cluster.binaries import MissingBinaryError, find
from jobset_infra.manifests.wire import from_wire

JsonObj = dict[str, Any]
PROVIDER: Final = "pulumi-resource-kubernetes"
TEMPLATE: Final = "kubernetes:helm:template"
KUBECONFIG: Final = "kubernetes:config:kubeconfig"


class ChartTemplateError(RuntimeError):
    """The chart could not be rendered; the message says why and the fix."""


def template_chart(
    chart: Path, *, release: str, namespace: str, values: Mapping[str, Any], kubeconfig: Path,
    timeout: float = 120.0,
) -> list[JsonObj]:
    """The objects of the local chart in `chart` for `release` in `namespace` with `values`,
    as `helm template` against the cluster of `kubeconfig` renders them (no hooks' tests)."""
    opts = {"path": str(chart), "release_name": release, "namespace": namespace,
            "values": dict(values)}
    answer = _invoke(TEMPLATE, {"jsonOpts": json.dumps(opts)}, kubeconfig, timeout)
    objects = answer.get("result")
    if not isinstance(objects, list):
        raise ChartTemplateError(f"{TEMPLATE} of {chart} answered no list of objects")
    return [from_wire(o) for o in objects]  # a chart's `replicas: 1` comes back 1.0


def _invoke(token: str, args: Mapping[str, Any], kubeconfig: Path, timeout: float) -> JsonObj:
    try:
        import grpc
        from google.protobuf import json_format, struct_pb2
        from pulumi.runtime.proto import provider_pb2, provider_pb2_grpc
    except ImportError as err:
        raise ChartTemplateError(
            f"rendering a chart needs the Pulumi SDK ({err.name} is missing): install "
            "`jobset-infra[platform]`") from None
    request_args = struct_pb2.Struct()
    request_args.update(dict(args))
    with _provider(timeout) as port, grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = provider_pb2_grpc.ResourceProviderStub(channel)
        try:
            stub.Configure(provider_pb2.ConfigureRequest(
                variables={KUBECONFIG: str(kubeconfig)}, acceptSecrets=False), timeout=timeout)
            answer = stub.Invoke(
                provider_pb2.InvokeRequest(tok=token, args=request_args), timeout=timeout)
        except grpc.RpcError as err:
            raise ChartTemplateError(
                f"{PROVIDER} refused {token}: {err.code().name}: {err.details()}") from None
    if answer.failures:
        reasons = "; ".join(f"{f.property}: {f.reason}" for f in answer.failures)
        raise ChartTemplateError(f"{token} failed: {reasons}")
    result: JsonObj = json_format.MessageToDict(getattr(answer, "return"))
    return result


@contextmanager
def _provider(timeout: float) -> Iterator[int]:
    """The provider, started with no engine to report to (its attach mode), and the port its
    gRPC server listens on; stopped on the way out."""
    try:
        binary = find(PROVIDER)
    except MissingBinaryError as err:
        raise ChartTemplateError(str(err)) from None
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")}
    # Its log goes to a file, not a pipe nobody reads while it works (a full pipe would stall it).
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen([str(binary)], stdout=subprocess.PIPE, stderr=log, env=env,
                                text=True)
        try:
            yield _announced_port(proc, log, timeout)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _announced_port(proc: subprocess.Popen[str], log: IO[str], timeout: float) -> int:
    """The port the provider prints first, as the plugin protocol has it."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as ready:
        ready.register(proc.stdout, selectors.EVENT_READ)
        line = proc.stdout.readline() if ready.select(timeout) else ""
    if not line.strip().isdigit():
        proc.kill()
        proc.wait()
        log.seek(0)
        said = (log.read() or line).strip()[-500:]
        raise ChartTemplateError(f"{PROVIDER} did not start (exit {proc.returncode}): {said}")
    return int(line)
