"""One process of a multi-process JAX program on CPU, as a JobSet's pod runs it.

Every pod of the JobSet runs this. The process id comes from the pod's place in the JobSet (its
Job's index times the pods per Job, plus its completion index), the coordinator is pod 0 of job
0, reached by its DNS name through the JobSet's headless Service (the `jobset.sigs.k8s.io/
coordinator` annotation), as upstream JobSet's JAX examples do. Each process prints the global
device count, which is the number of processes (one CPU device each), and all of them add up
their process ids to show they talk to each other.

FAIL_PROCESS=<id> makes that process exit 1 on the JobSet's first attempt (restart-attempt 0):
the failure policy restarts the JobSet, and the next attempt completes.
"""

from __future__ import annotations

import os
import sys

COORDINATOR_PORT = 8476


def main() -> int:
    job_index = int(os.environ["JOB_INDEX"])
    pod_index = int(os.environ["JOB_COMPLETION_INDEX"])
    pods_per_job = int(os.environ["PODS_PER_JOB"])
    processes = int(os.environ["NUM_PROCESSES"])
    attempt = int(os.environ.get("RESTART_ATTEMPT") or 0)
    process_id = job_index * pods_per_job + pod_index
    if os.environ.get("FAIL_PROCESS") == str(process_id) and attempt == 0:
        print(f"process {process_id}: exiting 1 on attempt {attempt}, on purpose", flush=True)
        return 1

    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(
        coordinator_address=f"{os.environ['COORDINATOR']}:{COORDINATOR_PORT}",
        num_processes=processes, process_id=process_id)
    devices = jax.device_count()
    ids = multihost_utils.process_allgather(jnp.array([process_id]))
    print(f"process {process_id} of {jax.process_count()} (attempt {attempt}): "
          f"global devices {devices}, local devices {jax.local_device_count()}, "
          f"sum of process ids {int(ids.sum())}", flush=True)
    jax.distributed.shutdown()
    return 0 if devices == processes else 2


if __name__ == "__main__":
    sys.exit(main())
