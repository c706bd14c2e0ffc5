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
from jobset_infra.controller.runtime.cache_health import Verdict
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
    endpoints = Endpoints(Metrics(), healthy=lambda: Verdict(True), ready=lambda: Verdict(True))
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


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def counting_auth(answers: dict[str, int], clock: Clock, **options: Any) -> MetricsAuth:
    auth = MetricsAuth(KubeClient(for_url("http://127.0.0.1:9")), clock=clock, **options)

    async def review(token: str) -> int:
        return answers[token]

    auth._review = review  # type: ignore[method-assign]
    return auth


@pytest.mark.parametrize(
    ("status", "ttl"),
    [
        pytest.param(200, 10.0, id="an allowed verdict holds 10 s: a revoked binding stops then"),
        pytest.param(403, 5.0, id="a refused verdict holds 5 s: a retried bad token is cheap"),
        pytest.param(401, 5.0, id="an unknown token too"),
    ],
)
async def test_verdicts_expire(status: int, ttl: float) -> None:
    clock, answers = Clock(), {"t": status}
    auth = counting_auth(answers, clock)
    assert await auth.verdict("Bearer t") == status
    clock.now += ttl - 0.01
    answers["t"] = 0  # what the API server would say now (e.g. the binding was removed)
    assert await auth.verdict("Bearer t") == status and auth.reviews == 1, "still cached"
    clock.now += 0.02
    assert await auth.verdict("Bearer t") == 0 and auth.reviews == 2, "asked again"


async def test_a_flood_of_new_tokens_spends_its_own_budget_then_is_refused() -> None:
    clock = Clock()
    auth = counting_auth({f"t{i}": 401 for i in range(100)}, clock,
                         review_qps=5.0, review_burst=10)
    verdicts = [await auth.verdict(f"Bearer t{i}") for i in range(30)]
    assert verdicts == [401] * 10 + [429] * 20, "the burst, then refused without asking"
    assert auth.reviews == 10 and auth.refused_for_budget == 20
    clock.now += 1.0
    more = [await auth.verdict(f"Bearer t{i}") for i in range(30, 40)]
    assert more.count(401) == 5, "5 new verdicts a second"


async def test_a_cached_verdict_needs_no_budget() -> None:
    clock = Clock()
    auth = counting_auth({"reader": 200, **{f"t{i}": 401 for i in range(20)}}, clock,
                         review_qps=1.0, review_burst=1)
    assert await auth.verdict("Bearer reader") == 200
    assert [await auth.verdict(f"Bearer t{i}") for i in range(3)] == [429] * 3
    assert await auth.verdict("Bearer reader") == 200, "a known scraper is served in a flood"


async def test_a_budget_refusal_says_when_to_retry(served: Served) -> None:
    assert served.fake.reviews == []
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    codes = []
    async with aiohttp.ClientSession() as session:
        for i in range(15):
            async with session.get(served.url + "/metrics", ssl=context,
                                   headers={"Authorization": f"Bearer bogus-{i}"}) as response:
                codes.append((response.status, response.headers.get("Retry-After")))
    # 10 at once, then 5 a second (how many refill depends on how fast the scrapes ran)
    assert codes[:10] == [(401, None)] * 10 and (429, "1") in codes[10:]
    assert served.fake.reviews.count("TokenReview") == sum(1 for c, _ in codes if c == 401)


async def test_secure_metrics_cannot_share_the_health_port() -> None:
    endpoints = Endpoints(Metrics(), healthy=lambda: Verdict(True), ready=lambda: Verdict(True))
    with pytest.raises(ValueError, match="cannot share"):
        await endpoints.start(":8443", ":8443", metrics_tls=serving_context("", ""))
