"""Server-side apply and managedFields in the store."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobset_infra.sim.apiserver.apply import field_paths, fields_v1_of, from_fields_v1, to_fields_v1
from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.patch import APPLY_PATCH, MERGE_PATCH
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store
from tests.sim.kube_objects import CONFIGMAPS, DEPLOYMENTS, configmap, deployment


def managers(obj: dict[str, Any]) -> dict[tuple[str, str], set[tuple[str, ...]]]:
    return {(e["manager"], e["operation"]): from_fields_v1(e["fieldsV1"])
            for e in obj["metadata"]["managedFields"]}


def apply(store: Store, body: dict[str, Any], manager: str = "applier",
          force: bool = False) -> dict[str, Any]:
    return store.patch(CONFIGMAPS, body["metadata"]["name"], "default", APPLY_PATCH, body,
                       field_manager=manager, force=force)


def test_create_records_the_creator_as_owner_of_every_field() -> None:
    store = Store()
    created = store.create(CONFIGMAPS, configmap("c", {"a": "1"}), "default",
                           field_manager="creator")
    assert managers(created) == {("creator", "Update"): {("f:data", "f:a")}}


def test_an_update_moves_ownership_of_the_fields_it_changed() -> None:
    store = Store()
    store.create(CONFIGMAPS, configmap("c", {"a": "1", "b": "1"}), "default",
                 field_manager="creator")
    updated = store.patch(CONFIGMAPS, "c", "default", MERGE_PATCH, {"data": {"b": "2"}},
                          field_manager="editor")
    assert managers(updated) == {("creator", "Update"): {("f:data", "f:a")},
                                 ("editor", "Update"): {("f:data", "f:b")}}


def test_apply_creates_a_missing_object() -> None:
    store = Store()
    created = apply(store, configmap("c", {"a": "1"}))
    assert created["data"] == {"a": "1"}
    assert managers(created) == {("applier", "Apply"): {("f:data", "f:a")}}


@pytest.mark.parametrize(
    ("force", "want_code", "want_data"),
    [
        pytest.param(False, 409, {"a": "1"}, id="a field owned by another manager conflicts"),
        pytest.param(True, None, {"a": "2"}, id="force takes the field over"),
    ],
)
def test_apply_conflicts(force: bool, want_code: int | None, want_data: dict[str, str]) -> None:
    store = Store()
    store.create(CONFIGMAPS, configmap("c", {"a": "1"}), "default", field_manager="creator")
    code = None
    try:
        apply(store, configmap("c", {"a": "2"}), force=force)
    except StatusError as err:
        code = err.code
        assert err.details is not None
        assert err.details["causes"] == [{"reason": "FieldManagerConflict",
                                          "message": 'conflict with "creator" using v1',
                                          "field": ".data.a"}]
        assert err.message == ('Apply failed with 1 conflict: conflict with "creator" using v1:'
                               " .data.a")
    assert code == want_code
    assert store.get(CONFIGMAPS, "c", "default")["data"] == want_data


def test_apply_with_the_same_value_shares_ownership_without_conflict() -> None:
    store = Store()
    store.create(CONFIGMAPS, configmap("c", {"a": "1"}), "default", field_manager="creator")
    applied = apply(store, configmap("c", {"a": "1", "b": "2"}))
    assert managers(applied)[("applier", "Apply")] == {("f:data", "f:a"), ("f:data", "f:b")}


def test_apply_removes_fields_it_no_longer_applies_unless_someone_else_owns_them() -> None:
    store = Store()
    apply(store, configmap("c", {"mine": "1", "shared": "1"}))
    store.patch(CONFIGMAPS, "c", "default", MERGE_PATCH, {"data": {"shared": "2"}},
                field_manager="editor")
    after = apply(store, configmap("c", {}))
    assert after["data"] == {"shared": "2"}


def test_apply_merges_containers_by_name() -> None:
    """(A Deployment's template: a Pod's own containers cannot be added to after create.)"""
    store = Store()
    store.create(DEPLOYMENTS, deployment("d"), "default", field_manager="creator")
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "s:1"}]}}}}
    applied = store.patch(DEPLOYMENTS, "d", "default", APPLY_PATCH, body, field_manager="applier")
    containers = applied["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["c", "sidecar"]


def test_apply_needs_a_field_manager() -> None:
    store = Store()
    with pytest.raises(StatusError) as err:
        store.patch(CONFIGMAPS, "c", "default", APPLY_PATCH, configmap("c"))
    assert err.value.code == 422  # PatchOptions is invalid, as kube-apiserver answers
    assert "fieldManager" in err.value.message


json_leaf = st.one_of(st.integers(), st.text(max_size=3), st.booleans())
json_tree = st.recursive(
    st.dictionaries(st.text("abc", min_size=1, max_size=3), json_leaf, max_size=3),
    lambda inner: st.dictionaries(st.text("abc", min_size=1, max_size=3), inner, max_size=3),
    max_leaves=12,
)


@given(json_tree)
def test_fields_v1_round_trips_the_field_set(tree: dict[str, Any]) -> None:
    paths = field_paths({"spec": tree})
    assert from_fields_v1(to_fields_v1(paths)) == paths


@given(json_tree)
def test_the_one_pass_fields_v1_equals_the_path_set_route(tree: dict[str, Any]) -> None:
    obj = {"apiVersion": "v1", "kind": "X", "metadata": {"name": "n", "uid": "u"},
           "spec": tree, "finalizers": ["f"],
           "containers": [{"name": "c", "image": "i"}, {"name": "d"}]}
    assert fields_v1_of(obj) == to_fields_v1(field_paths(obj))


def test_re_applying_the_same_configuration_is_not_a_write() -> None:
    store = Store()
    apply(store, configmap("c", {"a": "1"}))
    before = store.resource_version
    again = apply(store, configmap("c", {"a": "1"}))
    assert store.resource_version == before
    assert again["metadata"]["resourceVersion"] == str(before)


def test_conflicts_with_appliers_are_grouped_by_manager_as_the_api_server_words_them() -> None:
    store = Store()
    apply(store, configmap("c", {"a": "1", "b": "1"}), manager="first")
    with pytest.raises(StatusError) as err:
        apply(store, configmap("c", {"a": "2", "b": "2"}), manager="second")
    assert err.value.message == ('Apply failed with 2 conflicts: conflicts with "first":\n'
                                 "- .data.a\n- .data.b")


# ---- issue 16, findings 1 and 2 ----------------------------------------------------------------

def _jobset_store() -> tuple[Store, GVR]:
    import yaml

    from tests.conformance.servers import CRD_FILE

    store = Store()
    store.create(GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
                 yaml.safe_load(CRD_FILE.read_text()))
    return store, GVR("jobset.x-k8s.io", "v1alpha2", "jobsets")


def _jobset(**replicas: int) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "js", "namespace": "default"},
            "spec": {"suspend": True, "replicatedJobs": [
                {"name": name, "replicas": count, "template": {"spec": {"template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1"}]}}}}}
                for name, count in replicas.items()]}}


def test_apply_after_create_merges_a_crd_map_list_by_its_keys() -> None:
    store, jobsets = _jobset_store()
    store.create(jobsets, _jobset(workers=2, driver=1), "default", field_manager="kubectl-create")
    applied = store.patch(jobsets, "js", "default", APPLY_PATCH, _jobset(workers=2, driver=1),
                          field_manager="kubectl")
    assert [r["name"] for r in applied["spec"]["replicatedJobs"]] == ["workers", "driver"]
    owned = next(e for e in applied["metadata"]["managedFields"] if e["manager"] == "kubectl")
    assert 'k:{"name":"workers"}' in owned["fieldsV1"]["f:spec"]["f:replicatedJobs"]


def test_another_manager_applying_one_item_of_a_map_list_keeps_the_others() -> None:
    store, jobsets = _jobset_store()
    store.patch(jobsets, "js", "default", APPLY_PATCH, _jobset(workers=2, driver=1),
                field_manager="a")
    with pytest.raises(StatusError) as conflict:
        store.patch(jobsets, "js", "default", APPLY_PATCH, _jobset(workers=3),
                    field_manager="b")
    assert conflict.value.code == 409
    assert conflict.value.details is not None
    assert [c["field"] for c in conflict.value.details["causes"]] == [
        '.spec.replicatedJobs[name="workers"].replicas']  # as structured-merge-diff prints it
    merged = store.patch(jobsets, "js", "default", APPLY_PATCH, _jobset(workers=3),
                         field_manager="b", force=True)
    assert [(r["name"], r["replicas"]) for r in merged["spec"]["replicatedJobs"]] == [
        ("workers", 3), ("driver", 1)]


def test_apply_to_status_keeps_its_managed_fields_so_a_later_apply_removes_a_field() -> None:
    store, jobsets = _jobset_store()
    store.patch(jobsets, "js", "default", APPLY_PATCH, _jobset(workers=1), field_manager="user")
    status = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "js"}, "status": {"restarts": 1, "terminalState": "Completed"}}
    first = store.patch(jobsets, "js", "default", APPLY_PATCH, status, subresource="status",
                        field_manager="ctl")
    entry = next(e for e in first["metadata"]["managedFields"] if e["manager"] == "ctl")
    assert entry["subresource"] == "status"
    assert set(entry["fieldsV1"]["f:status"]) == {"f:restarts", "f:terminalState"}
    status["status"] = {"restarts": 2}
    second = store.patch(jobsets, "js", "default", APPLY_PATCH, status, subresource="status",
                         field_manager="ctl")
    assert second["status"] == {"restarts": 2}


def test_applying_an_empty_status_removes_the_conditions_the_manager_applied() -> None:
    """Each condition is a list item keyed by type: it goes whole, not field by field."""
    store = Store()
    jobs = GVR("batch", "v1", "jobs")
    store.create(jobs, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                        "spec": {"suspend": True, "template": {"spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "b:1"}]}}}},
                 "default", field_manager="creator")
    condition = {"type": "Suspended", "status": "True", "reason": "JobSuspended",
                 "message": "suspended", "lastTransitionTime": "2025-01-01T00:00:00Z"}

    def status(body: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "status": body}

    applied = store.patch(jobs, "j", "default", APPLY_PATCH, status({"conditions": [condition]}),
                          subresource="status", field_manager="ctl")
    assert applied["status"]["conditions"] == [condition]
    cleared = store.patch(jobs, "j", "default", APPLY_PATCH, status({}), subresource="status",
                          field_manager="ctl")
    assert cleared["status"] == {}
