"""How much of a process's time goes to Python's cyclic garbage collector.

    python -m benchmarks.gc_probe <module> [args...]     # run <module> as __main__, measured

`GcClock` sums the wall time of every collection per generation through `gc.callbacks`. As a
wrapper it writes the totals as JSON to `$BENCH_GC_OUT` after each full (generation 2)
collection and at exit, so a parent can read them while the child runs. The benchmark process
installs a `GcClock` on itself the same way.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import runpy
import sys
import time
from pathlib import Path
from typing import Any


class GcClock:
    """Seconds and counts of collections per generation since `install()`."""

    def __init__(self, out: Path | None = None) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.counts = [0, 0, 0]
        self._started = 0.0
        self._out = out

    def install(self) -> GcClock:
        gc.callbacks.append(self._callback)
        return self

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = int(info.get("generation", 0))
        self.seconds[generation] += time.perf_counter() - self._started
        self.counts[generation] += 1
        if generation == 2:
            self.dump()

    def snapshot(self) -> dict[str, Any]:
        return {"seconds": list(self.seconds), "counts": list(self.counts)}

    def dump(self) -> None:
        if self._out is not None:
            self._out.write_text(json.dumps(self.snapshot()))


def read(path: Path) -> dict[str, Any]:
    """The totals a wrapped child wrote last (zeros before its first full collection)."""
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):
        return {"seconds": [0.0, 0.0, 0.0], "counts": [0, 0, 0]}
    return data


def main() -> None:
    if len(sys.argv) < 2:
        print("usage: python -m benchmarks.gc_probe <module> [args...]", file=sys.stderr)
        sys.exit(2)
    out = os.environ.get("BENCH_GC_OUT")
    clock = GcClock(Path(out) if out else None).install()
    atexit.register(clock.dump)
    module, sys.argv = sys.argv[1], sys.argv[1:]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
