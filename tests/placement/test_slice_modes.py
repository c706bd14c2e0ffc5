"""slice_placement_problems: one placer per JobSet, the one its stack's queue gives, slices that
fit the declared pools; the sentences the JobSet component and `validate --stack` print."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from jobset_infra.api import constants as k
from jobset_infra.api import kueue_tas as tas
from jobset_infra.manifests.placement_domains import pool_domains
from jobset_infra.manifests.workload import TpuJob, TpuTarget, WorkloadSpec, plan_workload
from jobset_infra.placement.slice_modes import asks_for_tas, slice_placement_problems
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools_text import parse_pools_text, tpu_plans

PLANS = tpu_plans(parse_pools_text("v5e-2x4:4"))
DECLARED = pool_domains(PLANS)
Manifest = dict[str, Any]


def _jobset(placer: Placer, *, queue: str | None = "tpu-queue") -> Manifest:
    job = TpuJob("slice", {"name": "main", "image": "python:3.12"}, TpuTarget.from_plan(PLANS[0]))
    spec = WorkloadSpec(name="train", replicated_jobs=[job], queue=queue, placement=placer)
    return copy.deepcopy(dict(plan_workload(spec).manifest))


def _pod_meta(manifest: Manifest) -> Manifest:
    pod: Manifest = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    return pod.setdefault("metadata", {})


def _both(m: Manifest) -> None:
    m["metadata"]["annotations"] = {k.EXCLUSIVE_KEY: "cloud.google.com/gke-nodepool"}


def _five_slices(m: Manifest) -> None:
    m["spec"]["replicatedJobs"][0]["replicas"] = 5


def _eight_chips(m: Manifest) -> None:
    container = m["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]
    for kind in ("requests", "limits"):
        container["resources"][kind]["google.com/tpu"] = "8"


def _slice_size(value: str) -> Callable[[Manifest], None]:
    def change(m: Manifest) -> None:
        _pod_meta(m)["annotations"][tas.PODSET_SLICE_SIZE] = value
    return change


def _slice_level(value: str) -> Callable[[Manifest], None]:
    def change(m: Manifest) -> None:
        _pod_meta(m)["annotations"][tas.PODSET_SLICE_REQUIRED_TOPOLOGY] = value
    return change


def _one_pod_a_job(m: Manifest) -> None:
    job = m["spec"]["replicatedJobs"][0]["template"]["spec"]
    job["parallelism"] = job["completions"] = 1


def _topology(value: str) -> Callable[[Manifest], None]:
    def change(m: Manifest) -> None:
        pod = m["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
        pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = value
    return change


def _no_queue(m: Manifest) -> None:
    del m["metadata"]["labels"][k.KUEUE_QUEUE_NAME_LABEL]


def _unchanged(m: Manifest) -> None:
    return None


CASES = [
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _unchanged, None,
                 id="a TAS JobSet on a TAS stack fits four pools"),
    pytest.param(Placer.CONTROLLER, Placer.CONTROLLER, _unchanged, None,
                 id="a controller JobSet on a controller stack fits four pools"),
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _both, "asks for both placements",
                 id="exclusive-topology and TAS annotations together are refused"),
    pytest.param(Placer.KUEUE_TAS, Placer.CONTROLLER, _unchanged,
                 "its Kueue flavors name no Topology, so Kueue would never admit it",
                 id="TAS annotations on a controller stack would never be admitted"),
    pytest.param(Placer.CONTROLLER, Placer.KUEUE_TAS, _unchanged,
                 "Kueue places every pod of a TAS flavor, against the controller's choice",
                 id="exclusive-topology on a TAS stack would fight Kueue"),
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _no_queue,
                 "has no kueue.x-k8s.io/queue-name label, so Kueue never sees it",
                 id="TAS annotations without a queue place nothing"),
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _slice_size("1"),
                 "[kueue.x-k8s.io/podset-slice-size] is '1', but each child Job (one slice) has "
                 "2 pods", id="a slice smaller than a child Job is refused"),
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _slice_level("kubernetes.io/hostname"),
                 "each slice must stay inside one node pool (it asks for 'kubernetes.io/hostname'",
                 id="a slice level other than the node pool is refused"),
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _five_slices,
                 "Kueue TAS can never place 5 slice(s) of 2 pod(s), each inside one "
                 "cloud.google.com/gke-nodepool: the declared pools hold 4",
                 id="five TAS slices on four pools can never be placed"),
    pytest.param(Placer.CONTROLLER, Placer.CONTROLLER, _five_slices,
                 "5 Job(s) need a cloud.google.com/gke-nodepool domain each; 4 exist",
                 id="five controller slices on four pools can never be placed"),
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _eight_chips,
                 "each pod asks for 8 google.com/tpu, but a node of v5e-2x4-0, v5e-2x4-1, "
                 "v5e-2x4-2, v5e-2x4-3 (tpu-v5-lite-podslice 2x4, 2 host(s)) has 4: a TPU pod "
                 "takes every chip of its VM (one pod per VM); ask for 4",
                 id="eight chips a pod on four-chip TPU VMs are refused under TAS"),
    pytest.param(Placer.CONTROLLER, Placer.CONTROLLER, _eight_chips, "ask for 4",
                 id="eight chips a pod on four-chip TPU VMs are refused under the controller"),
    pytest.param(Placer.CONTROLLER, Placer.CONTROLLER, _one_pod_a_job,
                 "each child Job (one slice) runs 1 pod(s), but a slice of v5e-2x4-0, v5e-2x4-1, "
                 "v5e-2x4-2, v5e-2x4-3 (tpu-v5-lite-podslice 2x4, 2 host(s)) has 2 host(s), one "
                 "pod each; set parallelism and completions to 2",
                 id="a slice Job with fewer pods than the slice has hosts is refused"),
    pytest.param(Placer.KUEUE_TAS, Placer.KUEUE_TAS, _topology("4x4"),
                 "nodeSelector cloud.google.com/gke-tpu-accelerator=tpu-v5-lite-podslice, "
                 "cloud.google.com/gke-tpu-topology=4x4 matches no TPU node pool; the pools are "
                 "v5e-2x4-0, v5e-2x4-1, v5e-2x4-2, v5e-2x4-3 (tpu-v5-lite-podslice 2x4",
                 id="a topology no pool has is refused naming the pools"),
]


@pytest.mark.parametrize(("asked", "stack", "change", "want"), CASES)
def test_slice_placement_problems(
    asked: Placer, stack: Placer, change: Callable[[Manifest], None], want: str | None
) -> None:
    manifest = _jobset(asked)
    change(manifest)
    problems = slice_placement_problems(manifest, DECLARED, stack)
    if want is None:
        assert problems == []
    else:
        assert len(problems) == 1 and want in problems[0], problems


def test_an_unqueued_controller_jobset_on_a_tas_stack_is_the_controllers() -> None:
    # Kueue manages only queued JobSets: an unqueued one is placed by the controller as ever.
    manifest = _jobset(Placer.CONTROLLER, queue=None)
    assert slice_placement_problems(manifest, DECLARED, Placer.KUEUE_TAS) == []


def test_asks_for_tas_reads_the_pod_templates() -> None:
    assert asks_for_tas(_jobset(Placer.KUEUE_TAS))
    assert not asks_for_tas(_jobset(Placer.CONTROLLER))
