"""Where our controller spends its time on the real control plane: one run under cProfile.

    .venv/bin/python -m benchmarks.real.profile --scenario scale --size 2048 --out /tmp/prof

Runs one scenario (as `python -m benchmarks --real` does) with `jobset-controller` under
`python -m cProfile -o <out>/ours-<scenario>-<size>.prof` (written when it exits on SIGTERM),
prints the run's JSON line and the top functions by own and by cumulative time. Upstream's
manager exposes no profiler (no pprof flag); its side of the analysis is its CPU seconds, its
writes (audit log) and the API server's webhook metrics, which every run records.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import pstats
from pathlib import Path

from benchmarks.real.peers import Ours
from benchmarks.real.scenarios import Run, placement, scale
from benchmarks.real.testbed import DEFAULT, LIFTED, start_testbed
from benchmarks.real.workloads import cpu_nodes, tpu_nodes


async def profiled(scenario: str, size: int, lifted: bool, out: Path) -> dict[str, object]:
    limits = LIFTED if lifted else DEFAULT
    profile = out / f"ours-{scenario}-{size}{'-lifted' if lifted else ''}.prof"
    nodes = tpu_nodes(size) if scenario == "placement" else cpu_nodes(size)
    run = Run(scenario, "ours", size, limits.label, 0)
    async with start_testbed(Ours(), nodes, limits, out / "run", profile=profile) as bed:
        if scenario == "placement":
            await placement(bed, run, quiet_window=2.0, recover=True)
        else:
            await scale(bed, run, quiet_window=2.0)
    return run.as_dict() | {"profile": str(profile)}


def top(path: Path, sort: str, limit: int) -> str:
    stream = io.StringIO()
    pstats.Stats(str(path), stream=stream).strip_dirs().sort_stats(sort).print_stats(limit)
    return stream.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=("scale", "placement"), default="scale")
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--lifted", action="store_true", help="client limit 100000/100000")
    parser.add_argument("--out", type=Path, default=Path("/tmp/jobset-real-profile"))
    parser.add_argument("--limit", type=int, default=30)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(profiled(args.scenario, args.size, args.lifted, args.out))
    print(json.dumps(result, default=str))
    for sort in ("tottime", "cumulative"):
        print(f"===== by {sort}")
        print(top(Path(str(result["profile"])), sort, args.limit))


if __name__ == "__main__":
    main()
