"""The ServiceAccount controller and admission plugin as the sim plays them (the conformance
corpus's service-account-admission and pod-updates hold kube-apiserver's own answers)."""

from __future__ import annotations

import pytest

from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.service_accounts import MOUNT_PATH
from jobset_infra.sim.apiserver.store import INITIAL_NAMESPACES, Store
from tests.sim.kube_objects import NAMESPACES, PODS, pod

ACCOUNTS = GVR("", "v1", "serviceaccounts")


def test_every_namespace_has_its_default_service_account_from_its_creation() -> None:
    store = Store()
    store.create(NAMESPACES, {"metadata": {"name": "team"}})
    for namespace in (*INITIAL_NAMESPACES, "team"):
        assert store.peek(ACCOUNTS, namespace,
                          "default") is not None, namespace


def test_a_pod_gets_the_default_account_and_its_token_volume() -> None:
    store = Store()
    created = store.create(PODS, pod("p"), "default")
    spec = created["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    (volume,) = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-")
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}]


def test_a_pod_in_a_namespace_whose_default_account_was_deleted_is_forbidden() -> None:
    store = Store()
    store.delete(ACCOUNTS, "default", "default")
    with pytest.raises(StatusError) as err:
        store.create(PODS, pod("p"), "default")
    assert err.value.code == 403
    assert err.value.message == ('pods "p" is forbidden: error looking up service account '
                                 'default/default: serviceaccount "default" not found')


def test_a_mirror_pod_is_left_alone() -> None:
    store = Store()
    store.delete(ACCOUNTS, "default", "default")
    mirror = pod("static")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "hash"}
    created = store.create(PODS, mirror, "default")
    assert "serviceAccountName" not in created["spec"]
