"""KubeClient over real HTTP (aiohttp test server on 127.0.0.1): retries, 429, errors, counting."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiohttp import web

from jobset_infra.api.input_limits import CONTROLLER_LIMITS
from jobset_infra.controller.runtime.auth import ClusterAccess, for_url
from jobset_infra.controller.runtime.kube import (
    AlreadyExistsError,
    ConflictError,
    GoneError,
    KubeClient,
    NotFoundError,
    ResponseTooLargeError,
    ServerError,
    UndeclaredCallError,
)
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.resources import JOBS, JOBSETS, NODES

Responder = Callable[[web.Request], web.Response]


@dataclass
class Seen:
    method: str
    query: dict[str, str]
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, list[Responder], list[Seen]]]:
    """A server answering each request with the next scripted responder (the last one repeats)."""
    script: list[Responder] = []
    seen: list[Seen] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append(
            Seen(request.method, dict(request.query), dict(request.headers), await request.text())
        )
        responder = script.pop(0) if len(script) > 1 else script[0]
        return responder(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}", script, seen
    await runner.cleanup()


def status(code: int, reason: str = "", headers: dict[str, str] | None = None) -> Responder:
    body = {"kind": "Status", "code": code, "reason": reason, "message": f"{reason} here"}
    return lambda _: web.json_response(body, status=code, headers=headers)


def ok(body: dict[str, Any]) -> Responder:
    return lambda _: web.json_response(body)


async def no_sleep(_: float) -> None:
    return None


def client(url: str, metrics: Metrics | None = None, **kwargs: Any) -> KubeClient:
    return KubeClient(for_url(url), metrics=metrics or Metrics(), sleep=no_sleep, **kwargs)


async def test_429_is_retried_after_retry_after_and_counted(server: Any) -> None:
    url, script, seen = server
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    script += [status(429, "TooManyRequests", {"Retry-After": "3"}), ok({"kind": "Job"})]
    metrics = Metrics()
    async with KubeClient(for_url(url), metrics=metrics, sleep=sleep) as kube:
        body = await kube.create(JOBS, {"metadata": {"name": "j", "namespace": "ns"}})
    assert body == {"kind": "Job"}
    assert slept == [3.0]
    assert len(seen) == 2
    host = url.removeprefix("http://")
    assert (
        metrics.sample(
            "rest_client_requests_total", {"code": "429", "method": "POST", "host": host}
        )
        == 1
    )
    assert (
        metrics.sample(
            "rest_client_requests_total", {"code": "200", "method": "POST", "host": host}
        )
        == 1
    )
    assert seen[0].query["fieldManager"] == "jobset-controller"


async def test_server_errors_are_retried_then_raised(server: Any) -> None:
    url, script, seen = server
    script += [status(503, "ServiceUnavailable")]
    async with client(url, max_retries=2) as kube:
        with pytest.raises(ServerError):
            await kube.list(NODES)
    assert len(seen) == 3


@pytest.mark.parametrize(
    ("code", "reason", "want"),
    [
        pytest.param(404, "NotFound", NotFoundError, id="404 is NotFoundError"),
        pytest.param(409, "AlreadyExists", AlreadyExistsError, id="409 AlreadyExists"),
        pytest.param(409, "Conflict", ConflictError, id="409 on a stale resourceVersion"),
        pytest.param(410, "Expired", GoneError, id="410 Gone"),
    ],
)
async def test_error_statuses_map_to_typed_errors(
    server: Any, code: int, reason: str, want: type
) -> None:
    url, script, seen = server
    script += [status(code, reason)]
    async with client(url) as kube:
        with pytest.raises(want) as err:
            await kube.delete(JOBS, "j", namespace="ns", uid="u-1")
    assert err.value.reason == reason
    assert len(seen) == 1, "client errors are not retried"
    options = seen[0].json()
    assert options["propagationPolicy"] == "Foreground"
    assert options["preconditions"] == {"uid": "u-1"}


async def test_401_refreshes_credentials_once(server: Any) -> None:
    url, script, seen = server
    script += [status(401, "Unauthorized"), ok({"items": [], "metadata": {"resourceVersion": "7"}})]
    forced: list[bool] = []

    async def token(force: bool) -> str:
        forced.append(force)
        return "Bearer new" if force else "Bearer old"

    access = ClusterAccess(host=url, token_source=token)
    async with KubeClient(access, sleep=no_sleep) as kube:
        listing = await kube.list(JOBSETS, "ns")
    assert listing["metadata"]["resourceVersion"] == "7"
    assert [r.headers["Authorization"] for r in seen] == ["Bearer old", "Bearer new"]


async def test_list_follows_continue_tokens(server: Any) -> None:
    url, script, seen = server
    script += [
        ok({"items": [{"n": 1}], "metadata": {"continue": "c1", "resourceVersion": "5"}}),
        ok({"items": [{"n": 2}], "metadata": {}}),
    ]
    async with client(url) as kube:
        listing = await kube.list(JOBS, "ns")
    assert listing["items"] == [{"n": 1}, {"n": 2}]
    assert seen[1].query["continue"] == "c1"


async def test_undeclared_calls_fail_before_any_request(server: Any) -> None:
    url, script, seen = server
    script += [ok({})]
    async with client(url) as kube:
        with pytest.raises(UndeclaredCallError):
            await kube.create(NODES, {"metadata": {"name": "n"}})
    assert seen == []


async def test_a_collection_delete_without_a_selector_is_refused_before_any_request(
        server: Any) -> None:
    url, script, seen = server
    script += [ok({})]
    async with client(url) as kube:
        with pytest.raises(ValueError, match="needs a label selector"):
            await kube.delete_collection(JOBS, "ns", "")  # it would delete every Job
    assert seen == []


async def test_qps_limits_request_rate(server: Any) -> None:
    url, script, _ = server
    script += [ok({"kind": "Job"})]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    # A frozen clock: on a loaded machine real time between requests would refill the bucket.
    async with KubeClient(for_url(url), qps=10, burst=2, sleep=sleep, clock=lambda: 0.0) as kube:
        for i in range(4):
            await kube.create(JOBS, {"metadata": {"name": f"j{i}", "namespace": "ns"}})
    assert slept == pytest.approx([0.1, 0.2]), "beyond the burst of 2, one token per 1/qps s"


async def test_idle_connections_outlive_a_quiet_spell_but_not_the_servers_idle_timeout(
    server: Any,
) -> None:
    # kube-apiserver drops a connection idle for 90 s; aiohttp's own default (15 s) made every
    # burst after a quiet spell open and handshake one connection per parallel lane again.
    from jobset_infra.controller.runtime.kube import KEEPALIVE_SECONDS

    url, script, _ = server
    script.append(ok({"kind": "Status"}))
    api = client(url)
    await api.request("GET", "/version")
    connector = api._http().connector
    assert connector is not None
    assert 15 < connector._keepalive_timeout == KEEPALIVE_SECONDS < 90
    await api.close()


def raw(body: bytes) -> Responder:
    return lambda _: web.Response(body=body, content_type="application/json")


async def test_an_object_nested_deeper_than_the_api_server_allows_is_refused(
    server: Any,
) -> None:
    url, script, _ = server
    script.append(raw(b'{"metadata": {"name": "x"}, "spec": ' + b"[" * 20_000 + b"]" * 20_000
                      + b"}"))
    async with client(url) as kube:
        with pytest.raises(ResponseTooLargeError, match="deeper than 10000 levels"):
            await kube.list(JOBSETS, namespace="ns")


async def test_an_object_as_deep_as_the_api_server_allows_decodes(server: Any) -> None:
    url, script, _ = server
    script.append(raw(b'{"metadata": {"deep": ' + b"[" * 9_998 + b"]" * 9_998 + b"}}"))
    async with client(url) as kube:
        got = await kube.list(JOBSETS, namespace="ns")
    assert isinstance(got["metadata"]["deep"], list)


async def test_a_response_over_the_size_limit_is_refused(server: Any) -> None:
    url, script, _ = server
    script.append(raw(b'{"items": ["' + b"x" * (CONTROLLER_LIMITS.max_bytes + 1) + b'"]}'))
    async with client(url) as kube:
        with pytest.raises(ResponseTooLargeError, match="over 67108864 bytes"):
            await kube.list(JOBSETS, namespace="ns")


async def test_an_answer_not_to_decode_is_read_whole_and_errors_still_decoded(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`decode=False` (the executor's Job deletes, and creates nothing reads): a successful
    answer's body is never decoded (yet read to its end, and the next requests go through);
    an error's body is decoded as always, for its typed error."""
    import jobset_infra.controller.runtime.kube_bodies as kube_module

    url, script, seen = server
    big = {"kind": "Job", "spec": {"filler": "x" * 200_000}}  # over one read of the body
    script += [ok(big), ok(big), status(409, "AlreadyExists"), ok({"kind": "Job"})]
    decoded: list[int] = []
    real = kube_module.decoded

    def counting(data: bytes) -> Any:
        decoded.append(len(data))
        return real(data)

    monkeypatch.setattr(kube_module, "decoded", counting)
    job = {"metadata": {"name": "j", "namespace": "ns"}}
    async with client(url) as kube:
        assert await kube.create(JOBS, job, decode=False) == {}
        assert await kube.delete(JOBS, "j", namespace="ns", decode=False) == {}
        assert decoded == [], "no successful answer was decoded"
        with pytest.raises(AlreadyExistsError) as err:
            await kube.create(JOBS, job, decode=False)
        assert err.value.reason == "AlreadyExists"
        assert await kube.create(JOBS, job) == {"kind": "Job"}, "the default decodes"
    assert len(decoded) == 2
    assert [s.method for s in seen] == ["POST", "DELETE", "POST", "POST"]
