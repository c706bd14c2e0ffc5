"""`python -m benchmarks.settled_pass [N ...]`: the controller's CPU for one pass over a settled
JobSet of N Jobs (every Job ready, status up to date: an empty plan), as the runtime runs it.

A pass here is what `JobSetController` does between its snapshot and the executor: the core's
decision with the tally of the children kept from their events (`decider.core_decider`), then
the recovery metrics' bookkeeping (`RecoveryTracker.observe`). The state is
`bench_reconcile.py`'s "noop" scenario. Printed per N: the best of 15 runs of 20 passes, CPU
milliseconds per pass. Runs against whichever `jobset_infra` is first on the path, so the same
file times another checkout when started from there (`cd /tmp/before && python
/path/to/benchmarks/settled_pass.py`), as issue 33's before/after did.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Sequence

from benchmarks.bench_reconcile import NOW, _best, _states
from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.controller.core import observe
from jobset_infra.controller.core.child_tally import ChildTally, tally_basis
from jobset_infra.controller.core.types import Observed
from jobset_infra.controller.runtime.decider import core_config, core_decider
from jobset_infra.controller.runtime.metrics import Metrics
from jobset_infra.controller.runtime.recovery import RecoveryTracker

PASSES = 20


def pass_ms(jobs: int, runs: int = 15) -> float:
    """CPU milliseconds of one settled pass over `jobs` Jobs (best of `runs` runs)."""
    scenarios, _ = _states(jobs, 1)
    manifest, children = scenarios["noop"]
    kids = tuple(children)
    config = core_config(ControllerConfig())
    uid = str(manifest["metadata"]["uid"])
    tallies = {uid: ChildTally(tally_basis(observe(manifest, kids).jobset, config), kids)}
    decide = core_decider(config, None, lambda _: tallies[uid])
    wants_tallies = "tallies" in inspect.signature(RecoveryTracker).parameters
    extra = (tallies,) if wants_tallies else ()  # a checkout from before the tracker read it
    tracker = RecoveryTracker(Metrics(), lambda: NOW, *extra)

    def passes() -> None:
        for _ in range(PASSES):
            plan = decide(Observed(jobset=manifest, jobs=kids, service_exists=True), NOW)
            tracker.observe("ns/bench", manifest, kids, plan, NOW)
            if plan.actions:
                raise AssertionError(f"a settled JobSet planned {plan.actions[:2]}")

    _, cpu = _best(passes, runs)
    return cpu / PASSES * 1e3


def main(argv: Sequence[str] | None = None) -> int:
    sizes = [int(a) for a in (sys.argv[1:] if argv is None else argv)] or [2048, 10_000]
    for jobs in sizes:
        print(json.dumps({"bench": "settled_pass", "jobs": jobs,
                          "cpu_ms_per_pass": round(pass_ms(jobs), 3)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
