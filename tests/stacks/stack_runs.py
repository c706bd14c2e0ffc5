"""Run a committed stack offline, once per test session (each run takes a few seconds)."""

from __future__ import annotations

import functools
from pathlib import Path

from jobset_infra.plan.command import PROJECT, stack_config
from jobset_infra.plan.offline import OfflineRun, run_offline

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
STACK_NAMES = ("local", "v5e-multislice", "v5e-dev", "v6e-multislice", "v5p-multislice",
               "tpu7x-multislice", "v6e-flex")


def committed_config(stack: str) -> dict[str, str]:
    """Return the config of stacks/Pulumi.<stack>.yaml as Pulumi hands it to the program."""
    return stack_config(STACKS / f"Pulumi.{stack}.yaml")


@functools.cache
def run_stack(stack: str) -> OfflineRun:
    """Return what stacks/__main__.py registers with the committed config (cached)."""
    return run_offline(
        STACKS / "__main__.py", project=PROJECT, stack=stack, config=committed_config(stack)
    )
