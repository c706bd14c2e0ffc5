"""Would a stack run this JobSet? `jobset-infra validate --stack NAME`'s check (pure).

The stack's config says which TPU node pools exist (`StackConfig.pool_plans`), who places
slices in them (`placement`) and which queue admits JobSets (`kueue.queues`). A JobSet is
checked against them the way the JobSet component checks the one it renders at preview
(`placement.slice_modes.slice_placement_problems`: the placement mode, node selectors, chips
per pod, pods per slice, slices the pools can hold), so `validate` and `plan` say the same
sentences; plus what only the stack knows: a queue label naming no LocalQueue of the stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.manifests.placement_domains import pool_domains
from jobset_infra.placement.slice_modes import slice_placement_problems
from jobset_infra.stack.config import StackConfig

__all__ = ["stack_jobset_problems"]


def stack_jobset_problems(config: StackConfig, jobset: Mapping[str, Any]) -> list[str]:
    """Return why the stack would not admit or place `jobset` (empty when it would)."""
    problems = _queue_problems(config, jobset)
    plans = config.pool_plans()
    return problems + slice_placement_problems(jobset, pool_domains(plans), config.placement)


def _queue_problems(config: StackConfig, jobset: Mapping[str, Any]) -> list[str]:
    meta = jobset.get("metadata") or {}
    queue = (meta.get("labels") or {}).get(c.KUEUE_QUEUE_NAME_LABEL)
    if queue is None:
        return []
    where = f"metadata.labels[{c.KUEUE_QUEUE_NAME_LABEL}]"
    if not config.kueue.enabled:
        return [f"{where}: the stack runs no Kueue (kueue.enabled: false), so nothing would "
                "ever admit the JobSet; drop the label"]
    queues = config.kueue.queues
    namespace = str(meta.get("namespace") or "default")
    if queue != queues.local_queue_name:
        return [f"{where}: {queue!r} is no LocalQueue of the stack; its LocalQueue is "
                f"{queues.local_queue_name!r}"]
    if namespace not in queues.namespaces:
        return [f"{where}: namespace {namespace!r} has no LocalQueue {queue!r} (the stack makes "
                f"it in {', '.join(queues.namespaces)}), so Kueue would never admit it"]
    return []
