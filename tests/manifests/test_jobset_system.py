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
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
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


def test_the_defaulting_policy_is_left_out_when_the_install_opts_out() -> None:
    objects = system_objects(parse_install(image=IMAGE, defaulting_policy=False))
    kinds = [m["kind"] for m in objects.in_apply_order()]
    assert "MutatingAdmissionPolicy" not in kinds and "CustomResourceDefinition" in kinds


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
        cluster_scoped = ("Namespace", "ClusterRole", "ClusterRoleBinding",
                          "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding")
        if manifest["kind"] not in cluster_scoped:
            assert manifest["metadata"]["namespace"] == "jobs-system", manifest["kind"]


def test_a_scoped_install_grants_workloads_by_a_role_in_the_watched_namespace() -> None:
    from jobset_infra.api.rbac import CLUSTER_RULES, CLUSTER_SCOPED_RULES, WORKLOAD_RULES

    install = parse_install(image=IMAGE, config={"controller": {"watchNamespace": "team-a"}})
    objects = system_objects(install)
    assert objects.cluster_role["rules"] == [r.to_dict() for r in CLUSTER_SCOPED_RULES]
    role, binding = objects.workload_role, objects.workload_role_binding
    assert role is not None and binding is not None
    assert (role["kind"], role["metadata"]["namespace"]) == ("Role", "team-a")
    assert role["rules"] == [r.to_dict() for r in WORKLOAD_RULES]
    assert binding["metadata"]["namespace"] == "team-a"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": install.name,
                                    "namespace": install.namespace}]
    assert role in objects.prerequisites() and binding in objects.prerequisites()
    assert all(validate_builtin(m) == [] for m in (role, binding))
    unscoped = system_objects(parse_install(image=IMAGE))
    assert unscoped.cluster_role["rules"] == [r.to_dict() for r in CLUSTER_RULES]
    assert unscoped.workload_role is None and unscoped.workload_role_binding is None


def test_the_namespace_enforces_audits_and_warns_restricted_at_a_pinned_version() -> None:
    from jobset_infra.api.k8s_openapi import K8S_VERSION

    labels = system_objects(parse_install(image=IMAGE)).namespace["metadata"]["labels"]
    pss = {k: v for k, v in labels.items() if k.startswith("pod-security.kubernetes.io/")}
    assert pss == {
        f"pod-security.kubernetes.io/{mode}{suffix}": value
        for mode in ("enforce", "audit", "warn")
        for suffix, value in (("", "restricted"), ("-version", f"v{K8S_VERSION}"))
    }
