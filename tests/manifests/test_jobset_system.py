"""The whole install: CRD first, every built-in object valid, one source for plan and Pulumi."""

from __future__ import annotations

from jobset_infra.api import constants
from jobset_infra.api.k8s_openapi import validate_builtin
from jobset_infra.manifests.controller_spec import parse_install
from jobset_infra.manifests.crd import jobset_crd
from jobset_infra.manifests.jobset_system import system_objects

IMAGE = "registry/jobset-controller:0.1.0"


def test_the_crd_is_the_generated_jobset_crd() -> None:
    crd = jobset_crd()
    assert crd["metadata"]["name"] == constants.CRD_NAME
    assert crd["spec"]["group"] == constants.GROUP
    assert [v["name"] for v in crd["spec"]["versions"]] == [constants.VERSION]
    assert validate_builtin(crd) == []


def test_jobset_crd_returns_a_fresh_copy() -> None:
    jobset_crd()["metadata"]["name"] = "changed"
    assert jobset_crd()["metadata"]["name"] == constants.CRD_NAME


def test_apply_order_starts_with_the_crd_and_puts_the_deployment_after_its_needs() -> None:
    kinds = [m["kind"] for m in system_objects(parse_install(image=IMAGE)).in_apply_order()]
    assert kinds == [
        "CustomResourceDefinition",
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "ConfigMap",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "ClusterRole",
    ]


def test_service_monitor_comes_last_when_asked_for() -> None:
    objects = system_objects(parse_install(image=IMAGE, service_monitor=True))
    assert objects.in_apply_order()[-1]["kind"] == "ServiceMonitor"


def test_every_object_of_the_install_validates_against_the_pinned_schema() -> None:
    objects = system_objects(parse_install(image=IMAGE, namespace="jobs-system"))
    for manifest in objects.in_apply_order():
        assert validate_builtin(manifest) == [], manifest["kind"]


def test_namespaced_objects_live_in_the_install_namespace() -> None:
    objects = system_objects(parse_install(image=IMAGE, namespace="jobs-system"))
    for manifest in objects.in_apply_order()[1:]:
        if manifest["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert manifest["metadata"]["namespace"] == "jobs-system", manifest["kind"]
