"""The JobSet component under Pulumi's mocks: one custom resource, after the API, checked first."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from jobset_infra.api import constants as k
from jobset_infra.api import kueue_tas as tas
from jobset_infra.components.jobset import JobSet, JobSetArgs, tpu_job, tpu_target
from jobset_infra.components.jobset_system import JobSetSystem, JobSetSystemArgs
from jobset_infra.components.kueue import Kueue, KueueArgs
from jobset_infra.manifests.workload import TpuTarget, WorkloadSpec
from jobset_infra.plan.offline import ProgramError
from jobset_infra.tpu import constants as tpu
from jobset_infra.tpu.placer import Placer
from jobset_infra.tpu.pools import SlicePoolsPlan, plan_slice_pools
from jobset_infra.tpu.slice import TpuSlice
from tests.components.platform_fixtures import IMAGE, provider
from tests.components.pulumi_harness import run_component

JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
CONTAINER = {"name": "jax", "image": "python:3.11", "command": ["python", "-c", "print(1)"]}


def pools(slices: int = 4) -> SlicePoolsPlan:
    return plan_slice_pools(
        {
            "name": "v5e",
            "accelerator": "v5e",
            "topology": "2x4",
            "machine_type": "ct5lp-hightpu-4t",
            "zone": "us-west4-a",
            "cluster_location": "us-west4",
            "slices": slices,
        }
    )


def test_registers_one_jobset_with_outputs() -> None:
    def build() -> JobSet:
        args = JobSetArgs(
            provider=provider(),
            name="train",
            replicated_jobs=[tpu_job(pools(), CONTAINER)],
            failure_policy={"maxRestarts": 3},
        )
        return JobSet("train", args)

    result = run_component(build, outputs=["name", "namespace", "child_job_names", "tpu_chips"])
    [jobset] = result.of_type(JOBSET)
    assert jobset.parent_type == "jobset-infra:index:JobSet"
    assert jobset.inputs["metadata"]["name"] == "train"
    assert jobset.inputs["spec"]["failurePolicy"] == {"maxRestarts": 3}
    assert result.values == {
        "name": "train",
        "namespace": "default",
        "child_job_names": [f"train-slice-{i}" for i in range(4)],
        "tpu_chips": 32,
    }


def test_args_are_the_workload_spec_plus_where_and_after_what() -> None:
    # DESIGN principle 1: the workload's fields are WorkloadSpec's, never restated here.
    own = {f.name for f in dataclasses.fields(JobSetArgs)} - {
        f.name for f in dataclasses.fields(WorkloadSpec)
    }
    assert issubclass(JobSetArgs, WorkloadSpec)
    assert own == {"provider", "system", "kueue", "pools", "depends_on", "after"}


def test_metadata_name_is_the_spec_name_not_the_logical_name() -> None:
    def build() -> JobSet:
        args = JobSetArgs(
            provider=provider(), name="llm-7b", replicated_jobs=[tpu_job(pools(), CONTAINER)]
        )
        return JobSet("train", args)

    result = run_component(build, outputs=["child_job_names"])
    [jobset] = result.of_type(JOBSET)
    assert (jobset.name, jobset.inputs["metadata"]["name"]) == ("train", "llm-7b")
    assert result.values["child_job_names"][0] == "llm-7b-slice-0"


def test_depends_on_the_controller_and_kueue_when_queued() -> None:
    def build() -> tuple[JobSet, JobSetSystem, Kueue]:
        k8s = provider()
        system = JobSetSystem("jobset", JobSetSystemArgs(provider=k8s, image=IMAGE))
        kueue = Kueue("kueue", KueueArgs(provider=k8s, pools=[pools()]))
        args = JobSetArgs(
            provider=k8s,
            name="train",
            replicated_jobs=[tpu_job(pools(), CONTAINER)],
            queue="tpu-queue",
            priority_class="high",
            system=system,
            kueue=kueue,
        )
        return JobSet("train", args), system, kueue

    result = run_component(build)
    [jobset] = result.of_type(JOBSET)
    by_name = {r.name: r.urn for r in result.run.registrations}
    assert by_name["jobset-crd"] in jobset.dependencies
    assert by_name["jobset-controller"] in jobset.dependencies
    assert by_name["kueue-kueue"] in jobset.dependencies
    assert by_name["kueue-clusterqueue-tpu-cluster-queue"] in jobset.dependencies
    assert jobset.inputs["metadata"]["labels"] == {
        k.KUEUE_QUEUE_NAME_LABEL: "tpu-queue",
        k.KUEUE_PRIORITY_CLASS_LABEL: "high",
    }


def _queued_on(kueue_placer: Placer, jobset_placer: Placer) -> Any:
    def build() -> JobSet:
        k8s = provider()
        kueue = Kueue("kueue", KueueArgs(provider=k8s, pools=[pools()], placement=kueue_placer))
        args = JobSetArgs(provider=k8s, name="train", replicated_jobs=[tpu_job(pools(), CONTAINER)],
                          queue="tpu-queue", kueue=kueue, pools=[pools()],
                          placement=jobset_placer)
        return JobSet("train", args)

    return run_component(build)


def test_a_kueue_tas_jobset_waits_for_the_topology_and_asks_for_one_pool_per_slice() -> None:
    result = _queued_on(Placer.KUEUE_TAS, Placer.KUEUE_TAS)
    [jobset] = result.of_type(JOBSET)
    by_name = {r.name: r.urn for r in result.run.registrations}
    assert by_name["kueue-topology-tpu-slices"] in jobset.dependencies
    pod = jobset.inputs["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod["metadata"]["annotations"] == {
        tas.PODSET_SLICE_REQUIRED_TOPOLOGY: tpu.GKE_NODEPOOL_LABEL,
        tas.PODSET_SLICE_SIZE: "2",
    }
    assert k.EXCLUSIVE_KEY not in jobset.inputs["metadata"].get("annotations", {})


@pytest.mark.parametrize(("kueue_placer", "jobset_placer"), [
    pytest.param(Placer.CONTROLLER, Placer.KUEUE_TAS, id="a TAS JobSet on controller queues"),
    pytest.param(Placer.KUEUE_TAS, Placer.CONTROLLER, id="a controller JobSet on TAS queues"),
])
def test_a_jobset_asks_for_the_placement_of_its_queue(
    kueue_placer: Placer, jobset_placer: Placer
) -> None:
    with pytest.raises(ProgramError) as caught:
        _queued_on(kueue_placer, jobset_placer)
    assert (f"JobSet train: placement: {jobset_placer.value}, but Kueue's queues were made for "
            f"placement {kueue_placer.value}") in str(caught.value)


def test_unqueued_jobset_waits_for_kueues_webhooks_but_not_its_queues() -> None:
    def build() -> JobSet:
        k8s = provider()
        kueue = Kueue("kueue", KueueArgs(provider=k8s, pools=[pools()]))
        args = JobSetArgs(
            provider=k8s, name="train", replicated_jobs=[tpu_job(pools(), CONTAINER)], kueue=kueue
        )
        return JobSet("train", args)

    result = run_component(build)
    [jobset] = result.of_type(JOBSET)
    waited = {result.run.by_urn()[urn].type for urn in jobset.dependencies}
    # Kueue's JobSet webhook refuses every JobSet until Kueue serves; the queues do not matter.
    assert waited == {"kubernetes:helm.sh/v3:Release"}
    assert k.KUEUE_QUEUE_NAME_LABEL not in (jobset.inputs["metadata"].get("labels") or {})


def test_without_kueue_an_unqueued_jobset_waits_for_nothing_else() -> None:
    def build() -> JobSet:
        args = JobSetArgs(
            provider=provider(), name="train", replicated_jobs=[tpu_job(pools(), CONTAINER)]
        )
        return JobSet("train", args)

    [jobset] = run_component(build).of_type(JOBSET)
    assert jobset.dependencies == ()


@pytest.mark.parametrize(
    ("source", "replicas", "chips"),
    [
        pytest.param(pools(3), 3, 4, id="a SlicePoolsPlan"),
        pytest.param((TpuSlice("v5e", "2x4", "ct5lp-hightpu-4t"), 2), 2, 4, id="a slice and count"),
        pytest.param((TpuSlice("v5e", "2x4"), 1), 1, 8, id="a single-host slice"),
    ],
)
def test_tpu_job_from_any_slice_source(source: Any, replicas: int, chips: int) -> None:
    job = tpu_job(source, CONTAINER)
    assert isinstance(tpu_target(source), TpuTarget)
    assert job.target.slices == replicas
    assert job.target.slice.tpu_request == chips


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"replicated_jobs": [tpu_job(pools(2), CONTAINER, slices=3)]},
            "JobSet train: replicated_jobs[0].slices=3: 3 slices (24 chips)",
            id="more slices than the pools have",
        ),
        pytest.param(
            {
                "replicated_jobs": [
                    tpu_job(
                        pools(), {**CONTAINER, "resources": {"limits": {tpu.TPU_RESOURCE: 1}}}
                    )
                ]
            },
            "JobSet train: replicated_jobs[0].container.resources.limits",
            id="wrong chip count",
        ),
        pytest.param(
            {"replicated_jobs": [tpu_job(pools(), CONTAINER)], "provider": "kubeconfig"},
            "JobSet train: provider: pass the target cluster's pulumi_kubernetes.Provider",
            id="no explicit provider",
        ),
        pytest.param(
            {"replicated_jobs": [tpu_job(pools(), CONTAINER)], "namespace": "Bad_NS"},
            "JobSet train: namespace: 'Bad_NS' is not a valid name",
            id="invalid namespace",
        ),
    ],
)
def test_bad_args_fail_before_anything_is_registered(args: dict[str, Any], expected: str) -> None:
    def build() -> JobSet:
        return JobSet("train", JobSetArgs(**{"provider": provider(), "name": "train", **args}))

    with pytest.raises(ProgramError) as caught:
        run_component(build)
    assert expected in str(caught.value)


def test_ttl_after_finished_is_warned_about() -> None:
    def build() -> JobSet:
        args = JobSetArgs(
            provider=provider(),
            name="train",
            replicated_jobs=[tpu_job(pools(), CONTAINER)],
            ttl_seconds_after_finished=60,
        )
        return JobSet("train", args)

    [warning] = run_component(build).warnings()
    assert warning.startswith("JobSet train: ttl_seconds_after_finished deletes the finished")


def _exclusive_rjob(topology: str, replicas: int) -> dict[str, Any]:
    """A hand-written TPU replicated job (not tpu_job) asking for whole 2-VM node pools."""
    selector = {tpu.ACCELERATOR_LABEL: "tpu-v5-lite-podslice", tpu.TOPOLOGY_LABEL: topology}
    pod = {
        "restartPolicy": "Never",
        "nodeSelector": selector,
        "tolerations": [{"key": tpu.TPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{**CONTAINER, "resources": {"limits": {tpu.TPU_RESOURCE: 4}}}],
    }
    return {
        "name": "manual",
        "replicas": replicas,
        "template": {
            "metadata": {"annotations": {k.EXCLUSIVE_KEY: tpu.GKE_NODEPOOL_LABEL}},
            "spec": {"parallelism": 2, "completions": 2, "template": {"spec": pod}},
        },
    }


@pytest.mark.parametrize(
    ("rjob", "expected"),
    [
        pytest.param(_exclusive_rjob("2x4", 4), None, id="fits the four 2x4 pools"),
        pytest.param(
            _exclusive_rjob("2x4", 5),
            "JobSet train: exclusive placement can never fit the declared pools",
            id="five exclusive Jobs on four pools",
        ),
        pytest.param(
            _exclusive_rjob("4x4", 1),
            "JobSet train: spec.replicatedJobs[0] (manual): nodeSelector cloud.google.com/"
            "gke-tpu-accelerator=tpu-v5-lite-podslice, cloud.google.com/gke-tpu-topology=4x4 "
            "matches no TPU node pool; the pools are v5e-0, v5e-1, v5e-2, v5e-3",
            id="a topology no pool has",
        ),
    ],
)
def test_hand_written_exclusive_jobs_are_checked_against_the_pools(
    rjob: dict[str, Any], expected: str | None
) -> None:
    def build() -> JobSet:
        args = JobSetArgs(
            provider=provider(),
            name="train",
            replicated_jobs=[rjob],
            pools=[pools()],
        )
        return JobSet("train", args)

    if expected is None:
        assert run_component(build).of_type(JOBSET)
        return
    with pytest.raises(ProgramError) as caught:
        run_component(build)
    assert expected in str(caught.value)


# A value for every field of the API's JobSetSpec, by wire name. The component passes `spec`
# through as the API declares it, so a field the models gain is settable with no component
# change; this table is all a new field needs (the test below fails until it has one).
_CPU_JOB = {"name": "w", "replicas": 1, "template": {"spec": {
    "completionMode": "Indexed", "completions": 1, "parallelism": 1, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36",
        "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}}}}
_PVC = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                               "resources": {"requests": {"storage": "1Gi"}}}}
SPEC_SAMPLES: dict[str, Any] = {
    "replicatedJobs": ("replicated_jobs", [_CPU_JOB]),
    "network": ("network", {"enableDNSHostnames": True, "publishNotReadyAddresses": True}),
    "successPolicy": ("success_policy", {"operator": "Any", "targetReplicatedJobs": ["w"]}),
    "failurePolicy": ("failure_policy", {"maxRestarts": 2}),
    "coordinator": ("coordinator", {"replicatedJob": "w", "jobIndex": 0, "podIndex": 0}),
    "ttlSecondsAfterFinished": ("ttl_seconds_after_finished", 600),
    "startupPolicy": ("spec", {"startupPolicyOrder": "InOrder"}),
    "suspend": ("spec", True),
    "managedBy": ("spec", "kueue.x-k8s.io/multikueue"),
    "volumeClaimPolicies": ("spec", [{"templates": [_PVC]}]),
}


def test_every_field_of_the_jobset_api_can_be_set_through_the_component() -> None:
    from jobset_infra.api.models import JobSetSpec

    wire_names = {field.alias or name for name, field in JobSetSpec.model_fields.items()}
    assert wire_names == set(SPEC_SAMPLES), (
        "a JobSetSpec field has no sample here: add one (the component needs no change)")
    for wire, (argument, value) in SPEC_SAMPLES.items():
        given: dict[str, Any] = {"replicated_jobs": [_CPU_JOB]}
        given[argument] = {wire: value} if argument == "spec" else value

        def build(given: dict[str, Any] = given) -> JobSet:
            return JobSet("j", JobSetArgs(provider=provider(), name="j", **given))

        [jobset] = run_component(build).of_type(JOBSET)
        assert jobset.inputs["spec"][wire] == value, wire


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({"replicatedJobs": [_CPU_JOB]},
                     "spec.replicatedJobs: set replicated_jobs= instead",
                     id="spec may not carry the replicated jobs"),
        pytest.param({"startupPolicyy": {}}, "spec.startupPolicyy",
                     id="a misspelt spec field is named"),
        pytest.param({"startup_policy": {"startupPolicyOrder": "Sideways"}},
                     "spec.startupPolicy.startupPolicyOrder",
                     id="a snake_case field is read and its bad value named"),
    ],
)
def test_a_bad_spec_field_fails_preview_naming_it(spec: dict[str, Any], want: str) -> None:
    def build() -> JobSet:
        return JobSet("j", JobSetArgs(provider=provider(), name="j",
                                      replicated_jobs=[_CPU_JOB], spec=spec))

    with pytest.raises(ProgramError, match=re.escape(want)):
        run_component(build)


def test_the_kubernetes_provider_may_come_through_opts_as_in_pulumi_eks() -> None:
    """`ResourceOptions(providers=[...])` on each component, no provider argument."""
    import pulumi

    def build() -> JobSet:
        opts = pulumi.ResourceOptions(providers=[provider()])
        system = JobSetSystem("jobset", JobSetSystemArgs(image=IMAGE), opts=opts)
        kueue = Kueue("kueue", KueueArgs(pools=[pools()]), opts=opts)
        return JobSet("train", JobSetArgs(name="train", replicated_jobs=[tpu_job(pools(),
                                          CONTAINER)], system=system, kueue=kueue), opts=opts)

    assert len(run_component(build).of_type(JOBSET)) == 1

    def without() -> JobSet:
        return JobSet("train", JobSetArgs(name="train",
                                          replicated_jobs=[tpu_job(pools(), CONTAINER)]))

    with pytest.raises(ProgramError, match=re.escape(
            "JobSet train: provider: pass the target cluster's pulumi_kubernetes.Provider in "
            "opts")):
        run_component(without)
