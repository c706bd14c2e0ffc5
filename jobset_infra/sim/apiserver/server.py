"""`Sim`: the simulated Kubernetes API server on 127.0.0.1.

    async with Sim(port=0, latency=0.0, job_controller=False) as sim:
        sim.url                      # http://127.0.0.1:<port>
        sim.store                    # the Store, for in-process components and assertions
        sim.kubeconfig(tmp / "kc")   # a kubeconfig for kubectl and client libraries
        sim.stats.writes             # create/update/patch/delete requests since the last reset
        sim.stats.reset()
        sim.add_hook(hook)           # a RequestHook sees every request first (fault injection)
        sim.add_component(thing)     # anything with `async start()` / `async stop()`

`job_controller=True` runs `jobset_infra.sim.cluster.job_controller.JobController(store)` and
`scheduler=True` runs `jobset_infra.sim.cluster.scheduler.Scheduler(store)` as components.
`token` makes the server require `Authorization: Bearer <token>`; `tls=True` serves HTTPS
with a self-signed certificate made by the `openssl` command (see `jobset_infra.sim.apiserver.tls`).

`SimThread` runs a Sim on its own event loop in a background thread, for synchronous callers
(the official `kubernetes` client, kubectl, the CLI): `with SimThread() as sim: sim.url`.
Store access from another thread goes through `sim.call(fn)`, which runs `fn(store)` on the
Sim's loop.
"""

from __future__ import annotations

import asyncio
import importlib
import shutil
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, TypeVar

import yaml
from aiohttp import web

from jobset_infra.sim.apiserver import gc
from jobset_infra.sim.apiserver.clock import Clock
from jobset_infra.sim.apiserver.hooks import RequestHook, Stats
from jobset_infra.sim.apiserver.routes import ApiHandler
from jobset_infra.sim.apiserver.store import Store

T = TypeVar("T")


class Component(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def _optional_component(module: str, cls: str, store: Store, **options: Any) -> Component:
    factory = getattr(importlib.import_module(module), cls)
    component: Component = factory(store, **options)
    return component


class Sim:
    """An API server over a `Store` (see module docstring)."""

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        latency: float = 0.0,
        job_controller: bool = False,
        scheduler: bool = False,
        store: Store | None = None,
        clock: Clock | None = None,
        watch_window: int = 10_000,
        bookmark_interval: float = 5.0,
        token: str | None = None,
        tls: bool = False,
        garbage_collector: bool = True,
    ) -> None:
        self.host, self.port = host, port
        self.store = store or Store(clock=clock, watch_window=watch_window)
        self.stats = Stats()
        self.token = token
        self.tls = tls
        self._hooks: list[RequestHook] = []
        self._components: list[Component] = []
        self._started: list[Component] = []
        self._runner: web.AppRunner | None = None
        self._tls_files: tuple[Path, Path] | None = None
        self.handler = ApiHandler(self.store, self.stats, self._hooks, latency=latency,
                                  bookmark_interval=bookmark_interval,
                                  server_address=lambda: f"{self.host}:{self.port}", token=token)
        self.store.collector = garbage_collector
        if garbage_collector:
            self.add_component(gc.GarbageCollector(self.store))
        if job_controller:
            self.add_component(_optional_component(
                "jobset_infra.sim.cluster.job_controller", "JobController", self.store,
                wait_for_binding=scheduler))  # with a scheduler, Pods run once bound
        if scheduler:
            self.add_component(_optional_component(
                "jobset_infra.sim.cluster.scheduler", "Scheduler", self.store))

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def add_hook(self, hook: RequestHook) -> None:
        """Run `hook` before every request; the first hook returning an Intercept decides."""
        self._hooks.append(hook)

    def remove_hook(self, hook: RequestHook) -> None:
        self._hooks.remove(hook)

    def add_component(self, component: Component) -> None:
        """Start `component` with the server and stop it before the server stops (add it before
        `start`; once running, use `await start_component(component)`)."""
        self._components.append(component)

    async def start_component(self, component: Component) -> None:
        self._components.append(component)
        await component.start()
        self._started.append(component)

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self.handler.handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self._ssl_context())
        await site.start()
        # aiohttp exposes the bound port only on the site's server object
        sockets = getattr(site._server, "sockets", None)
        if sockets:
            self.port = sockets[0].getsockname()[1]
        for component in self._components:
            if component not in self._started:
                await component.start()
                self._started.append(component)

    async def stop(self) -> None:
        for component in reversed(self._started):
            await component.stop()
        self._started.clear()
        for stream in self.store.watches():
            stream.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._tls_files is not None:
            shutil.rmtree(self._tls_files[0].parent, ignore_errors=True)
            self._tls_files = None

    async def __aenter__(self) -> Sim:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    def _ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        from jobset_infra.sim.apiserver.tls import self_signed

        self._tls_files = self_signed(self.host)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*map(str, self._tls_files))
        return context

    @property
    def ca_file(self) -> Path | None:
        """The self-signed certificate clients must trust (None without TLS)."""
        return None if self._tls_files is None else self._tls_files[0]

    def kubeconfig(self, path: Path | str) -> Path:
        """Write a kubeconfig for this server (context "sim") and return its path."""
        return write_kubeconfig(Path(path), self.url, token=self.token, ca_file=self.ca_file)

    def service_account(self, folder: Path | str, namespace: str = "default") -> dict[str, str]:
        """Write `token`, `ca.crt` and `namespace` as a Pod's service-account volume holds them
        and return the environment in-cluster configuration reads (KUBERNETES_SERVICE_HOST and
        _PORT). Needs `tls=True` and a `token`, like a real in-cluster API server."""
        if self.ca_file is None or self.token is None:
            raise RuntimeError("in-cluster configuration needs Sim(tls=True, token=...)")
        root = Path(folder)
        root.mkdir(parents=True, exist_ok=True)
        (root / "token").write_text(self.token)
        (root / "ca.crt").write_bytes(self.ca_file.read_bytes())
        (root / "namespace").write_text(namespace)
        return {"KUBERNETES_SERVICE_HOST": self.host, "KUBERNETES_SERVICE_PORT": str(self.port)}


def write_kubeconfig(
    path: Path, url: str, *, token: str | None = None, ca_file: Path | None = None
) -> Path:
    import base64

    cluster: dict[str, Any] = {"server": url}
    if ca_file is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_file.read_bytes()).decode()
    user: dict[str, Any] = {"token": token} if token else {}
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "sim",
        "clusters": [{"name": "sim", "cluster": cluster}],
        "users": [{"name": "sim", "user": user}],
        "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim",
                                                  "namespace": "default"}}],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class SimThread:
    """A Sim on its own loop in a daemon thread: `with SimThread(**sim_kwargs) as sim: ...`."""

    def __init__(self, **sim_kwargs: Any) -> None:
        self._kwargs = sim_kwargs
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sim", daemon=True)
        self.sim: Sim | None = None

    def __enter__(self) -> SimThread:
        self._thread.start()
        self.sim = self._run(self._started())
        return self

    async def _started(self) -> Sim:
        sim = Sim(**self._kwargs)
        await sim.start()
        return sim

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.sim is not None:
            self._run(self.sim.stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def _run(self, coro: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(timeout=30)

    def _require(self) -> Sim:
        if self.sim is None:
            raise RuntimeError("SimThread is not running; use it as a context manager")
        return self.sim

    @property
    def url(self) -> str:
        return self._require().url

    @property
    def stats(self) -> Stats:
        return self._require().stats

    def kubeconfig(self, path: Path | str) -> Path:
        return self._require().kubeconfig(path)

    def service_account(self, folder: Path | str, namespace: str = "default") -> dict[str, str]:
        return self._require().service_account(folder, namespace)

    def call(self, fn: Callable[[Store], T]) -> T:
        """Run `fn(store)` on the Sim's loop (the store is not thread-safe) and return its value."""
        sim = self._require()

        async def run() -> T:
            return fn(sim.store)

        result: T = self._run(run())
        return result
