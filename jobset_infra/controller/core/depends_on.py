"""DependsOn: a replicated job starts only once the replicated jobs it depends on reached a
status (upstream `depends_on.go`, `dependencyReachedStatus`).

`Ready` is reached when every Job of the dependency is ready or finished (ready + succeeded +
failed >= replicas); `Complete` when every Job of it succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping

from jobset_infra.api.models import DependsOnStatus, ReplicatedJob
from jobset_infra.controller.core.replicated_jobs_status import RJobCounts

__all__ = ["dependencies_reached"]


def dependencies_reached(
    rjob: ReplicatedJob, counts: Mapping[str, RJobCounts], replicas: Mapping[str, int]
) -> bool:
    """Return whether every dependency of `rjob` reached its status (no dependencies: True)."""
    for dep in rjob.depends_on or ():
        status = counts.get(dep.name)
        if status is None or dep.name not in replicas:
            return False
        want = replicas[dep.name]
        if dep.status is DependsOnStatus.COMPLETE:
            if status.succeeded < want:
                return False
        elif status.ready + status.succeeded + status.failed < want:
            return False
    return True
