"""Pulumi ComponentResources: GkeCluster, TpuSlicePools, JobSetSystem, Kueue, JobSet.

Exports load lazily, so importing one component does not import every
provider SDK. To export a component, add its name -> module to `_EXPORTS` and its name to `__all__`.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    "GkeCluster": "jobset_infra.components.gke_cluster",
    "GkeClusterArgs": "jobset_infra.components.gke_cluster",
    "TpuSlicePools": "jobset_infra.components.tpu_slice_pools",
    "TpuSlicePoolsArgs": "jobset_infra.components.tpu_slice_pools",
    "JobSetSystem": "jobset_infra.components.jobset_system",
    "JobSetSystemArgs": "jobset_infra.components.jobset_system",
    "ImageBuild": "jobset_infra.components.jobset_system",
    "Kueue": "jobset_infra.components.kueue",
    "KueueArgs": "jobset_infra.components.kueue",
    "JobSet": "jobset_infra.components.jobset",
    "JobSetArgs": "jobset_infra.components.jobset",
}

__all__ = [
    "GkeCluster",
    "GkeClusterArgs",
    "ImageBuild",
    "JobSet",
    "JobSetArgs",
    "JobSetSystem",
    "JobSetSystemArgs",
    "Kueue",
    "KueueArgs",
    "TpuSlicePools",
    "TpuSlicePoolsArgs",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
