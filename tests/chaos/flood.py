"""A flood of /metrics scrapes, each with a new bogus bearer token, from a process of its own
(so the test's own event loop measures undisturbed): `python -m tests.chaos.flood PORT
[CONCURRENCY]` prints `flooding` once it runs, then floods until SIGTERM, then prints one JSON
line: how many answers of each status."""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import ssl
import sys

import aiohttp


async def flood(port: int, concurrency: int) -> dict[int, int]:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed
    answers: dict[int, int] = {}
    tokens = itertools.count()
    url = f"https://127.0.0.1:{port}/metrics"

    async def one(http: aiohttp.ClientSession) -> None:
        while not stop.is_set():
            try:
                async with http.get(url, ssl=context, headers={
                        "Authorization": f"Bearer bogus-{next(tokens)}"}) as response:
                    await response.read()
                    answers[response.status] = answers.get(response.status, 0) + 1
            except aiohttp.ClientError:
                answers[0] = answers.get(0, 0) + 1

    async with aiohttp.ClientSession() as http:
        print("flooding", flush=True)
        await asyncio.gather(*(one(http) for _ in range(concurrency)))
    return answers


if __name__ == "__main__":
    result = asyncio.run(flood(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 20))
    print(json.dumps(result), flush=True)
