"""JAX on 2 TPU v5e 2x4 slices (2 VMs each) of an existing GKE cluster, queued through Kueue.

A small Pulumi program: the cluster, its slice pools, the JobSet API and Kueue already exist (e.g.
from the `v5e-multislice` stack); this adds one training JobSet. `tpu_job` derives replicas = 2
slices, parallelism = completions = 2 pods per slice, `google.com/tpu: 4` per pod, the TPU
toleration and nodeSelector, one node pool per child Job, the TPU ports and hostNetwork DNS.

    pulumi config set kubeconfig ~/.kube/config      # a kubeconfig for the GKE cluster
    pulumi up
"""

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from jobset_infra.components.jobset import JobSet, JobSetArgs, tpu_job
from jobset_infra.tpu.slice import TpuSlice

config = pulumi.Config()
kubeconfig_path = Path(config.get("kubeconfig") or "~/.kube/config").expanduser()
kubeconfig = kubeconfig_path.read_text() if kubeconfig_path.is_file() else ""
provider = k8s.Provider(
    "gke", kubeconfig=pulumi.Output.secret(kubeconfig), context=config.get("context")
)

# The pools exist already: give their shape and how many there are (or pass a TpuSlicePools).
v5e_2x4 = TpuSlice("tpu-v5-lite-podslice", "2x4", machine_type="ct5lp-hightpu-4t")
slices = config.get_int("slices") or 2

train = JobSet(
    "jax-multislice",
    JobSetArgs(
        provider=provider,
        name="jax-multislice",
        replicated_jobs=[
            tpu_job(
                (v5e_2x4, slices),
                {
                    "name": "jax",
                    "image": "python:3.11",
                    "command": [
                        "bash",
                        "-c",
                        'pip install --quiet "jax[tpu]" -f '
                        "https://storage.googleapis.com/jax-releases/libtpu_releases.html && "
                        "python -c \"import jax; print('Global device count:', "
                        'jax.device_count())"',
                    ],
                },
            )
        ],
        failure_policy={"maxRestarts": 3},
        queue="tpu-queue",
        priority_class="medium",
    ),
)

pulumi.export("jobset", train.name)
pulumi.export("childJobs", train.child_job_names)
