"""HTTP endpoints: /healthz and /readyz on the health address, /metrics on the metrics address.

What each probe checks is decided in `cache_health.py`; a failing probe's body says why (which
cache, which error), so `curl .../readyz` tells an operator what the controller cannot see.
Standby replicas are ready while their caches are in sync (they serve nothing but are warm), so a
rolling update does not wait for leadership. Binding ":0" picks a free port (tests).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from aiohttp import web

from jobset_infra.controller.runtime.cache_health import Verdict
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.metrics_auth import MetricsAuth

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def split_address(address: str) -> tuple[str, int] | None:
    """(host, port) from ":8081" / "127.0.0.1:0"; None for "0" or "" (disabled), like upstream."""
    if address in ("", "0"):
        return None
    host, _, port = address.rpartition(":")
    return (host or "0.0.0.0", int(port))


class Endpoints:
    """One aiohttp site per distinct address; health and metrics may share one."""

    def __init__(
        self,
        metrics: Metrics,
        healthy: Callable[[], Verdict],
        ready: Callable[[], Verdict],
        liveness_path: str = "/healthz",
        readiness_path: str = "/readyz",
    ) -> None:
        self.metrics = metrics
        self.healthy = healthy
        self.ready = ready
        self.liveness_path = liveness_path
        self.readiness_path = readiness_path
        self._runners: list[web.AppRunner] = []
        self.ports: dict[str, int] = {}
        self.auth: MetricsAuth | None = None

    async def start(
        self,
        health_address: str,
        metrics_address: str,
        *,
        metrics_tls: ssl.SSLContext | None = None,
        metrics_auth: MetricsAuth | None = None,
    ) -> None:
        """Serve health and metrics; with `metrics_tls` the metrics address speaks HTTPS (and
        must differ from the health address: the kubelet probes plain HTTP), and with
        `metrics_auth` every scrape is authenticated and authorized first."""
        if metrics_tls is not None and metrics_address == health_address:
            raise ValueError(
                f"secure metrics and health probes cannot share {metrics_address}: the kubelet "
                "probes over HTTP; give metrics its own port"
            )
        self.auth = metrics_auth
        routes: dict[str, list[web.RouteDef]] = {}
        if split_address(health_address):
            routes.setdefault(health_address, []).extend(
                [
                    web.get(self.liveness_path, self._healthz),
                    web.get(self.readiness_path, self._readyz),
                ]
            )
        if split_address(metrics_address):
            routes.setdefault(metrics_address, []).append(web.get("/metrics", self._metrics))
        for address, defs in routes.items():
            host, port = split_address(address) or ("", 0)
            app = web.Application()
            app.add_routes(defs)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            tls = metrics_tls if address == metrics_address else None
            site = web.TCPSite(runner, host, port, ssl_context=tls)
            await site.start()
            self._runners.append(runner)
            bound = runner.addresses[0][1] if runner.addresses else port
            for route in defs:
                name = "metrics" if route.path == "/metrics" else "health"
                self.ports[name] = bound

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()
        if self.auth is not None:
            await self.auth.close()

    async def _healthz(self, _: web.Request) -> web.Response:
        verdict = self.healthy()
        return web.Response(status=200 if verdict.ok else 500, text=verdict.text())

    async def _readyz(self, _: web.Request) -> web.Response:
        verdict = self.ready()
        return web.Response(status=200 if verdict.ok else 503, text=verdict.text())

    async def _metrics(self, request: web.Request) -> web.Response:
        if self.auth is not None:
            status = await self.auth.verdict(request.headers.get("Authorization", ""))
            if status != 200:
                reason = {401: "Unauthorized", 403: "Forbidden", 429: "Too many new tokens"
                          }.get(status, "Unavailable")
                headers = {"Retry-After": "1"} if status == 429 else None
                return web.Response(status=status, text=reason, headers=headers)
        return web.Response(body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})
