"""Plan time: how long the Pulumi program takes to construct under mocks (no cloud).

The committed `v5e-multislice` stack (4 v5e 2x4 slices) and the same stack with 64 slices (the
Kueue quota and the workload's replicas follow the slice count). Each is run with
`plan.offline.run_offline`, which `jobset-infra plan` uses: every resource is registered
with Pulumi's mock monitor, inputs validated, nothing is sent anywhere. The first run in the
process also pays the imports (pulumi, pulumi-gcp, pulumi-kubernetes); it is reported as `cold`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from jobset_infra.plan.command import PROJECT, stack_config

STACKS = Path(__file__).resolve().parent.parent / "stacks"
STACK = "v5e-multislice"


@dataclass(frozen=True)
class PlanTime:
    variant: str
    slices: int
    resources: int
    seconds: float


def variant_config(slices: int | None) -> dict[str, str]:
    """The v5e-multislice stack's config, with `slices` node pools when given."""
    config = stack_config(STACKS / f"Pulumi.{STACK}.yaml")
    if slices is not None:
        key = f"{PROJECT}:slices"
        config[key] = json.dumps(json.loads(config[key]) | {"slices": slices})
    return config


def plan_once(slices: int | None) -> tuple[int, float, int]:
    """(resources registered, seconds, slices) for one offline run of the program."""
    from jobset_infra.plan.offline import run_offline

    config = variant_config(slices)
    count = json.loads(config[f"{PROJECT}:slices"])["slices"]
    started = time.perf_counter()
    run = run_offline(STACKS / "__main__.py", project=PROJECT, stack=STACK, config=config)
    return len(run.registrations), time.perf_counter() - started, int(count)


def measure(runs: int, variants: tuple[int | None, ...] = (None, 64)) -> list[PlanTime]:
    """A cold run first, then `runs` runs of each variant."""
    results: list[PlanTime] = []
    resources, seconds, count = plan_once(variants[0])
    results.append(PlanTime("cold (first in process)", count, resources, seconds))
    for slices in variants:
        for _ in range(runs):
            resources, seconds, count = plan_once(slices)
            results.append(PlanTime(STACK if slices is None else f"{STACK}, {slices} slices",
                                    count, resources, seconds))
    return results
