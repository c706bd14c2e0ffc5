"""Every example: YAML the cluster accepts and that does what its comment says; programs run."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime import mocks as pulumi_mocks

from jobset_infra.api import constants as k
from jobset_infra.api.models import FailurePolicyAction, JobSet
from jobset_infra.controller.core.failure_policy import first_matching_rule_and_job
from jobset_infra.controller.core.job_view import ChildJob, JobCondition
from jobset_infra.manifests.wire import from_wire
from jobset_infra.manifests.workload import child_job_names, jobset_problems
from jobset_infra.plan.offline import OfflineMocks, ProgramError, run_offline
from jobset_infra.tpu import constants as tpu

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
YAML_EXAMPLES = sorted(EXAMPLES.glob("*/jobset.yaml"))


def _load(name: str) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / name / "jobset.yaml").read_text())
    return manifest


def test_every_example_is_listed_in_the_readme() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    folders = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert folders == ["depends-on", "failure-policy", "jax-cpu", "jax-multislice", "outputs-in",
                       "pytorch-ddp", "tpu-multislice", "tpu7x-multislice", "v5p-multislice",
                       "v6e-multislice", "yaml-consumer"]
    for folder in folders:
        assert f"`{folder}/" in readme


@pytest.mark.parametrize("path", [pytest.param(p, id=p.parent.name) for p in YAML_EXAMPLES])
def test_yaml_example_is_accepted(path: Path) -> None:
    assert jobset_problems(yaml.safe_load(path.read_text())) == []


def test_pytorch_master_address_is_rank_zero_hostname() -> None:
    manifest = _load("pytorch-ddp")
    rjob = manifest["spec"]["replicatedJobs"][0]
    container = rjob["template"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    rank0 = f"{child_job_names(manifest)[0]}-0.{manifest['spec']['network']['subdomain']}"
    assert env["MASTER_ADDR"]["value"] == rank0
    assert env["WORLD_SIZE"]["value"] == str(rjob["template"]["spec"]["parallelism"])
    assert k.JOB_COMPLETION_INDEX_KEY in env["RANK"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert tpu.TPU_RESOURCE not in str(manifest)  # CPU only: runs on the local stack


def _failed_job(message: str) -> ChildJob:
    failed = JobCondition(
        "Failed", "True", k.JOB_REASON_POD_FAILURE_POLICY, message, datetime(2026, 1, 1, tzinfo=UTC)
    )
    labels = {k.REPLICATED_JOB_NAME_KEY: "trainer"}
    return ChildJob(name="failure-policy-trainer-0", namespace="default", labels=labels,
                    conditions=(failed,))


@pytest.mark.parametrize(
    ("message", "action"),
    [
        pytest.param(
            "Pod default/failure-policy-trainer-0-0-x has condition DisruptionTarget matching "
            "FailJob rule at index 0",
            FailurePolicyAction.RESTART_JOBSET_AND_IGNORE_MAX_RESTARTS,
            id="preempted pod: restart without counting",
        ),
        pytest.param(
            "Container main for pod default/failure-policy-trainer-0-0-x failed with exit code 2 "
            "matching FailJob rule at index 1",
            FailurePolicyAction.FAIL_JOBSET,
            id="bad config exit code: fail the JobSet",
        ),
        pytest.param(
            "Container main for pod default/failure-policy-trainer-0-0-x failed with exit code 1 "
            "matching FailJob rule at index 1",
            None,
            id="other failure: default RestartJobSet",
        ),
    ],
)
def test_failure_policy_example_rules(message: str, action: FailurePolicyAction | None) -> None:
    policy = JobSet.model_validate(_load("failure-policy")).spec.failure_policy
    assert policy is not None
    match = first_matching_rule_and_job(policy.rules, [_failed_job(message)])
    chosen = None if match is None else policy.rules[match[0]].action
    assert chosen == action


def test_failure_policy_exit_code_matches_the_rule() -> None:
    rjob = _load("failure-policy")["spec"]["replicatedJobs"][0]
    exit_rule = rjob["template"]["spec"]["podFailurePolicy"]["rules"][1]
    container = rjob["template"]["spec"]["template"]["spec"]["containers"][0]
    assert exit_rule["onExitCodes"]["containerName"] == container["name"]
    assert "sys.exit(2)" in container["command"][-1]
    assert exit_rule["onExitCodes"]["values"] == [2]


def test_depends_on_workers_wait_for_a_ready_driver_they_can_reach() -> None:
    manifest = _load("depends-on")
    driver, workers = manifest["spec"]["replicatedJobs"]
    assert workers["dependsOn"] == [{"name": driver["name"], "status": "Ready"}]
    env = workers["template"]["spec"]["template"]["spec"]["containers"][0]["env"]
    driver_pod = f"{child_job_names(manifest)[0]}-0.{manifest['metadata']['name']}"
    assert env == [{"name": "DRIVER", "value": driver_pod}]


def test_jax_multislice_program_builds_a_two_slice_queued_jobset() -> None:
    run = run_offline(
        EXAMPLES / "jax-multislice" / "__main__.py", project="jax-multislice", stack="dev"
    )
    [jobset] = run.of_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    rjob = jobset.inputs["spec"]["replicatedJobs"][0]
    pod = rjob["template"]["spec"]["template"]["spec"]
    assert rjob["replicas"] == 2
    assert rjob["template"]["spec"]["parallelism"] == 2
    assert pod["containers"][0]["resources"]["limits"][tpu.TPU_RESOURCE] == "4"
    assert jobset.inputs["metadata"]["labels"][k.KUEUE_QUEUE_NAME_LABEL] == "tpu-queue"
    assert jobset_problems(from_wire(jobset.inputs)) == []


VPC_LINK = "https://www.googleapis.com/compute/v1/projects/net/global/networks/vpc"
SUBNET_LINK = "https://www.googleapis.com/compute/v1/projects/net/regions/us-west4/subnetworks/nodes"
DIGEST_REF = ("us-west4-docker.pkg.dev/my-project-123/jobset-infra/jobset-controller:v1@sha256:"
              + "a" * 64)


class BuiltImage(OfflineMocks):
    """The offline mocks, plus what the VPC, its subnet and the image build compute: self links
    and the pushed image's digest ref (`ref`)."""

    def __init__(self, ref: str = DIGEST_REF) -> None:
        self.ref = ref

    def new_resource(
        self, args: pulumi_mocks.MockResourceArgs
    ) -> tuple[str | None, dict[str, Any]]:
        resource_id, state = super().new_resource(args)
        computed = {"gcp:compute/network:Network": {"selfLink": VPC_LINK},
                    "gcp:compute/subnetwork:Subnetwork": {"selfLink": SUBNET_LINK},
                    "docker-build:index:Image": {"ref": self.ref}}
        return resource_id, {**state, **computed.get(args.typ, {})}


def _outputs_in(mocks: BuiltImage, preview: bool = False, **config: str) -> Any:
    return run_offline(EXAMPLES / "outputs-in" / "__main__.py", project="outputs-in",
                       config={"outputs-in:project": "my-project-123",
                               **{f"outputs-in:{k}": v for k, v in config.items()}},
                       preview=preview, mocks=mocks)


def test_outputs_in_wires_a_vpc_self_link_and_an_image_builds_digest() -> None:
    run = _outputs_in(BuiltImage())
    [cluster] = run.of_type("gcp:container/cluster:Cluster")
    assert (cluster.inputs["network"], cluster.inputs["subnetwork"]) == (VPC_LINK, SUBNET_LINK)
    [deployment] = run.of_type("kubernetes:apps/v1:Deployment")
    assert deployment.inputs["spec"]["template"]["spec"]["containers"][0]["image"] == DIGEST_REF
    [jobset] = run.of_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    assert jobset.inputs["metadata"]["name"] == "hello-outputs"


def test_outputs_in_checks_the_image_output_when_it_resolves() -> None:
    with pytest.raises(ProgramError, match="image: 'jobset-controller' has no pinned tag"):
        _outputs_in(BuiltImage(ref="jobset-controller"))


def test_outputs_in_fails_preview_on_a_wrong_plain_value_naming_it() -> None:
    with pytest.raises(ProgramError, match="replicas: Input should be greater than or equal to 1"):
        _outputs_in(BuiltImage(), preview=True, controllerReplicas="0")
