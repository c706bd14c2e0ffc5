"""`python -m benchmarks.bench_hostile`: GET /version latency on the sim while hostile bodies are
decoded, and the sim's peak RSS (issue 18: /version within 100 ms while a hostile request is
parsed; RSS under 300 MiB).

The sim runs in its own process (`--serve`), so its worker thread and event loop compete for its
own GIL only. For each body a POST is sent from a thread and, while it is in flight, GET
/version is asked back to back; the latencies of the answers that came while the POST was still
being handled are reported (count, p50, p99, max), with the POST's own time and status. The
bodies: the largest YAML the node budget lets through (about 190,000 nodes, the longest parse a
body may cost), 3 MiB of JSON numbers, objects and strings, JSON 9,999 levels deep (stored, as
by the real server), and two refused at once (an alias bomb, 50,000 levels). Prints one JSON
line per body and a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

TARGET_MS = 100.0
RSS_TARGET_MIB = 300.0
CM = "/api/v1/namespaces/default/configmaps"


def _bodies() -> list[tuple[str, str, bytes]]:
    yaml_entries = "".join(f"  k{i}: v\n" for i in range(95_000))
    bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
        f"{x}: &{x} [" + ",".join([f"*{p}"] * 9) + "]\n"
        for p, x in zip("abcdefgh", "bcdefghi", strict=True))
    def cm(name: str, field: str) -> bytes:
        return (f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},'
                f'"x":{field}}}').encode()
    return [
        ("yaml-190k-nodes", "application/yaml",
         ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n"
          + yaml_entries).encode()),
        ("json-3mib-list", "application/json",
         cm("list", "[" + ",".join(["1"] * 1_500_000) + "]")),
        ("json-3mib-objects", "application/json",
         cm("objects", "[" + ",".join(['{"a":1}'] * 370_000) + "]")),
        ("json-3mib-strings", "application/json",
         cm("strings", "[" + ",".join(['"a"'] * 740_000) + "]")),
        ("json-9999-deep", "application/json", cm("deep", "[" * 9_998 + "]" * 9_998)),
        ("yaml-alias-bomb", "application/yaml", bomb.encode()),
        ("json-50000-deep", "application/json", cm("deeper", "[" * 50_000 + "]" * 50_000)),
    ]


def _post(url: str, body: bytes, content_type: str, result: dict[str, Any]) -> None:
    started = time.perf_counter()
    request = urllib.request.Request(url + CM, data=body, method="POST",
                                     headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            result["status"] = response.status
    except urllib.error.HTTPError as err:
        result["status"] = err.code
    result["post_s"] = time.perf_counter() - started


def measure(url: str, name: str, content_type: str, body: bytes) -> dict[str, Any]:
    result: dict[str, Any] = {}
    poster = threading.Thread(target=_post, args=(url, body, content_type, result))
    poster.start()
    during: list[float] = []
    while poster.is_alive():
        started = time.perf_counter()
        with urllib.request.urlopen(url + "/version", timeout=30) as response:
            response.read()
        if poster.is_alive():  # answered while the POST was still being handled
            during.append((time.perf_counter() - started) * 1000)
    poster.join()
    ordered = sorted(during)
    return {
        "body": name, "bytes": len(body), "status": result.get("status"),
        "post_s": round(result.get("post_s", 0.0), 3), "version_answers_during": len(during),
        "version_p50_ms": round(statistics.median(ordered), 1) if ordered else None,
        "version_p99_ms": round(ordered[int(len(ordered) * 0.99)], 1) if ordered else None,
        "version_max_ms": round(ordered[-1], 1) if ordered else None,
    }


async def _serve(port_file: Path) -> None:
    from jobset_infra.sim.apiserver.server import Sim

    sim = Sim(port=0)
    await sim.start()
    port_file.write_text(str(sim.port))
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await sim.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_hostile")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve(args.serve))
        return 0
    port_file = Path(tempfile.mkdtemp()) / "port"
    sim = subprocess.Popen([sys.executable, "-m", "benchmarks.bench_hostile", "--serve",
                            str(port_file)], stdin=subprocess.PIPE)
    while not port_file.exists() or not port_file.read_text():
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port_file.read_text()}"
    rows = [measure(url, *body) for body in _bodies()]
    for row in rows:
        print(json.dumps(row))
    assert sim.stdin is not None
    sim.stdin.close()
    _, _, usage = os.wait4(sim.pid, 0)
    worst = max((r["version_max_ms"] or 0.0) for r in rows)
    summary = {"sim_peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
               "version_max_ms_during_parse": worst, "target_ms": TARGET_MS,
               "within_target": worst <= TARGET_MS and usage.ru_maxrss / 1024 < RSS_TARGET_MIB}
    print(json.dumps(summary))
    return 0 if summary["within_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
