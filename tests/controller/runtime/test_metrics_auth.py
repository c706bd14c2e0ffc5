"""Secure metrics as controller-runtime serves them: HTTPS, and each scrape's token authenticated
with a TokenReview and authorized with a SubjectAccessReview (a fake API server answers)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from jobset_infra.controller.runtime.auth import for_url
from jobset_infra.controller.runtime.health import Endpoints
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.metrics_auth import MetricsAuth
from jobset_infra.controller.runtime.serving_cert import serving_context

USERS = {
    "prometheus-token": "system:serviceaccount:monitoring:prometheus",
    "nobody-token": "system:serviceaccount:default:nobody",
}
READERS = {"system:serviceaccount:monitoring:prometheus"}


@dataclass
class FakeReviews:
    reviews: list[str] = field(default_factory=list)
    down: bool = False

    async def handle(self, request: web.Request) -> web.Response:
        if self.down:
            return web.json_response({"code": 503, "message": "down"}, status=503)
        body: dict[str, Any] = await request.json()
        self.reviews.append(body["kind"])
        if body["kind"] == "TokenReview":
            user = USERS.get(body["spec"]["token"])
            status: dict[str, Any] = {"authenticated": user is not None}
            if user:
                status["user"] = {"username": user, "groups": ["system:authenticated"]}
        else:
            spec = body["spec"]
            wanted = {"path": "/metrics", "verb": "get"}
            allowed = spec["user"] in READERS and spec["nonResourceAttributes"] == wanted
            status = {"allowed": allowed}
        return web.json_response({**body, "status": status}, status=201)


@dataclass
class Served:
    url: str
    fake: FakeReviews
    client: KubeClient


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    fake = FakeReviews()
    app = web.Application()
    app.router.add_route("POST", "/{tail:.*}", fake.handle)
    api = web.AppRunner(app)
    await api.setup()
    await web.TCPSite(api, "127.0.0.1", 0).start()
    client = KubeClient(for_url(f"http://127.0.0.1:{api.addresses[0][1]}"), max_retries=0)
    endpoints = Endpoints(Metrics(), healthy=lambda: True, ready=lambda: True)
    await endpoints.start("0", "127.0.0.1:0", metrics_tls=serving_context("", "127.0.0.1"),
                          metrics_auth=MetricsAuth(client))
    try:
        yield Served(f"https://127.0.0.1:{endpoints.ports['metrics']}", fake, client)
    finally:
        await endpoints.stop()
        await client.close()
        await api.cleanup()


async def scrape(url: str, token: str | None) -> tuple[int, str]:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(
        url + "/metrics", headers=headers, ssl=context
    ) as response:
        return response.status, await response.text()


@pytest.mark.parametrize(
    ("token", "status"),
    [
        pytest.param(None, 401, id="no token is 401"),
        pytest.param("forged", 401, id="a token the API server does not know is 401"),
        pytest.param("nobody-token", 403, id="a user without get on /metrics is 403"),
        pytest.param("prometheus-token", 200, id="a metrics reader gets the metrics"),
    ],
)
async def test_a_scrape_is_authenticated_and_authorized(
    served: Served, token: str | None, status: int
) -> None:
    got, body = await scrape(served.url, token)
    assert got == status
    assert ("controller_runtime_reconcile_total" in body) == (status == 200)


async def test_verdicts_are_cached_so_scrapes_cost_no_reviews(served: Served) -> None:
    for _ in range(3):
        assert (await scrape(served.url, "prometheus-token"))[0] == 200
    assert served.fake.reviews == ["TokenReview", "SubjectAccessReview"]


async def test_an_unreachable_api_server_is_503_and_not_cached(served: Served) -> None:
    served.fake.down = True
    assert (await scrape(served.url, "prometheus-token"))[0] == 503
    served.fake.down = False
    assert (await scrape(served.url, "prometheus-token"))[0] == 200


async def test_plain_http_is_not_served(served: Served) -> None:
    plain = served.url.replace("https://", "http://")
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):
            async with session.get(plain + "/metrics") as response:
                await response.read()


async def test_the_cache_is_bounded() -> None:
    auth = MetricsAuth(KubeClient(for_url("http://127.0.0.1:9")), max_entries=3)

    async def unauthenticated(token: str) -> int:
        return 401

    auth._review = unauthenticated  # type: ignore[method-assign]
    for i in range(10):
        assert await auth.verdict(f"Bearer t{i}") == 401
    assert len(auth._cache) == 3


async def test_secure_metrics_cannot_share_the_health_port() -> None:
    endpoints = Endpoints(Metrics(), healthy=lambda: True, ready=lambda: True)
    with pytest.raises(ValueError, match="cannot share"):
        await endpoints.start(":8443", ":8443", metrics_tls=serving_context("", ""))
