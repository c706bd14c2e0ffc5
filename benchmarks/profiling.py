"""Where the time goes: cProfile of both processes during one scale run.

    .venv/bin/python -m benchmarks.profiling --jobs 2048 --out /tmp/prof

The controller child runs under `python -m cProfile -o <out>/controller.prof` (written when it
exits on SIGTERM); this process (the sim, its Job controller, the benchmark's bookkeeping) is
profiled in-process into `<out>/sim.prof`. The top functions of each by cumulative and by own
time are printed; open the files with `python -m pstats` or snakeviz for more.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
from pathlib import Path

from benchmarks.cluster import running
from benchmarks.scale import run_once


async def profiled_run(jobs: int, out: Path) -> dict[str, object]:
    sim_profile = cProfile.Profile()
    async with running(profile=out / "controller.prof") as bench:
        sim_profile.enable()
        result = await run_once(bench, jobs, f"profile-{jobs}", quiet_window=1.0,
                                changes=min(jobs, 256))
        sim_profile.disable()
    sim_profile.dump_stats(out / "sim.prof")
    return result.as_dict()


def top(path: Path, sort: str, limit: int) -> str:
    stream = io.StringIO()
    stats = pstats.Stats(str(path), stream=stream)
    stats.strip_dirs().sort_stats(sort).print_stats(limit)
    return stream.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2048)
    parser.add_argument("--out", type=Path, default=Path("/tmp/jobset-bench-profile"))
    parser.add_argument("--limit", type=int, default=25)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(asyncio.run(profiled_run(args.jobs, args.out))))
    for name in ("controller.prof", "sim.prof"):
        for sort in ("tottime", "cumulative"):
            print(f"===== {name} by {sort}")
            print(top(args.out / name, sort, args.limit))


if __name__ == "__main__":
    main()
