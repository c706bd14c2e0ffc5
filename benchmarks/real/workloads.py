"""The JobSets the real-cluster scenarios create (pure builders), and the Nodes they need.

Both controllers get the same manifest, with every field either controller would default
written out (completionMode Indexed, restartPolicy Never, backoffLimit 0 so one failed Pod
fails its Job, `maxRestarts: 3`), so neither depends on the other's defaulting.
"""

from __future__ import annotations

import math
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.testing.jobsets import make_jobset
from jobset_infra.tpu import constants as tpu

JOBSET: Final = "ms"
RJOB: Final = "slice"
CPU_PODS_PER_NODE: Final = 110  # the sim's CPU pool allows 110 Pods per Node (as GKE)
HOSTS_PER_SLICE: Final = 4  # v5e 4x4: 16 chips on 4 hosts of 4 (ct5lp-hightpu-4t)
ACCELERATOR: Final = "tpu-v5-lite-podslice"


def cpu_nodes(pods: int) -> str:
    """A `--nodes` spec of CPU Nodes with room for `pods` one-container Pods (plus slack)."""
    return f"cpu:{max(2, math.ceil(pods * 1.1 / CPU_PODS_PER_NODE))}"


def tpu_nodes(slices: int) -> str:
    return f"v5e-4x4:{slices}"


def _base(name: str, namespace: str, replicas: int, parallelism: int) -> Any:
    return (
        make_jobset(name, namespace)
        .replicated_job(RJOB, replicas=replicas, parallelism=parallelism,
                        completion_mode="Indexed")
        .job_spec(RJOB, backoffLimit=0)
        .pod_spec(RJOB, restartPolicy="Never",
                  containers=[{"name": "main", "image": "busybox:1.36"}])
        .failure_policy(max_restarts=3)
    )


def scale_jobset(namespace: str, jobs: int, name: str = JOBSET, *,
                 suspend: bool = False) -> dict[str, Any]:
    """One replicated job of `jobs` one-Pod Jobs on the CPU pool (suspended: no Pods)."""
    manifest: dict[str, Any] = _base(name, namespace, jobs, 1).obj()
    if suspend:
        manifest["spec"]["suspend"] = True
    return manifest


def multislice_jobset(namespace: str, slices: int, name: str = JOBSET) -> dict[str, Any]:
    """`slices` v5e 4x4 slices, one Job of 4 Pods each (one per host, 4 chips each), with
    exclusive placement per node pool: a Multislice training job as GKE runs it."""
    container = {"name": "main", "image": "busybox:1.36",
                 "resources": {"limits": {tpu.TPU_RESOURCE: "4"},
                               "requests": {tpu.TPU_RESOURCE: "4"}}}
    manifest: dict[str, Any] = (
        _base(name, namespace, slices, HOSTS_PER_SLICE)
        .exclusive(tpu.GKE_NODEPOOL_LABEL)
        .pod_spec(RJOB, restartPolicy="Never", containers=[container],
                  nodeSelector={"cloud.google.com/gke-tpu-accelerator": ACCELERATOR,
                                "cloud.google.com/gke-tpu-topology": "4x4"},
                  tolerations=[{"key": tpu.TPU_RESOURCE, "operator": "Exists",
                                "effect": "NoSchedule"}])
        .obj()
    )
    return manifest


def first_job_prefix(name: str = JOBSET) -> str:
    """Pods of Job index 0 are named `<jobset>-<rjob>-0-<completion index>-<suffix>`."""
    return f"{name}-{RJOB}-0-"


EXIT_CODE: Final = "jobset-infra.dev/exit-code"
RESTARTS_KEY: Final = c.RESTARTS_KEY
