"""Each committed stack constructs under Pulumi's mocks; v5e-multislice is the announced case."""

from __future__ import annotations

import json
from typing import Any

import pytest

from jobset_infra.api import constants as k
from jobset_infra.api import kueue_tas as tas
from jobset_infra.plan.offline import OfflineRun, Registration
from jobset_infra.plan.preview import kubernetes_objects, object_problems
from jobset_infra.tpu import constants as tpu
from tests.stacks.stack_runs import STACK_NAMES, run_stack

NODE_POOL = "gcp:container/nodePool:NodePool"
JOBSET = "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RELEASE = "kubernetes:helm.sh/v3:Release"
CHART = "kubernetes:helm.sh/v4:Chart"


def _one(run: OfflineRun, type_token: str) -> Registration:
    [found] = run.of_type(type_token)
    return found


def _tpu_pools(run: OfflineRun) -> list[Registration]:
    pools = "jobset-infra:index:TpuSlicePools"
    return [r for r in run.of_type(NODE_POOL) if r.parent_type == pools]


def _rjob(run: OfflineRun) -> dict[str, Any]:
    rjob: dict[str, Any] = _one(run, JOBSET).inputs["spec"]["replicatedJobs"][0]
    return rjob


@pytest.mark.parametrize("stack", [pytest.param(s, id=f"stack {s}") for s in STACK_NAMES])
def test_stack_installs_the_jobset_api_controller_kueue_and_a_jobset(stack: str) -> None:
    run = run_stack(stack)
    assert _one(run, CRD).inputs["metadata"]["name"] == k.CRD_NAME
    assert _one(run, DEPLOYMENT).inputs["metadata"]["name"] == "jobset-controller"
    kueue = _one(run, CHART if stack == "local" else RELEASE)
    assert kueue.inputs["chart"].endswith("kueue")
    assert _one(run, JOBSET).parent_type == "jobset-infra:index:JobSet"
    # local warns when no kubeconfig exists; the gke stacks of their placeholders only.
    assert [w for w in run.warnings() if "placeholder" not in w] == [] or stack == "local"


@pytest.mark.parametrize("stack", [pytest.param(s, id=f"stack {s}") for s in STACK_NAMES])
def test_every_kubernetes_object_of_the_stack_would_be_accepted(stack: str) -> None:
    objects = kubernetes_objects(run_stack(stack).registrations)
    assert len(objects) >= 12
    assert {obj["kind"]: object_problems(obj) for obj in objects} == {
        obj["kind"]: [] for obj in objects
    }


def test_jobset_waits_for_the_controller_and_the_queue() -> None:
    run = run_stack("v5e-multislice")
    jobset = _one(run, JOBSET)
    waits_for = set(jobset.dependencies)
    assert _one(run, CRD).urn in waits_for
    assert _one(run, DEPLOYMENT).urn in waits_for
    assert _one(run, CLUSTER_QUEUE).urn in waits_for


def test_multislice_has_four_compact_two_vm_v5e_pools() -> None:
    pools = _tpu_pools(run_stack("v5e-multislice"))
    assert len(pools) == 4
    for pool in pools:
        assert pool.inputs["nodeConfig"]["machineType"] == "ct5lp-hightpu-4t"
        assert pool.inputs["nodeCount"] == 2
        assert pool.inputs["placementPolicy"] == {"type": "COMPACT", "tpuTopology": "2x4"}


def test_multislice_cluster_queue_holds_the_32_chips() -> None:
    queue = _one(run_stack("v5e-multislice"), CLUSTER_QUEUE)
    [group] = queue.inputs["spec"]["resourceGroups"]
    [flavor] = group["flavors"]
    assert flavor["resources"] == [{"name": tpu.TPU_RESOURCE, "nominalQuota": "32"}]


def test_multislice_jobset_is_4_slices_of_2_pods_with_exclusive_pools() -> None:
    run = run_stack("v5e-multislice")
    jobset = _one(run, JOBSET).inputs
    rjob = _rjob(run)
    job = rjob["template"]["spec"]
    container = job["template"]["spec"]["containers"][0]
    assert rjob["replicas"] == 4
    assert (job["parallelism"], job["completions"]) == (2, 2)
    assert container["resources"]["limits"][tpu.TPU_RESOURCE] == "4"
    assert container["resources"]["requests"][tpu.TPU_RESOURCE] == "4"
    assert jobset["metadata"]["annotations"][k.EXCLUSIVE_KEY] == tpu.GKE_NODEPOOL_LABEL
    assert jobset["spec"]["failurePolicy"]["maxRestarts"] == 3
    assert jobset["metadata"]["labels"][k.KUEUE_QUEUE_NAME_LABEL] == "tpu-queue"
    assert "jax.device_count()" in " ".join(container["command"])


def test_multislice_controller_knows_the_four_pools_as_placement_domains() -> None:
    config_map = next(
        r for r in run_stack("v5e-multislice").registrations
        if r.type == "kubernetes:core/v1:ConfigMap" and r.name == "jobset-config"
    )
    text = "".join(config_map.inputs["data"].values())
    assert all(f"v5e-{i}" in text for i in range(4))


@pytest.mark.parametrize(
    ("stack", "machine_type", "nodes", "placement"),
    [
        pytest.param("v6e-multislice", "ct6e-standard-4t", 4,
                     {"type": "COMPACT", "tpuTopology": "4x4"}, id="v6e COMPACT 4x4"),
        pytest.param("v5p-multislice", "ct5p-hightpu-4t", 8,
                     {"type": "COMPACT", "tpuTopology": "2x4x4"}, id="v5p COMPACT 2x4x4"),
        pytest.param("tpu7x-multislice", "tpu7x-standard-4t", 4,
                     {"type": "COMPACT", "policyName": "tpu7x-wp"},
                     id="TPU7x named workload policy, no tpu_topology"),
    ],
)
def test_generation_stacks_shape_their_pools(
    stack: str, machine_type: str, nodes: int, placement: dict[str, str]
) -> None:
    pools = _tpu_pools(run_stack(stack))
    assert len(pools) >= 2
    for pool in pools:
        assert pool.inputs["nodeConfig"]["machineType"] == machine_type
        assert pool.inputs["nodeCount"] == nodes
        assert pool.inputs["placementPolicy"] == placement
    rjob = _rjob(run_stack(stack))
    assert (rjob["replicas"], rjob["template"]["spec"]["parallelism"]) == (len(pools), nodes)


def test_tpu7x_stack_creates_the_workload_policy_of_its_topology() -> None:
    [policy] = run_stack("tpu7x-multislice").of_type("gcp:compute/resourcePolicy:ResourcePolicy")
    assert policy.inputs["workloadPolicy"] == {"type": "HIGH_THROUGHPUT",
                                               "acceleratorTopology": "2x2x4"}
    assert policy.inputs["region"] == "us-central1"


def test_v5p_flavor_selects_the_reservations_nodes() -> None:
    flavors = run_stack("v5p-multislice").of_type(
        "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    [flavor] = flavors
    assert flavor.inputs["spec"]["nodeLabels"]["cloud.google.com/reservation-name"] == (
        "my-v5p-reservation")


def test_flex_stack_queues_provisioning_and_lets_kueue_tas_place_the_slices() -> None:
    run = run_stack("v6e-flex")
    for pool in _tpu_pools(run):
        assert pool.inputs["queuedProvisioning"] == {"enabled": True}
        assert pool.inputs["nodeConfig"]["flexStart"] is True
        assert pool.inputs["autoscaling"]["minNodeCount"] == 0
    [topology] = run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:Topology")
    [flavor] = run.of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor")
    assert flavor.inputs["spec"]["topologyName"] == topology.inputs["metadata"]["name"]
    assert topology.urn in flavor.dependencies
    [group] = _one(run, CLUSTER_QUEUE).inputs["spec"]["admissionChecksStrategy"].values()
    assert group == [{"name": "tpu-flex-start", "onFlavors": [flavor.inputs["metadata"]["name"]]}]
    jobset = _one(run, JOBSET).inputs
    assert k.EXCLUSIVE_KEY not in jobset["metadata"].get("annotations", {})
    pod = _rjob(run)["template"]["spec"]["template"]
    assert pod["metadata"]["annotations"][tas.PODSET_SLICE_SIZE] == "4"


def test_dev_stack_is_one_single_host_slice() -> None:
    run = run_stack("v5e-dev")
    [pool] = _tpu_pools(run)
    assert pool.inputs["nodeConfig"]["machineType"] == "ct5lp-hightpu-8t"
    assert pool.inputs["nodeCount"] == 1
    assert "placementPolicy" not in pool.inputs
    rjob = _rjob(run)
    assert (rjob["replicas"], rjob["template"]["spec"]["parallelism"]) == (1, 1)


def test_local_stack_uses_no_gcp_and_an_explicit_kubeconfig_provider() -> None:
    run = run_stack("local")
    assert not [r for r in run.registrations if r.type.startswith("gcp:")]
    [provider] = run.of_type("pulumi:providers:kubernetes")
    assert "kubeconfig" in provider.inputs
    assert provider.inputs.get("context") is None  # the file's current context


def test_local_stack_queues_a_tpu_jobset_on_the_four_kwok_slice_pools() -> None:
    run = run_stack("local")
    jobset = _one(run, JOBSET).inputs
    assert jobset["metadata"]["labels"][k.KUEUE_QUEUE_NAME_LABEL] == "tpu-queue"
    rjob = _rjob(run)
    assert (rjob["replicas"], rjob["template"]["spec"]["parallelism"]) == (4, 2)
    [group] = _one(run, CLUSTER_QUEUE).inputs["spec"]["resourceGroups"]
    assert group["flavors"][0]["resources"] == [{"name": tpu.TPU_RESOURCE, "nominalQuota": "32"}]
    config_map = next(r for r in run.registrations
                      if r.type == "kubernetes:core/v1:ConfigMap" and r.name == "jobset-config")
    text = "".join(config_map.inputs["data"].values())
    assert all(f"v5e-2x4-{i}" in text for i in range(4))


def test_local_kueue_is_the_module_chart_as_shipped_on_the_system_node() -> None:
    chart = _one(run_stack("local"), CHART).inputs
    assert chart["chart"].endswith("sigs.k8s.io/kueue@v0.19.2/charts/kueue")
    assert "postRenderer" not in chart  # nothing rewritten: its webhooks call its Service
    manager = chart["values"]["controllerManager"]
    assert manager["manager"]["image"] == {"repository": "jobset-infra.local/kueue",
                                           "tag": "0.1.0", "pullPolicy": "IfNotPresent"}
    assert manager["nodeSelector"] == {"jobset-infra.dev/system-node": "true"}
    assert [t["key"] for t in manager["tolerations"]] == ["jobset-infra.dev/system-node"]
    config = chart["values"]["managerConfig"]["controllerManagerConfigYaml"]
    assert "127.0.0.1" not in config


@pytest.mark.parametrize(("stack", "install"), [
    pytest.param("local", CHART, id="the local stack's chart"),
    pytest.param("v5e-multislice", RELEASE, id="a GKE stack's release"),
])
def test_kueue_waits_for_the_jobset_crd_but_not_the_controllers_rollout(
    stack: str, install: str
) -> None:
    waits_for = set(_one(run := run_stack(stack), install).dependencies)
    assert _one(run, CRD).urn in waits_for
    assert _one(run, DEPLOYMENT).urn not in waits_for  # the two roll out side by side


def test_local_demo_waits_for_the_controller_and_kueues_queue() -> None:
    run = run_stack("local")
    waits_for = set(_one(run, JOBSET).dependencies)
    assert {_one(run, CRD).urn, _one(run, DEPLOYMENT).urn, _one(run, CHART).urn,
            _one(run, CLUSTER_QUEUE).urn} <= waits_for


def test_the_placeholder_project_and_image_are_warned_at_preview_and_refused_on_update() -> None:
    """The committed gke stacks carry my-gcp-project: preview (and `plan`) warn, naming both
    keys; `pulumi up` (not a dry run) stops before registering anything, listing both."""
    from jobset_infra.plan.command import PROJECT
    from jobset_infra.plan.offline import ProgramError, run_offline
    from tests.stacks.stack_runs import STACKS, committed_config

    warnings = run_stack("v5e-multislice").warnings()
    assert [w.split(":")[1] for w in warnings if "placeholder" in w] == [
        "project", "controller.image"]
    with pytest.raises(ProgramError) as refused:
        run_offline(STACKS / "__main__.py", project=PROJECT, stack="v5e-multislice",
                    config=committed_config("v5e-multislice"), preview=False)
    assert str(refused.value).splitlines() == [
        "jobset-infra:project: 'my-gcp-project' is the placeholder; set your project: pulumi "
        "config set jobset-infra:project <project-id>",
        "jobset-infra:controller.image: 'us-west4-docker.pkg.dev/my-gcp-project/jobset-infra/"
        "jobset-controller:0.1.0' is in the placeholder project's registry and was never built; "
        "push the image to yours and set it (pulumi config set --path "
        "'jobset-infra:controller.image' <ref>), or set controller.build to build it"]
    config = {**committed_config("v5e-multislice"), "jobset-infra:project": "team-tpu",
              "jobset-infra:controller": json.dumps(
                  {"image": "us-west4-docker.pkg.dev/team-tpu/j/jobset-controller:0.1.0",
                   "replicas": 2})}
    run = run_offline(STACKS / "__main__.py", project=PROJECT, stack="v5e-multislice",
                      config=config, preview=False)
    assert not [w for w in run.warnings() if "placeholder" in w]
