"""The component package: Pulumi's analyzer accepts the five components and infers their
schema; the package classes turn serialisable arguments into the Python API's, validated the
same way (under mocks, as the engine would construct them for a program in another language)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.experimental.util import camel_case

from jobset_infra.components import package
from jobset_infra.components.gke_cluster import WIRED_STAND_INS
from jobset_infra.plan.offline import ProgramError
from tests.components.platform_fixtures import IMAGE, provider
from tests.components.pulumi_harness import run_component

JOBSET_CR = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
SPEC = {
    "replicatedJobs": [{"name": "workers", "replicas": 2, "template": {"spec": {
        "parallelism": 1, "completions": 1, "backoffLimit": 0,
        "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "python:3.11", "command": ["true"]}]}}}}}],
    "failurePolicy": {"maxRestarts": 2},
    "startupPolicy": {"startupPolicyOrder": "InOrder"},
}


def _schema() -> dict[str, Any]:
    provider_ = ComponentProvider(list(package.COMPONENTS), package.PACKAGE_NAME)
    schema: dict[str, Any] = json.loads(provider_.schema or "{}")
    return schema


def test_the_analyzer_infers_a_schema_for_all_five_components() -> None:
    resources = _schema()["resources"]
    assert sorted(resources) == [f"jobset-infra:index:{name}" for name in (
        "GkeCluster", "JobSet", "JobSetSystem", "Kueue", "TpuSlicePools")]
    assert all(r["isComponent"] for r in resources.values())
    system = resources["jobset-infra:index:JobSetSystem"]
    assert system["requiredInputs"] == ["image"]
    assert sorted(system["outputs"] if "outputs" in system else system["properties"]) == [
        "apiReady", "image", "namespace", "ready"]
    jobset = resources["jobset-infra:index:JobSet"]
    assert sorted(jobset["requiredInputs"]) == ["name", "spec"]
    assert {"after", "queue", "spec"} <= set(jobset["inputProperties"])
    kueue = resources["jobset-infra:index:Kueue"]
    assert {"clusterQueueName", "localQueueName", "ready"} <= set(kueue["properties"])
    # The provider a GKE cluster makes is a Kubernetes provider reference, not a Python object.
    provider_ref = resources["jobset-infra:index:GkeCluster"]["properties"]["provider"]["$ref"]
    assert provider_ref.endswith("/schema.json#/resources/pulumi:providers:kubernetes")


def test_the_wired_arguments_of_the_cluster_are_the_ones_the_component_checks_later() -> None:
    """The package's Input fields of GkeCluster are exactly those the Python component takes as
    Outputs (one list: gke_cluster.WIRED_STAND_INS)."""
    inputs = _schema()["resources"]["jobset-infra:index:GkeCluster"]["inputProperties"]
    wired = {name for name, prop in inputs.items() if not prop.get("plain")}
    assert wired == {"project", "network", "subnetwork", "nodeServiceAccount"}
    assert {camel_case(name) for name in WIRED_STAND_INS} == wired


def _jobset(**args: Any) -> package.JobSet:
    given: dict[str, Any] = {"name": "train", "spec": SPEC, **args}
    return package.JobSet("train", given,  # type: ignore[arg-type]  # as the engine passes it
                          pulumi.ResourceOptions(providers=[provider()]))


def test_a_jobset_from_the_api_spec_as_another_language_passes_it() -> None:
    run = run_component(lambda: _jobset(queue="lq", labels={"team": "a"}),
                        outputs=["child_job_names"])
    [cr] = run.of_type(JOBSET_CR)
    assert cr.inputs["spec"]["startupPolicy"] == {"startupPolicyOrder": "InOrder"}
    assert cr.inputs["spec"]["failurePolicy"] == {"maxRestarts": 2}
    assert cr.inputs["metadata"]["labels"] == {"team": "a", "kueue.x-k8s.io/queue-name": "lq"}
    assert run.values["child_job_names"] == ["train-workers-0", "train-workers-1"]


def _as_the_wire_sends(value: Any) -> Any:
    """`value` as the engine delivers it: every number a double (JSON has no other)."""
    return json.loads(json.dumps(value), parse_int=float)


def test_whole_numbers_sent_as_doubles_reach_the_jobset_api_as_integers() -> None:
    """The engine sends `replicas: 2` as 2.0; the JobSet API's schema refuses 2.0 where it
    declares an integer (the YAML consumer's first real run failed so)."""
    wire_spec = _as_the_wire_sends(SPEC)
    assert wire_spec["replicatedJobs"][0]["replicas"] == 2.0
    # Built (checked by the JobSet API's schema as it is built), where before it failed
    # naming replicas, parallelism, completions, backoffLimit and maxRestarts. (The mocks'
    # own round trip makes every number a float again, so the types are not compared here.)
    run = run_component(lambda: _jobset(spec=wire_spec), outputs=["child_job_names"])
    [cr] = run.of_type(JOBSET_CR)
    assert cr.inputs["spec"]["failurePolicy"] == {"maxRestarts": 2}
    assert run.values["child_job_names"] == ["train-workers-0", "train-workers-1"]


def test_a_jobset_waits_for_the_ready_outputs_it_is_given() -> None:
    def build() -> package.JobSet:
        ready = pulumi.Output.from_input(True)
        return _jobset(after=[ready])

    run = run_component(build, outputs=["name"])
    [cr] = run.of_type(JOBSET_CR)
    assert cr.inputs["metadata"]["name"] == "train"  # the metadata after the output resolved


@pytest.mark.parametrize(
    ("build", "want"),
    [
        pytest.param(lambda: _jobset(spec={"failurePolicy": {}}),
                     "JobSet train: spec.replicatedJobs: give at least one replicated job",
                     id="a spec without replicated jobs"),
        pytest.param(lambda: package.JobSetSystem(
            "jobset", {"image": IMAGE, "controller": {"replicas": 0}},
            pulumi.ResourceOptions(providers=[provider()])),
            "replicas", id="a controller option out of bounds names it"),
        pytest.param(lambda: package.Kueue(
            "kueue", {"queues": {"local_queue_nam": "x"}},
            pulumi.ResourceOptions(providers=[provider()])),
            "local_queue_nam", id="an unknown queue field names it"),
        pytest.param(lambda: package.JobSetSystem(
            "jobset", {"image": IMAGE, "pools": [{
                "name": "v5e", "accelerator": "tpu-v5-lite-podslice", "topology": "3x3"}]},
            pulumi.ResourceOptions(providers=[provider()])),
            "3x3", id="a slice pool that cannot exist names the topology"),
    ],
)
def test_bad_package_arguments_fail_naming_the_field(build: Any, want: str) -> None:
    with pytest.raises(ProgramError, match=want):
        run_component(build)


def test_the_system_and_kueue_from_mappings() -> None:
    def build() -> package.Kueue:
        opts = pulumi.ResourceOptions(providers=[provider()])
        system = package.JobSetSystem("jobset", {"image": IMAGE,
                                                 "controller": {"replicas": 1}}, opts)
        return package.Kueue("kueue", {"install": {"namespace": "kueue-system"},
                                       "after": [system.ready]}, opts)

    run = run_component(build, outputs=["local_queue_name"])
    [deployment] = [r for r in run.of_type("kubernetes:apps/v1:Deployment")
                    if r.name == "jobset-controller"]
    assert deployment.inputs["spec"]["replicas"] == 1
    assert run.values["local_queue_name"] == "tpu-queue"
    assert run.of_type("kubernetes:helm.sh/v3:Release")  # Kueue installed, no queues
    assert not run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")


CONSUMER = Path(__file__).resolve().parents[2] / "examples" / "yaml-consumer" / "Pulumi.yaml"


def _interpolate(value: Any, known: dict[str, Any]) -> Any:
    """A YAML program's `${name}` / `${resource.output}` references, as Pulumi YAML fills them
    in (only whole-value references: the example uses no others)."""
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        return known[value[2:-1]]
    if isinstance(value, dict):
        return {key: _interpolate(item, known) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolate(item, known) for item in value]
    return value


def test_the_yaml_consumers_arguments_build_the_components(tmp_path: Path) -> None:
    """examples/yaml-consumer's properties, as its program passes them (camelCase arguments,
    the models' field names inside), build the package's components under mocks."""
    program = yaml.safe_load(CONSUMER.read_text())
    chart = tmp_path / "kueue"
    chart.mkdir()
    arguments = {camel_case(name): name for component in (
        package.JobSetSystemArgs, package.KueueArgs, package.JobSetArgs)
        for name in component.__annotations__}
    built = {"jobset-infra:index:JobSetSystem": package.JobSetSystem,
             "jobset-infra:index:Kueue": package.Kueue, "jobset-infra:index:JobSet": package.JobSet}

    def build() -> package.JobSet:
        known: dict[str, Any] = {
            "kubeconfig": "", "kueueChart": str(chart),
            "controllerImage": f"jobset-infra.local/jobset-controller:0.1.0@sha256:{'a' * 64}",
            "kueueImage": f"jobset-infra.local/kueue:0.1.0@sha256:{'b' * 64}"}
        opts = pulumi.ResourceOptions(providers=[provider()])
        last: Any = None
        for name, resource in program["resources"].items():
            if resource["type"] not in built:
                continue
            given = _interpolate(resource["properties"], known)
            last = built[resource["type"]](
                name, {arguments[key]: value for key, value in given.items()}, opts)
            for output in ("ready", "api_ready", "namespace", "name"):
                if hasattr(last, output):
                    known[f"{name}.{camel_case(output)}"] = getattr(last, output)
        return last

    run = run_component(build, outputs=["child_job_names"])
    assert run.values["child_job_names"] == ["hello-yaml-workers-0", "hello-yaml-workers-1"]
    assert [r.name for r in run.of_type("jobset-infra:index:Kueue")] == ["kueue"]
    [deployment] = [r for r in run.of_type("kubernetes:apps/v1:Deployment")
                    if r.name == "system-controller"]
    assert deployment.inputs["spec"]["replicas"] == 1
