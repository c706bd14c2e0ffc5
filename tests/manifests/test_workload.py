"""The pure TPU-aware JobSet builder: what it derives, and what it refuses (naming the argument)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.api import constants as k
from jobset_infra.api import kueue_tas as tas
from jobset_infra.api.crd.schema import CrdSchema
from jobset_infra.manifests.crd import jobset_crd
from jobset_infra.manifests.workload import (
    TpuJob,
    TpuTarget,
    WorkloadError,
    WorkloadSpec,
    jobset_problems,
    plan_workload,
)
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan, plan_slice_pools
from jobset_infra.tpu.slice import TpuSlice

CONTAINER = {"name": "jax", "image": "python:3.11", "command": ["python", "-c", "print(1)"]}


def pools(slices: int = 4, machine_type: str = "ct5lp-hightpu-4t", **extra: Any) -> SlicePoolsPlan:
    """A v5e 2x4 slice-pools plan (2 VMs per slice with ct5lp-hightpu-4t)."""
    return plan_slice_pools(
        {
            "name": "v5e",
            "accelerator": "v5e",
            "topology": "2x4",
            "machine_type": machine_type,
            "zone": "us-west4-a",
            "cluster_location": "us-west4",
            "slices": slices,
            **extra,
        }
    )


def tpu_spec(**overrides: Any) -> WorkloadSpec:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(pools()))
    fields: dict[str, Any] = {"name": "train", "replicated_jobs": [job]}
    fields.update(overrides)
    return WorkloadSpec(**fields)


def cpu_rjob(name: str = "driver", replicas: int = 1) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}
    return {"name": name, "replicas": replicas, "template": {"spec": {"template": {"spec": pod}}}}


def _rjob(manifest: Any, index: int = 0) -> dict[str, Any]:
    rjob: dict[str, Any] = manifest["spec"]["replicatedJobs"][index]
    return rjob


def _pod(manifest: Any, index: int = 0) -> dict[str, Any]:
    pod: dict[str, Any] = _rjob(manifest, index)["template"]["spec"]["template"]["spec"]
    return pod


# --- what a TPU job derives ----------------------------------------------------------------------


def test_multislice_job_uses_one_replica_per_slice_and_one_pod_per_vm() -> None:
    plan = plan_workload(tpu_spec())
    rjob = _rjob(plan.manifest)
    assert rjob["replicas"] == 4
    assert rjob["template"]["spec"]["parallelism"] == 2
    assert rjob["template"]["spec"]["completions"] == 2
    assert rjob["template"]["spec"]["completionMode"] == k.COMPLETION_MODE_INDEXED
    assert plan.child_job_names == tuple(f"train-slice-{i}" for i in range(4))
    assert plan.tpu_chips == 32


def test_each_pod_requests_and_limits_all_chips_of_its_vm() -> None:
    container = _pod(plan_workload(tpu_spec()).manifest)["containers"][0]
    assert container["resources"]["requests"][tpu.TPU_RESOURCE] == "4"
    assert container["resources"]["limits"][tpu.TPU_RESOURCE] == "4"


def test_pods_tolerate_the_tpu_taint_and_select_the_slice_shape() -> None:
    pod = _pod(plan_workload(tpu_spec()).manifest)
    assert pod["tolerations"] == [
        {"key": tpu.TPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert pod["nodeSelector"] == {
        tpu.ACCELERATOR_LABEL: "tpu-v5-lite-podslice",
        tpu.TOPOLOGY_LABEL: "2x4",
    }


def test_host_network_comes_with_the_dns_policy_that_still_resolves_peers() -> None:
    pod = _pod(plan_workload(tpu_spec()).manifest)
    assert pod["hostNetwork"] is True
    assert pod["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_host_network_can_be_turned_off() -> None:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(pools()), host_network=False)
    pod = _pod(plan_workload(tpu_spec(replicated_jobs=[job])).manifest)
    assert "hostNetwork" not in pod
    assert "dnsPolicy" not in pod


def test_tpu_ports_are_added_once_and_user_ports_are_kept() -> None:
    container = {**CONTAINER, "ports": [{"name": "megascale", "containerPort": 8080}]}
    job = TpuJob("slice", container, TpuTarget.from_plan(pools()))
    ports = _pod(plan_workload(tpu_spec(replicated_jobs=[job])).manifest)["containers"][0]["ports"]
    assert sorted(p["containerPort"] for p in ports) == [8080, 8431, 8471]


def test_only_tpu_jobs_make_the_whole_jobset_exclusive_per_node_pool() -> None:
    manifest = plan_workload(tpu_spec()).manifest
    assert manifest["metadata"]["annotations"] == {k.EXCLUSIVE_KEY: tpu.GKE_NODEPOOL_LABEL}


def test_with_a_cpu_driver_only_the_tpu_job_is_exclusive() -> None:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(pools()))
    manifest = plan_workload(tpu_spec(replicated_jobs=[cpu_rjob(), job])).manifest
    assert k.EXCLUSIVE_KEY not in manifest["metadata"].get("annotations", {})
    assert "metadata" not in _rjob(manifest, 0)["template"]
    assert _rjob(manifest, 1)["template"]["metadata"]["annotations"] == {
        k.EXCLUSIVE_KEY: tpu.GKE_NODEPOOL_LABEL
    }


@pytest.mark.parametrize("with_driver", [
    pytest.param(False, id="TAS placement: TPU-only JobSet carries no exclusive annotation"),
    pytest.param(True, id="TAS placement: with a CPU driver only the TPU job asks for slices"),
])
def test_kueue_tas_asks_for_one_node_pool_per_slice_of_hosts_pods(with_driver: bool) -> None:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(pools()))
    jobs = [cpu_rjob(), job] if with_driver else [job]
    manifest = plan_workload(tpu_spec(replicated_jobs=jobs, placement=Placer.KUEUE_TAS)).manifest
    index = 1 if with_driver else 0
    assert k.EXCLUSIVE_KEY not in manifest["metadata"].get("annotations", {})
    assert "metadata" not in _rjob(manifest, index)["template"]
    pod_meta = _rjob(manifest, index)["template"]["spec"]["template"]["metadata"]
    assert pod_meta["annotations"] == {
        tas.PODSET_SLICE_REQUIRED_TOPOLOGY: tpu.GKE_NODEPOOL_LABEL,
        tas.PODSET_SLICE_SIZE: "2",  # a v5e 2x4 slice on 4-chip VMs has 2 hosts
    }
    assert jobset_problems(manifest) == []


def test_spot_pools_add_their_capacity_label_to_the_selector() -> None:
    job = TpuJob("slice", CONTAINER, TpuTarget.from_plan(pools(capacity="spot")))
    pod = _pod(plan_workload(tpu_spec(replicated_jobs=[job])).manifest)
    assert pod["nodeSelector"][tpu.SPOT_LABEL] == "true"


def test_single_host_slice_runs_one_pod_per_slice() -> None:
    target = TpuTarget.from_slice(TpuSlice("v5e", "2x4"), slices=1)  # ct5lp-hightpu-8t
    plan = plan_workload(tpu_spec(replicated_jobs=[TpuJob("slice", CONTAINER, target)]))
    rjob = _rjob(plan.manifest)
    assert (rjob["replicas"], rjob["template"]["spec"]["parallelism"]) == (1, 1)
    assert _pod(plan.manifest)["containers"][0]["resources"]["limits"][tpu.TPU_RESOURCE] == "8"


@pytest.mark.parametrize(
    ("queue", "priority", "labels"),
    [
        pytest.param(None, None, None, id="no queue: no Kueue labels"),
        pytest.param("tpu-queue", None, {k.KUEUE_QUEUE_NAME_LABEL: "tpu-queue"}, id="queue"),
        pytest.param(
            "tpu-queue",
            "high",
            {k.KUEUE_QUEUE_NAME_LABEL: "tpu-queue", k.KUEUE_PRIORITY_CLASS_LABEL: "high"},
            id="queue and priority class",
        ),
    ],
)
def test_kueue_labels(queue: str | None, priority: str | None, labels: Any) -> None:
    manifest = plan_workload(tpu_spec(queue=queue, priority_class=priority)).manifest
    assert manifest["metadata"].get("labels") == labels
    # Kueue's webhook suspends a queued JobSet; we never own spec.suspend.
    assert "suspend" not in manifest["spec"]


def test_manifest_is_admitted_by_the_generated_crd() -> None:
    manifest = plan_workload(tpu_spec(failure_policy={"maxRestarts": 3})).manifest
    _, errors = CrdSchema.from_crd(jobset_crd(), k.VERSION).admit(dict(manifest))
    assert errors == []
    assert jobset_problems(manifest) == []


# --- what it refuses -----------------------------------------------------------------------------


def _problems(spec: WorkloadSpec) -> str:
    with pytest.raises(WorkloadError) as caught:
        plan_workload(spec)
    return str(caught.value)


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        pytest.param(
            {"replicated_jobs": [TpuJob("s", CONTAINER, TpuTarget.from_plan(pools()), slices=5)]},
            "replicated_jobs[0].slices=5: 5 slices (40 chips)",
            id="more slices than pools",
        ),
        pytest.param(
            {
                "replicated_jobs": [
                    TpuJob("a", CONTAINER, TpuTarget.from_plan(pools()), slices=3),
                    TpuJob("b", CONTAINER, TpuTarget.from_plan(pools()), slices=2),
                ]
            },
            "only 4 exist (32 chips)",
            id="two jobs together want more slices than exist",
        ),
        pytest.param(
            {"replicated_jobs": [TpuJob("s", CONTAINER, TpuTarget.from_plan(pools()), slices=0)]},
            "replicated_jobs[0].slices: 0 is less than 1",
            id="zero slices",
        ),
        pytest.param(
            {
                "replicated_jobs": [
                    TpuJob("s", CONTAINER, TpuTarget.from_slice(TpuSlice("v5e", "2x4"), 0))
                ]
            },
            "replicated_jobs[0].slices: 0 is less than 1",
            id="a target without slices",
        ),
        pytest.param(
            {
                "replicated_jobs": [
                    TpuJob(
                        "s",
                        {**CONTAINER, "resources": {"limits": {tpu.TPU_RESOURCE: 8}}},
                        TpuTarget.from_plan(pools()),
                    )
                ]
            },
            "replicated_jobs[0].container.resources.limits: google.com/tpu 8 does not match",
            id="tpu request that is not all chips of a VM",
        ),
        pytest.param({"replicated_jobs": []}, "replicated_jobs: give at least one", id="no jobs"),
        pytest.param(
            {"priority_class": "high"}, "priority_class: a Kueue priority class needs a queue",
            id="priority without queue",
        ),
        pytest.param(
            {"queue": "TPU queue"},
            "queue: 'TPU queue' is not a Kueue object name usable as a label value",
            id="queue name with a space and capitals",
        ),
        pytest.param(
            {"queue": "q", "priority_class": "p" * 64},
            "priority_class: 'ppp",
            id="priority class longer than a label value",
        ),
        pytest.param(
            {"failure_policy": {"maxRestarts": -1}},
            "spec.failurePolicy.maxRestarts",
            id="negative maxRestarts (api model)",
        ),
        pytest.param(
            {
                "replicated_jobs": [
                    TpuJob("s", {"name": "x", "imagez": "y"}, TpuTarget.from_plan(pools()))
                ]
            },
            'containers[0].imagez: unknown field "imagez"',
            id="misspelled container field (Kubernetes schema)",
        ),
        pytest.param(
            {"name": "x" * 60},
            k.JOB_NAME_TOO_LONG_MESSAGE,
            id="name too long for child Job names (webhook rule)",
        ),
        pytest.param(
            {"replicated_jobs": [cpu_rjob("a"), cpu_rjob("a")]},
            "spec.replicatedJobs[1]",
            id="duplicate replicated job names (CRD list-map)",
        ),
    ],
)
def test_refuses(overrides: dict[str, Any], expected: str) -> None:
    assert expected in _problems(tpu_spec(**overrides))


def test_every_problem_is_reported_at_once() -> None:
    job = TpuJob("s", CONTAINER, TpuTarget.from_plan(pools()), slices=9, backoff_limit=-1)
    problems = _problems(tpu_spec(replicated_jobs=[job], priority_class="high")).splitlines()
    assert len(problems) == 3
    assert all(":" in line for line in problems)


# --- properties ----------------------------------------------------------------------------------


@given(
    available=st.integers(1, 6), wanted=st.integers(1, 8), hosts_vm=st.sampled_from(["4t", "8t"])
)
def test_any_slice_request_fits_exactly_or_names_slices(
    available: int, wanted: int, hosts_vm: str
) -> None:
    single_host = {"multislice": False} if hosts_vm == "8t" else {}
    plan = pools(slices=available, machine_type=f"ct5lp-hightpu-{hosts_vm}", **single_host)
    spec = tpu_spec(replicated_jobs=[TpuJob("s", CONTAINER, TpuTarget.from_plan(plan), wanted)])
    if wanted > available:
        assert "replicated_jobs[0].slices" in _problems(spec)
        return
    result = plan_workload(spec)
    rjob = _rjob(result.manifest)
    assert rjob["replicas"] == wanted
    assert rjob["template"]["spec"]["parallelism"] == plan.slice.hosts
    assert result.tpu_chips == wanted * plan.slice.chips <= plan.total_chips
    assert len(result.child_job_names) == wanted
