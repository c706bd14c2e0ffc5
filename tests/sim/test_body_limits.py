"""Bodies at and over the API server's bounds: 413 over 3 MiB, 400 past 10,000 levels or an
alias bomb (the real server's words, recorded from kube-apiserver v1.37.2), never a 500; big
bodies are decoded off the event loop."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp
import pytest

from jobset_infra.api.input_limits import APISERVER_REQUEST_BYTES
from jobset_infra.sim.apiserver.server import Sim

CM_URL = "/api/v1/namespaces/default/configmaps"
BOMB = (
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{x}: &{x} [" + ",".join([f"*{p}"] * 9) + "]\n"
        for p, x in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with Sim() as sim, aiohttp.ClientSession(base_url=sim.url) as session:
        yield session


async def post(http: aiohttp.ClientSession, body: bytes, content_type: str = "application/json",
               ) -> tuple[int, dict[str, object]]:
    async with http.post(CM_URL, data=body, headers={"Content-Type": content_type}) as response:
        return response.status, await response.json()


def configmap_with(field: str, name: str = "deep") -> bytes:
    head = f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}'
    return f'{head},"x":{field}}}'.encode()


async def test_a_body_over_3_mib_is_413_in_the_real_servers_words(
    http: aiohttp.ClientSession,
) -> None:
    body = configmap_with(json.dumps("x" * APISERVER_REQUEST_BYTES))
    status, answer = await post(http, body)
    assert status == 413
    assert answer["reason"] == "RequestEntityTooLarge"
    assert answer["message"] == "Request entity too large: limit is 3145728"


async def test_a_64_mib_body_is_413_without_being_read(http: aiohttp.ClientSession) -> None:
    status, answer = await post(http, b"[" + b" " * (64 * 1024 * 1024) + b"]")
    assert (status, answer["code"]) == (413, 413)


@pytest.mark.parametrize(
    ("depth", "status"),
    [
        pytest.param(5_000, 201, id="5,000 levels are stored, as by the real server"),
        pytest.param(9_999, 201, id="the deepest body the real server takes"),
        pytest.param(10_000, 400, id="one level more is refused"),
        pytest.param(50_000, 400, id="far deeper is refused the same way"),
    ],
)
async def test_json_depth_is_bounded_as_the_real_server_bounds_it(
    http: aiohttp.ClientSession, depth: int, status: int
) -> None:
    got, answer = await post(http, configmap_with("[" * depth + "]" * depth, f"deep{depth}"))
    assert got == status
    if status == 400:
        assert answer["reason"] == "BadRequest"
        assert answer["message"] == (
            "the object provided is unrecognized (must be of type ConfigMap): couldn't get "
            "version/kind; json parse error: invalid character '[' exceeded max depth "
            '({"apiVersion":"v1","kind":"Con ...)'
        )


async def test_a_yaml_alias_bomb_is_400_at_once(http: aiohttp.ClientSession) -> None:
    status, answer = await post(http, BOMB.encode(), "application/yaml")
    assert status == 400
    assert answer["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): yaml: document "
        "contains excessive aliasing (61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170"
        " ...)"
    )


async def test_small_yaml_aliases_are_expanded(http: aiohttp.ClientSession) -> None:
    body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alias\ndata: &d {a: b}\nx: *d\n"
    status, answer = await post(http, body, "application/yaml")
    assert status == 201 and answer["data"] == {"a": "b"}


async def test_yaml_deeper_than_the_parser_takes_is_400(http: aiohttp.ClientSession) -> None:
    body = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\nx: "
            + "[" * 1500 + "]" * 1500 + "\n").encode()
    status, answer = await post(http, body, "application/yaml")
    assert status == 400 and "exceeded max depth of 1000" in str(answer["message"])


async def test_version_answers_while_a_large_body_is_parsed(
    http: aiohttp.ClientSession,
) -> None:
    entries = "".join(f"  k{i}: v\n" for i in range(90_000))
    body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n{entries}".encode()
    assert len(body) < APISERVER_REQUEST_BYTES
    parse = asyncio.create_task(post(http, body, "application/yaml"))
    answered_during_parse = 0
    while not parse.done():
        async with http.get("/version") as response:
            assert response.status == 200
        answered_during_parse += not parse.done()
    assert answered_during_parse > 0
    status, _ = await parse
    assert status == 201
