"""VolumeClaimPolicies (upstream volume_claim_policy_test.go: TestReconcileVolumeClaimPolicies,
TestAddVolumes; integration "jobset with VolumeClaimPolicies ...")."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.models import JobSet
from jobset_infra.controller.core import observe, reconcile
from jobset_infra.controller.core.types import CreatePVC
from jobset_infra.controller.core.volume_claim_policy import add_claimed_volumes, pvcs_to_create
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset
from tests.controller.core.cluster import settle, start

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _js() -> JobSetBuilder:
    return (
        make_jobset("js", "ns")
        .uid("u1")
        .replicated_job("w", replicas=2)
        .volume_mount("w", "data")
        .volume_claim_policy("data", when_deleted="Delete")
        .volume_claim_policy("ckpt-retain", when_deleted="Retain")
    )


def test_pvcs_with_different_retention_and_custom_labels() -> None:
    manifest = _js().obj()
    manifest["spec"]["volumeClaimPolicies"][1]["templates"][0]["metadata"].update(
        labels={"team": "ml"}, annotations={"note": "keep"}
    )
    js = JobSet.model_validate(manifest)
    data, ckpt = pvcs_to_create(js, frozenset())
    assert data["metadata"]["name"] == "data-js"
    assert data["metadata"]["labels"] == {c.JOBSET_NAME_KEY: "js"}
    assert data["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert data["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert ckpt["metadata"]["name"] == "ckpt-retain-js"
    assert ckpt["metadata"]["labels"] == {"team": "ml", c.JOBSET_NAME_KEY: "js"}
    assert ckpt["metadata"]["annotations"] == {"note": "keep"}
    assert "ownerReferences" not in ckpt["metadata"]


@pytest.mark.parametrize(
    ("existing", "want"),
    [
        pytest.param(frozenset({"data-js"}), ["ckpt-retain-js"], id="PVC already exists"),
        pytest.param(frozenset(), ["data-js", "ckpt-retain-js"], id="no PVC exists"),
        pytest.param(
            None, ["data-js", "ckpt-retain-js"], id="unknown: planned every pass as upstream"
        ),
    ],
)
def test_only_missing_pvcs_are_created(existing: frozenset[str] | None, want: list[str]) -> None:
    got = pvcs_to_create(_js().model(), existing)
    assert [p["metadata"]["name"] for p in got] == want


def _pod(containers: list[list[str]], init: list[list[str]] | None = None) -> dict[str, Any]:
    def ctr(i: int, mounts: list[str]) -> dict[str, Any]:
        return {
            "name": f"c{i}",
            "image": "x",
            "volumeMounts": [{"name": m, "mountPath": f"/{m}"} for m in mounts],
        }

    pod: dict[str, Any] = {"containers": [ctr(i, m) for i, m in enumerate(containers)]}
    if init is not None:
        pod["initContainers"] = [ctr(i, m) for i, m in enumerate(init)]
    return pod


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(
            _pod([["data", "ckpt-retain"]]), ["data", "ckpt-retain"], id="matching mounts"
        ),
        pytest.param(_pod([["other"]]), [], id="missing mounts"),
        pytest.param(_pod([["data"]]), ["data"], id="partial"),
        pytest.param(
            _pod([["data"]], init=[["ckpt-retain"]]),
            ["data", "ckpt-retain"],
            id="multiple policies with initContainer",
        ),
    ],
)
def test_add_volumes(pod: dict[str, Any], want: list[str]) -> None:
    add_claimed_volumes(_js().model(), pod)
    volumes = pod.get("volumes", [])
    assert [v["name"] for v in volumes] == want
    assert all(v["persistentVolumeClaim"]["claimName"] == f"{v['name']}-js" for v in volumes)


@pytest.mark.parametrize(
    "suspend",
    [
        pytest.param(
            False,
            id=(
                "jobset with VolumeClaimPolicies should create two PVC with Delete and Retain "
                "policies"
            ),
        ),
        pytest.param(True, id="suspended jobset with VolumeClaimPolicies should create PVCs"),
    ],
)
def test_reconcile_creates_pvcs_and_mounts_them(suspend: bool) -> None:
    state = settle(start(_js().suspend(suspend).obj()))
    assert sorted(state.pvcs) == ["ckpt-retain-js", "data-js"]
    for job in state.jobs.values():
        assert job["spec"]["template"]["spec"]["volumes"] == [
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-js"}}
        ]
    plan = reconcile(observe(state.jobset, (), True, None, None), NOW)
    assert len(plan.of_type(CreatePVC)) == 2  # without a PVC cache: upstream's create-every-pass
