"""Kueue under Pulumi mocks: the pinned chart, queues after the release, objects from the pools."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
import yaml

from jobset_infra.api.kueue_crds import kueue_errors
from jobset_infra.components.gke_cluster import GkeCluster
from jobset_infra.components.jobset_system import JobSetSystem, JobSetSystemArgs
from jobset_infra.components.kueue import Kueue, KueueArgs
from jobset_infra.components.tpu_slice_pools import TpuSlicePools, TpuSlicePoolsArgs
from jobset_infra.manifests.kueue_spec import KueueInstall, QueueSpec
from jobset_infra.plan.offline import ProgramError, Registration
from jobset_infra.tpu.cluster import GkeClusterSpec
from tests.components.platform_fixtures import IMAGE, kind_of, provider
from tests.components.pulumi_harness import ComponentRun, run_component
from tests.manifests.pools import queued_v6e_pools, v5e_pools

RELEASE = "kubernetes:helm.sh/v3:Release"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
TYPE_SYSTEM = "jobset-infra:index:JobSetSystem"
TYPE_KUEUE = "jobset-infra:index:Kueue"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:"
FOUR_V5E = v5e_pools()


def build_kueue(**fields: Any) -> ComponentRun[Kueue]:
    def build() -> Kueue:
        args = KueueArgs(**{"provider": provider(), "pools": [FOUR_V5E], **fields})
        return Kueue("kueue", args)

    return run_component(
        build, outputs=["cluster_queue_name", "local_queue_name", "flavor_names", "queue_label"]
    )


def _queue_objects(run: ComponentRun[Any]) -> list[Registration]:
    return [r for r in run.run.registrations if r.type.startswith(KUEUE)]


def _one(run: ComponentRun[Any], kind: str) -> Registration:
    (found,) = [r for r in _queue_objects(run) if kind_of(r) == kind]
    return found


def test_installs_kueue_from_the_pinned_oci_chart_with_the_jobset_integration() -> None:
    run = build_kueue()
    release = run.inputs(RELEASE, "kueue-kueue")
    assert release["chart"] == "oci://registry.k8s.io/kueue/charts/kueue"
    assert release["version"] == "0.19.2"
    assert (release["name"], release["namespace"], release["createNamespace"]) == (
        "kueue",
        "kueue-system",
        True,
    )
    assert release.get("skipAwait") in (None, False)  # Helm waits: Kueue serves when done
    config = yaml.safe_load(release["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert "jobset.x-k8s.io/jobset" in config["integrations"]["frameworks"]


def test_every_queue_object_waits_for_the_release() -> None:
    run = build_kueue(pools=[FOUR_V5E, queued_v6e_pools()])
    release = run.resource(RELEASE, "kueue-kueue")
    objects = _queue_objects(run)
    assert {kind_of(r) for r in objects} == {
        "ResourceFlavor",
        "WorkloadPriorityClass",
        "ProvisioningRequestConfig",
        "AdmissionCheck",
        "ClusterQueue",
        "LocalQueue",
    }
    for registration in objects:
        assert release.urn in registration.dependencies, registration.name


def test_cluster_queue_follows_what_it_names_and_local_queues_follow_it() -> None:
    run = build_kueue()
    by_urn = run.run.by_urn()
    cq = _one(run, "ClusterQueue")
    assert {"ResourceFlavor", "WorkloadPriorityClass"} <= {
        kind_of(by_urn[u]) for u in cq.dependencies if u in by_urn
    }
    assert cq.urn in _one(run, "LocalQueue").dependencies


def test_four_v5e_2x4_pools_give_flavor_labels_of_the_pools_and_32_chips() -> None:
    run = build_kueue()
    flavor = _one(run, "ResourceFlavor")
    assert flavor.inputs["spec"]["nodeLabels"] == dict(FOUR_V5E.flavor_node_labels)
    cq = _one(run, "ClusterQueue").inputs
    (group,) = cq["spec"]["resourceGroups"]
    (quota,) = group["flavors"]
    assert quota["name"] == flavor.inputs["metadata"]["name"]
    assert quota["resources"] == [{"name": "google.com/tpu", "nominalQuota": "32"}]


def test_registered_queue_objects_have_only_documented_kueue_fields() -> None:
    run = build_kueue()
    for registration in _queue_objects(run):
        manifest = dict(registration.inputs)
        if "value" in manifest:  # the mock transport turns numbers into floats
            manifest["value"] = int(manifest["value"])
        assert kueue_errors(manifest) == [], registration.name


def test_outputs_name_the_queues_and_flavors() -> None:
    run = build_kueue(queues=QueueSpec(local_queue_name="ml"))
    assert run.values == {
        "cluster_queue_name": "tpu-cluster-queue",
        "local_queue_name": "ml",
        "flavor_names": ["tpu-v5-lite-podslice-2x4"],
        "queue_label": "kueue.x-k8s.io/queue-name",
    }


def test_local_queue_namespaces_can_be_created_first() -> None:
    run = build_kueue(queues=QueueSpec(namespaces=("default", "team-a")), create_namespaces=True)
    namespaces = run.of_type("kubernetes:core/v1:Namespace")
    assert [r.inputs["metadata"]["name"] for r in namespaces] == ["team-a"]
    team_queue = [r for r in _queue_objects(run) if r.name.endswith("team-a-tpu-queue")]
    assert namespaces[0].urn in team_queue[0].dependencies


def test_a_cluster_with_four_v5e_2x4_pools_orders_crd_controller_kueue_queues_then_jobsets() -> (
    None
):
    built: dict[str, Any] = {}

    def build() -> Kueue:
        cluster = GkeCluster("train", GkeClusterSpec(project="my-project", location="us-west4"))
        v5e = TpuSlicePools(
            "v5e",
            TpuSlicePoolsArgs.for_cluster(
                cluster,
                {
                    "name": "v5e",
                    "accelerator": "v5e",
                    "topology": "2x4",
                    "machine_type": "ct5lp-hightpu-4t",
                    "slices": 4,
                    "zone": "us-west4-a",
                },
            ),
        )
        args = JobSetSystemArgs(provider=cluster.provider, image=IMAGE, pools=[v5e])
        system = JobSetSystem("jobset", args)
        kueue = Kueue(
            "kueue",
            KueueArgs(provider=cluster.provider, pools=[v5e]),
            pulumi.ResourceOptions(depends_on=[system]),
        )
        pulumi.CustomResource(
            "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
            "train",
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"},
            pulumi.ResourceOptions(
                provider=cluster.provider,
                depends_on=[*system.ready_resources, *kueue.ready_resources],
            ),
        )
        built["plan"] = v5e.plan
        return kueue

    run = run_component(build)
    by_urn = run.run.by_urn()
    plan = built["plan"]

    def after(registration: Registration) -> set[str]:
        return {kind_of(by_urn[u]) for u in registration.dependencies if u in by_urn}

    # Types and parents: every Kubernetes object belongs to its component.
    parents = {
        kind_of(r): r.parent_type for r in run.run.registrations if r.type.startswith("kubernetes:")
    }
    assert parents["Deployment"] == parents["CustomResourceDefinition"] == TYPE_SYSTEM
    assert parents["Release"] == parents["ClusterQueue"] == parents["LocalQueue"] == TYPE_KUEUE
    # CRD -> controller -> JobSet; Kueue (after the CRD) -> queues -> JobSet.
    assert "CustomResourceDefinition" in after(run.resource(DEPLOYMENT, "jobset-controller"))
    assert "CustomResourceDefinition" in after(run.resource(RELEASE, "kueue-kueue"))
    assert all(RELEASE in {by_urn[u].type for u in r.dependencies} for r in _queue_objects(run))
    jobset = run.resource("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "train")
    assert {"CustomResourceDefinition", "Deployment", "Release", "LocalQueue"} <= after(jobset)
    # Flavor labels are the pools' node labels; the quota is the pools' 32 chips.
    flavor = _one(run, "ResourceFlavor").inputs
    assert flavor["spec"]["nodeLabels"] == dict(plan.flavor_node_labels)
    (quota,) = _one(run, "ClusterQueue").inputs["spec"]["resourceGroups"][0]["flavors"]
    assert quota["resources"] == [{"name": "google.com/tpu", "nominalQuota": "32"}]
    # The controller knows the four pools as placement domains, even while scaled to zero.
    text = run.inputs("kubernetes:core/v1:ConfigMap", "jobset-config")["data"]["config.yaml"]
    domains = yaml.safe_load(text)["placement"]["domains"]
    assert [d["name"] for d in domains] == list(plan.pool_names)
    pools = {r.name for r in run.of_type("gcp:container/nodePool:NodePool")}
    assert set(plan.pool_names) <= pools


@pytest.mark.parametrize(
    ("fields", "want_message"),
    [
        pytest.param({"pools": []}, "at least one SlicePoolsPlan", id="no pools"),
        pytest.param({"provider": None}, "provider", id="no provider"),
        pytest.param({"pools": ["v5e"]}, r"pools\[0\]: expected a SlicePoolsPlan", id="not a plan"),
        pytest.param(
            {"queues": QueueSpec(tpu_quota={"tpu-v5-lite-podslice-2x4": 64})},
            "exceed the 32 chips",
            id="quota above the chips",
        ),
    ],
)
def test_bad_arguments_fail_before_anything_is_created(
    fields: dict[str, Any], want_message: str
) -> None:
    with pytest.raises(ProgramError, match=want_message):
        build_kueue(**fields)


def test_every_kubernetes_child_uses_the_explicit_provider() -> None:
    seen: dict[str, object] = {}
    explicit: list[object] = []

    def record(args: pulumi.ResourceTransformationArgs) -> None:
        # Transformations run in the SDK for every child, with the options it will register.
        if args.type_.startswith("kubernetes:"):
            seen[args.name] = args.opts.provider

    def build() -> Kueue:
        explicit.append(provider())
        args = KueueArgs(
            provider=explicit[0],
            pools=[FOUR_V5E, queued_v6e_pools()],
            queues=QueueSpec(namespaces=("default", "team-a")),
            create_namespaces=True,
        )
        return Kueue("kueue", args, pulumi.ResourceOptions(transformations=[record]))

    run_component(build)
    # Release, namespace, 2 flavors, 3 priority classes, check + its config, queue, 2 LocalQueues.
    assert len(seen) == 12
    assert all(value is explicit[0] for value in seen.values())


def test_install_settings_reach_the_release() -> None:
    run = build_kueue(install=KueueInstall(version="0.18.1", namespace="queues-system"))
    release = run.inputs(RELEASE, "kueue-kueue")
    assert (release["version"], release["namespace"]) == ("0.18.1", "queues-system")


def test_install_only_installs_kueue_without_queue_objects() -> None:
    run = build_kueue(pools=(), install_only=True)
    assert len(run.of_type(RELEASE)) == 1
    assert _queue_objects(run) == []
    assert run.values["flavor_names"] == []
