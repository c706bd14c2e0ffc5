"""`validate --stack`: JobSets against a stack's pools, placement and queue, in the words the
JobSet component uses at preview."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.api import constants as k
from jobset_infra.cli import main
from jobset_infra.components.jobset import JobSet, JobSetArgs
from jobset_infra.plan.offline import ProgramError
from jobset_infra.stack.config import load_stack_config
from jobset_infra.stack.fit import stack_jobset_problems
from tests.components.platform_fixtures import provider
from tests.components.pulumi_harness import run_component
from tests.stacks.stack_runs import committed_config

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _example(name: str) -> dict[str, Any]:
    manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / name / "jobset.yaml").read_text())
    return manifest


@pytest.mark.parametrize(("example", "stack"), [
    pytest.param("v6e-multislice", "v6e-multislice", id="the v6e example fits its stack"),
    pytest.param("v5p-multislice", "v5p-multislice", id="the v5p example fits its stack"),
    pytest.param("tpu7x-multislice", "tpu7x-multislice", id="the TPU7x example fits its stack"),
    pytest.param("tpu-multislice", "v5e-multislice", id="the v5e example fits the v5e stack"),
])
def test_each_generation_example_fits_its_stack(example: str, stack: str) -> None:
    config = load_stack_config(committed_config(stack))
    assert stack_jobset_problems(config, _example(example)) == []


@pytest.mark.parametrize(("example", "stack", "want"), [
    pytest.param("v6e-multislice", "v5e-multislice",
                 "nodeSelector cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice, "
                 "cloud.google.com/gke-tpu-topology=4x4 matches no TPU node pool; the pools are "
                 "v5e-0, v5e-1, v5e-2, v5e-3 (tpu-v5-lite-podslice 2x4, 2 host(s))",
                 id="a v6e JobSet on the v5e stack names the stack's pools"),
    pytest.param("v6e-multislice", "v6e-flex",
                 "alpha.jobset.sigs.k8s.io/exclusive-topology on a stack whose queue places "
                 "slices with Kueue TAS", id="a controller JobSet on the Kueue TAS stack"),
    pytest.param("tpu-multislice", "v6e-multislice", "matches no TPU node pool",
                 id="a v5e JobSet on the v6e stack"),
])
def test_a_jobset_another_stack_cannot_run_is_named(example: str, stack: str, want: str) -> None:
    config = load_stack_config(committed_config(stack))
    [problem] = stack_jobset_problems(config, _example(example))
    assert want in problem, problem


def _queued(label: str, namespace: str = "default") -> dict[str, Any]:
    manifest = copy.deepcopy(_example("v6e-multislice"))
    manifest["metadata"]["labels"][k.KUEUE_QUEUE_NAME_LABEL] = label
    manifest["metadata"]["namespace"] = namespace
    return manifest


@pytest.mark.parametrize(("manifest", "want"), [
    pytest.param(_queued("gpu-queue"), "'gpu-queue' is no LocalQueue of the stack; its "
                 "LocalQueue is 'tpu-queue'", id="a queue the stack does not make"),
    pytest.param(_queued("tpu-queue", "team-b"), "namespace 'team-b' has no LocalQueue "
                 "'tpu-queue' (the stack makes it in default)", id="a namespace without it"),
])
def test_the_queue_label_must_name_the_stacks_local_queue(manifest: dict[str, Any],
                                                          want: str) -> None:
    config = load_stack_config(committed_config("v6e-multislice"))
    [problem] = stack_jobset_problems(config, manifest)
    assert problem.startswith(f"metadata.labels[{k.KUEUE_QUEUE_NAME_LABEL}]: {want}"), problem


def test_validate_says_what_the_component_says_at_preview() -> None:
    config = load_stack_config(committed_config("v5e-multislice"))
    manifest = _example("tpu-multislice")
    manifest["spec"]["replicatedJobs"][0]["replicas"] = 5  # four pools
    [line] = stack_jobset_problems(config, manifest)

    def build() -> JobSet:
        args = JobSetArgs(provider=provider(), name="tpu-multislice",
                          replicated_jobs=manifest["spec"]["replicatedJobs"],
                          annotations=manifest["metadata"]["annotations"],
                          pools=[config.slice_pools_plan()])
        return JobSet("tpu-multislice", args)

    with pytest.raises(ProgramError) as caught:
        run_component(build)
    assert f"JobSet tpu-multislice: {line}" in str(caught.value)


def test_the_command_checks_each_jobset_against_the_stack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = tmp_path / "v6e.yaml"
    wrong.write_text((EXAMPLES / "v6e-multislice" / "jobset.yaml").read_text())
    assert main(["validate", "--stack", "v6e-multislice", str(wrong)]) == 0
    capsys.readouterr()
    assert main(["validate", "--stack", "v5e-multislice", "--project-dir", str(ROOT),
                 str(wrong)]) == 1
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{wrong} (document 1): stack v5e-multislice: spec.replicatedJobs[0] "
                           "(slice): nodeSelector")


def test_an_unknown_stack_lists_the_stacks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--stack", "v9", str(EXAMPLES / "tpu-multislice" /
                                                     "jobset.yaml")]) == 2
    err = capsys.readouterr().err
    assert "jobset-infra validate: --stack: no stack 'v9'" in err and "v6e-multislice" in err
