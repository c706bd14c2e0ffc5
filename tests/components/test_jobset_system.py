"""JobSetSystem under Pulumi mocks: the objects, their order, the explicit provider, validation."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.k8s_openapi import validate_builtin
from jobset_infra.components.jobset_system import (
    ImageBuild,
    JobSetSystem,
    JobSetSystemArgs,
    image_reference,
)
from jobset_infra.manifests import controller
from jobset_infra.manifests.controller_spec import parse_install
from jobset_infra.plan.offline import ProgramError
from jobset_infra.plan.preview import kubernetes_objects
from tests.components.platform_fixtures import IMAGE, kind_of, provider
from tests.components.pulumi_harness import ComponentRun, run_component
from tests.manifests.pools import v5e_pools

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


def build_system(**fields: Any) -> ComponentRun[JobSetSystem]:
    def build() -> JobSetSystem:
        args = JobSetSystemArgs(**{"provider": provider(), "image": IMAGE, **fields})
        return JobSetSystem("jobset", args)

    return run_component(build, outputs=["ready", "api_ready", "namespace", "image"])


def _kinds(run: ComponentRun[JobSetSystem]) -> list[str]:
    return [kind_of(r) for r in run.run.registrations if r.type.startswith("kubernetes:")]


def test_creates_every_controller_object_as_a_child_of_the_component() -> None:
    run = build_system()
    component = run.resource("jobset-infra:index:JobSetSystem", "jobset")
    children = {(kind_of(r), r.name) for r in run.children(component)}
    assert children == {
        ("CustomResourceDefinition", "jobset-crd"),
        ("MutatingAdmissionPolicy", "jobset-defaulting-policy"),
        ("MutatingAdmissionPolicyBinding", "jobset-defaulting-policy-binding"),
        ("Namespace", "jobset-namespace"),
        ("ServiceAccount", "jobset-service-account"),
        ("ClusterRole", "jobset-cluster-role"),
        ("ClusterRoleBinding", "jobset-cluster-role-binding"),
        ("Role", "jobset-leader-election-role"),
        ("RoleBinding", "jobset-leader-election-role-binding"),
        ("NetworkPolicy", "jobset-network-policy"),
        ("ConfigMap", "jobset-config"),
        ("Deployment", "jobset-controller"),
        ("PodDisruptionBudget", "jobset-pdb"),
        ("Service", "jobset-metrics"),
        ("ClusterRole", "jobset-metrics-reader"),
    }


def test_every_kubernetes_child_uses_the_explicit_provider() -> None:
    seen: dict[str, object] = {}
    explicit: list[object] = []

    def record(args: pulumi.ResourceTransformationArgs) -> None:
        # Transformations run in the SDK for every child, with the options it will register.
        if args.type_.startswith("kubernetes:"):
            seen[args.name] = args.opts.provider

    def build() -> JobSetSystem:
        explicit.append(provider())
        args = JobSetSystemArgs(provider=explicit[0], image=IMAGE)
        return JobSetSystem("jobset", args, pulumi.ResourceOptions(transformations=[record]))

    run_component(build)
    assert len(seen) == 15  # the CRD, its defaulting policy and binding, 12 controller objects
    assert all(value is explicit[0] for value in seen.values())


def test_crd_comes_before_the_controller_and_everything_it_needs() -> None:
    run = build_system()
    by_urn = run.run.by_urn()
    deployment = run.resource(DEPLOYMENT, "jobset-controller")
    before = {kind_of(by_urn[urn]) for urn in deployment.dependencies}
    assert {
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRoleBinding",
        "RoleBinding",
        "ConfigMap",
    } <= before


def test_deployment_inputs_are_the_rendered_manifest() -> None:
    run = build_system(replicas=3)
    inputs = run.inputs(DEPLOYMENT, "jobset-controller")
    want = controller.deployment(parse_install(image=IMAGE, replicas=3))
    assert inputs["spec"] == want["spec"]
    assert inputs["spec"]["replicas"] == 3


def test_jobsets_created_after_the_system_wait_for_crd_and_controller() -> None:
    def build() -> JobSetSystem:
        system = JobSetSystem("jobset", JobSetSystemArgs(provider=provider(), image=IMAGE))
        pulumi.CustomResource(
            "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
            "train",
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"},
            pulumi.ResourceOptions(depends_on=system.ready_resources),
        )
        return system

    run = run_component(build)
    jobset = run.resource("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "train")
    waited = {run.run.by_urn()[urn].type for urn in jobset.dependencies}
    assert {CRD, DEPLOYMENT} <= waited


def test_outputs_resolve() -> None:
    run = build_system(namespace="platform")
    assert run.values == {"ready": True, "api_ready": True, "namespace": "platform",
                          "image": IMAGE}


def test_pools_become_declared_placement_domains_in_the_config_file() -> None:
    run = build_system(pools=[v5e_pools()])
    text = run.inputs("kubernetes:core/v1:ConfigMap", "jobset-config")["data"]["config.yaml"]
    config = ControllerConfig.from_yaml(text)
    assert [d.name for d in config.placement.domains] == ["v5e-0", "v5e-1", "v5e-2", "v5e-3"]
    assert {d.node_count for d in config.placement.domains} == {2}


def test_service_monitor_is_optional() -> None:
    assert "ServiceMonitor" not in _kinds(build_system())
    assert "ServiceMonitor" in _kinds(build_system(service_monitor=True))


def test_pod_monitoring_scrapes_with_a_token_the_metrics_reader_role_allows() -> None:
    from jobset_infra.manifests.controller_spec import parse_install
    from jobset_infra.manifests.jobset_system import system_objects

    assert "PodMonitoring" not in _kinds(build_system())
    assert "PodMonitoring" in _kinds(build_system(pod_monitoring=True))
    objects = {m["kind"]: m for m in system_objects(
        parse_install(image="x:1", pod_monitoring=True)).pod_monitoring}
    assert sorted(objects) == ["ClusterRoleBinding", "PodMonitoring", "Role", "RoleBinding",
                               "Secret", "ServiceAccount"]
    [endpoint] = objects["PodMonitoring"]["spec"]["endpoints"]
    assert (endpoint["port"], endpoint["scheme"]) == ("metrics", "https")
    token = endpoint["authorization"]["credentials"]["secret"]
    assert token == {"name": "jobset-controller-metrics-scraper", "key": "token"}
    assert objects["Secret"]["type"] == "kubernetes.io/service-account-token"
    assert objects["ClusterRoleBinding"]["roleRef"]["name"] == "jobset-controller-metrics-reader"
    assert objects["RoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "collector", "namespace": "gmp-system"}]
    assert objects["Role"]["rules"][0]["resourceNames"] == [token["name"]]
    plain = system_objects(parse_install(image="x:1", pod_monitoring=True, config={
        "metrics": {"secureServing": False}})).pod_monitoring
    assert [m["kind"] for m in plain] == ["PodMonitoring"]
    assert "authorization" not in plain[0]["spec"]["endpoints"][0]


def test_rendered_builtin_objects_validate_against_the_pinned_schema() -> None:
    run = build_system(pools=[v5e_pools()])
    objects = kubernetes_objects(run.run.registrations)
    builtins = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    assert len(builtins) == 14  # with the defaulting policy and its binding
    for manifest in builtins:
        assert validate_builtin(manifest) == [], manifest["kind"]


def test_image_build_creates_a_repository_and_pushes_the_pinned_tag() -> None:
    build = ImageBuild(project="p", location="us-west4", tag="0.1.0")
    run = build_system(image=None, build=build)
    repo = run.inputs("gcp:artifactregistry/repository:Repository", "jobset-images")
    assert (repo["repositoryId"], repo["format"], repo["location"]) == (
        "jobset-infra",
        "DOCKER",
        "us-west4",
    )
    image = run.inputs("docker-build:index:Image", "jobset-image")
    assert image["tags"] == [image_reference(build)] == [IMAGE]
    assert image["push"] is True
    assert image["dockerfile"]["location"] == "Dockerfile"
    deployment = run.resource(DEPLOYMENT, "jobset-controller")
    image_urn = run.resource("docker-build:index:Image", "jobset-image").urn
    assert image_urn in deployment.dependencies


@pytest.mark.parametrize(
    ("fields", "want_message"),
    [
        pytest.param({"image": None}, "give exactly one", id="neither image nor build"),
        pytest.param(
            {"build": ImageBuild(project="p", location="l", tag="1")},
            "give exactly one",
            id="both image and build",
        ),
        pytest.param({"provider": None}, "provider", id="no provider"),
        pytest.param({"image": "jobset-controller"}, "no pinned tag", id="unpinned image"),
        pytest.param({"replicas": 0}, "replicas", id="no replicas"),
        pytest.param(
            {"pools": [v5e_pools(), v5e_pools()]}, "declared twice", id="pools given twice"
        ),
        pytest.param({"pools": [{"name": "v5e"}]}, "pools\\[0\\]", id="pool not a plan"),
    ],
)
def test_bad_arguments_fail_before_anything_is_created(
    fields: dict[str, Any], want_message: str
) -> None:
    with pytest.raises(ProgramError, match=want_message):
        build_system(**fields)


def test_the_crd_is_retained_on_delete_unless_asked_otherwise() -> None:
    seen: dict[str, bool | None] = {}

    def record(args: pulumi.ResourceTransformationArgs) -> None:
        if args.type_ == CRD:
            seen[args.name] = args.opts.retain_on_delete

    for retain in (True, False):

        def build(retain: bool = retain) -> JobSetSystem:
            args = JobSetSystemArgs(provider=provider(), image=IMAGE, retain_crd=retain)
            return JobSetSystem("jobset", args, pulumi.ResourceOptions(transformations=[record]))

        run_component(build)
        assert seen == {"jobset-crd": retain}


DIGEST = "sha256:" + "ab" * 32


def test_an_image_digest_from_an_image_build_resource_is_what_the_deployment_runs() -> None:
    """A program that builds the image itself passes the build's digest ref, an Output."""
    from pulumi_docker_build import Image

    def build() -> JobSetSystem:
        image = Image("controller-image", tags=["registry.example/jobset-controller:1.0"],
                      push=True, context={"location": "."})
        ref = image.tags.apply(lambda tags: f"{tags[0]}@{DIGEST}")  # as `Image.ref` reads
        return JobSetSystem("jobset", JobSetSystemArgs(provider=provider(), image=ref))

    run = run_component(build, outputs=["image"])
    want = f"registry.example/jobset-controller:1.0@{DIGEST}"
    assert run.values["image"] == want
    deployment = run.inputs(DEPLOYMENT, "jobset-controller")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == want


def test_an_unpinned_image_output_fails_when_it_resolves_naming_the_field() -> None:
    def build() -> JobSetSystem:
        image = pulumi.Output.from_input("jobset-controller")
        return JobSetSystem("jobset", JobSetSystemArgs(provider=provider(), image=image))

    with pytest.raises(ProgramError, match=r"image: .jobset-controller. has no pinned tag"):
        run_component(build, outputs=["image"])
