"""Run a Pulumi program offline: Pulumi's mocks stand in for the engine and every provider.

This is how `jobset-infra plan` shows what `pulumi preview` would create without a cloud account
or the Pulumi CLI, and how the component tests record resource inputs. The recording monitor keeps,
for every registration, the type token, logical name, parent, explicit dependencies and the inputs
as the program sent them; the mocks answer with the inputs echoed back plus the few computed
outputs that programs read (a GKE endpoint and CA, Kubernetes object names).
"""

from __future__ import annotations

import asyncio
import base64
import runpy
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.config import set_all_config
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _ensure_event_loop, _sync_await

__all__ = [
    "OfflineMocks",
    "OfflineRun",
    "ProgramError",
    "Registration",
    "run_offline",
]

# Pulumi's runtime settings are process-global; one offline run at a time.
_RUN_LOCK = threading.Lock()

MOCK_GKE_ENDPOINT = "203.0.113.10"
MOCK_CA = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nmock\n-----END CERTIFICATE-----\n")
MOCK_CA_B64 = MOCK_CA.decode()


@dataclass(frozen=True)
class Registration:
    """One resource the program registered, as the engine saw it."""

    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    dependencies: tuple[str, ...]
    inputs: Mapping[str, Any]

    @property
    def parent_type(self) -> str | None:
        """Return the parent's type token, read from its URN; None at the top level."""
        if not self.parent:
            return None
        qualified = self.parent.split("::")[2]
        return qualified.split("$")[-1]


@dataclass
class OfflineRun:
    """Everything one offline run recorded, in registration order."""

    registrations: list[Registration] = field(default_factory=list)
    logs: list[tuple[str, str]] = field(default_factory=list)

    def of_type(self, type_token: str) -> list[Registration]:
        """Return the registrations of one type token."""
        return [r for r in self.registrations if r.type == type_token]

    def named(self, name: str, type_token: str | None = None) -> Registration:
        """Return the one registration with this logical name (and type); KeyError if absent."""
        found = [
            r for r in self.registrations
            if r.name == name and (type_token is None or r.type == type_token)
        ]
        if len(found) != 1:
            raise KeyError(f"{len(found)} registrations named {name!r} (type {type_token})")
        return found[0]

    def by_urn(self) -> dict[str, Registration]:
        """Return the registrations keyed by URN."""
        return {r.urn: r for r in self.registrations}

    def children(self, parent_urn: str | None) -> Iterator[Registration]:
        """Yield the direct children of a URN (None: the top-level resources)."""
        return (r for r in self.registrations if r.parent == parent_urn)

    def warnings(self) -> list[str]:
        """Return the messages the program logged at warning level."""
        return [message for level, message in self.logs if level == "warning"]


class ProgramError(Exception):
    """The program raised while it ran; the message is the program's own."""


def _computed_outputs(type_token: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Return the outputs a provider would compute that programs depend on."""
    if type_token == "gcp:container/cluster:Cluster":
        return {
            "name": inputs.get("name", name),
            "endpoint": MOCK_GKE_ENDPOINT,
            "masterAuth": {"clusterCaCertificate": MOCK_CA_B64},
            "selfLink": f"projects/mock/locations/mock/clusters/{name}",
        }
    if type_token == "gcp:serviceaccount/account:Account":
        # Programs read the email (IAM members, node configs); an update run needs it known.
        project = inputs.get("project", "mock-project")
        return {"name": inputs.get("name", name),
                "email": f"{inputs.get('accountId', name)}@{project}.iam.gserviceaccount.com"}
    if type_token.startswith("gcp:"):
        return {"name": inputs.get("name", name)}
    if type_token.startswith("kubernetes:") and isinstance(inputs.get("metadata"), Mapping):
        metadata = dict(inputs["metadata"])
        metadata.setdefault("name", name)
        return {"metadata": metadata}
    return {}


class OfflineMocks(pulumi_mocks.Mocks):
    """Mocks that echo inputs back as outputs, plus the computed fields programs read."""

    def new_resource(
        self, args: pulumi_mocks.MockResourceArgs
    ) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        state.update(_computed_outputs(args.typ, args.name, args.inputs))
        return f"{args.name}-id", state

    def call(
        self, args: pulumi_mocks.MockCallArgs
    ) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        if args.token == "gcp:organizations/getClientConfig:getClientConfig":
            config = {"project": "mock-project", "region": "us-central2", "zone": "us-central2-b"}
            return config, None
        if args.token == "gcp:container/getEngineVersions:getEngineVersions":
            return {"latestMasterVersion": "1.33.5-gke.1000", "validMasterVersions": []}, None
        return {}, None


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    """A mock monitor that also keeps parent, dependencies and inputs of each registration."""

    def __init__(self, mocks: pulumi_mocks.Mocks, run: OfflineRun) -> None:
        super().__init__(mocks)
        self._run = run

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == "pulumi:pulumi:Stack":
            return response
        _ensure_event_loop()  # type: ignore[no-untyped-call]
        parent = request.parent or None
        if parent is not None and parent.split("::")[2].endswith("pulumi:pulumi:Stack"):
            parent = None  # top level: the stack is implied
        self._run.registrations.append(
            Registration(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=parent,
                custom=bool(request.custom),
                dependencies=tuple(request.dependencies),
                inputs=rpc.deserialize_properties(request.object),
            )
        )
        return response


class _RecordingEngine(pulumi_mocks.MockEngine):
    """A mock engine that keeps what the program logged (warnings matter at preview)."""

    def __init__(self, run: OfflineRun) -> None:
        super().__init__(None)
        self._run = run

    def Log(self, request: Any) -> None:  # noqa: N802 - gRPC method name
        levels = {1: "info", 2: "warning", 3: "error"}  # debug (0) is the SDK's own chatter
        if request.severity in levels:
            self._run.logs.append((levels[request.severity], request.message))


def run_offline(
    program: Callable[[], None] | Path,
    *,
    project: str = "jobset-infra",
    stack: str = "dev",
    config: Mapping[str, str] | None = None,
    secret_keys: list[str] | None = None,
    preview: bool = True,
    mocks: pulumi_mocks.Mocks | None = None,
) -> OfflineRun:
    """Run a Pulumi program (a callable or a `__main__.py` path) under mocks; return what it did.

    `config` maps fully qualified keys (`project:key`) to string values, as Pulumi passes them.
    Raises ProgramError when the program raises, with the program's own message.
    """
    with _RUN_LOCK:
        # A fresh loop per run: a previous user of this thread (pytest-asyncio, a CLI) may have
        # closed or unset the thread's loop, and Pulumi's runtime pumps the current one.
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            return _run_with_mocks(
                program, project=project, stack=stack, config=config,
                secret_keys=secret_keys, preview=preview, mocks=mocks,
            )
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _run_with_mocks(
    program: Callable[[], None] | Path,
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None,
    secret_keys: list[str] | None,
    preview: bool,
    mocks: pulumi_mocks.Mocks | None,
) -> OfflineRun:
    run = OfflineRun()
    chosen = mocks or OfflineMocks()
    monitor = _RecordingMonitor(chosen, run)
    pulumi.runtime.set_mocks(
        chosen, project=project, stack=stack, preview=preview, monitor=monitor
    )
    settings = pulumi.runtime.settings.SETTINGS
    settings.engine = _RecordingEngine(run)
    set_all_config(dict(config or {}), secret_keys)
    settings.rpc_manager.clear()
    settings.outputs.clear()
    body = program if callable(program) else _path_runner(program)
    try:
        _sync_await(run_pulumi_func(body))
    except Exception as exc:  # the program's own failure, reported as such
        raise ProgramError(_describe(exc)) from exc
    return run


def _path_runner(path: Path) -> Callable[[], None]:
    def run() -> None:
        runpy.run_path(str(path), run_name="__main__")

    return run


def _describe(exc: BaseException) -> str:
    """Return the innermost meaningful message of an exception raised inside the program."""
    while isinstance(exc, Exception) and exc.__cause__ is not None and not str(exc):
        exc = exc.__cause__
    return str(exc) or type(exc).__name__
