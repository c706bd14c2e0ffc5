"""Node predicates: tolerations, nodeSelector, required node affinity, room for pods."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.placement.nodes import (
    Taint,
    Toleration,
    pods_that_fit,
    slim_node_from_manifest,
    tolerates,
)
from jobset_infra.placement.scheduling_terms import matches_node_affinity
from tests.placement.builders import POOL_KEY, TPU, node_manifest

TPU_TAINT = Taint(TPU, "present", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "taint", "want"),
    [
        pytest.param(Toleration(TPU, "Exists"), TPU_TAINT, True, id="exists on the key"),
        pytest.param(
            Toleration("", "Exists"), TPU_TAINT, True, id="empty key exists tolerates all"
        ),
        pytest.param(Toleration(TPU, "Equal", "present"), TPU_TAINT, True, id="equal value"),
        pytest.param(Toleration(TPU, "Equal", "absent"), TPU_TAINT, False, id="different value"),
        pytest.param(
            Toleration(TPU, "Exists", effect="NoExecute"), TPU_TAINT, False, id="different effect"
        ),
        pytest.param(Toleration("other", "Exists"), TPU_TAINT, False, id="different key"),
    ],
)
def test_toleration_matches_taint(toleration: Toleration, taint: Taint, want: bool) -> None:
    assert toleration.tolerates(taint) is want


def test_prefer_no_schedule_taints_do_not_block() -> None:
    assert tolerates((), (Taint("soft", "", "PreferNoSchedule"),))
    assert not tolerates((), (TPU_TAINT,))


def _affinity(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(exprs)}]
            }
        }
    }


@pytest.mark.parametrize(
    ("expr", "labels", "want"),
    [
        pytest.param({"key": "a", "operator": "In", "values": ["x"]}, {"a": "x"}, True, id="in"),
        pytest.param({"key": "a", "operator": "In", "values": ["x"]}, {}, False, id="in missing"),
        pytest.param({"key": "a", "operator": "NotIn", "values": ["x"]}, {}, True, id="not in"),
        pytest.param({"key": "a", "operator": "Exists"}, {"a": ""}, True, id="exists"),
        pytest.param(
            {"key": "a", "operator": "DoesNotExist"}, {"a": ""}, False, id="does not exist"
        ),
        pytest.param({"key": "a", "operator": "Gt", "values": ["3"]}, {"a": "4"}, True, id="gt"),
        pytest.param(
            {"key": "a", "operator": "Lt", "values": ["3"]},
            {"a": "x"},
            False,
            id="lt on a non-number",
        ),
    ],
)
def test_required_node_affinity(expr: dict[str, Any], labels: dict[str, str], want: bool) -> None:
    assert matches_node_affinity(_affinity(expr), labels) is want


def test_node_affinity_terms_are_ored() -> None:
    affinity = _affinity({"key": "a", "operator": "Exists"})
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ].append({"matchExpressions": [{"key": "b", "operator": "Exists"}]})
    assert matches_node_affinity(affinity, {"b": "1"})
    assert not matches_node_affinity(affinity, {"c": "1"})


@pytest.mark.parametrize(
    ("allocatable", "per_pod", "want"),
    [
        pytest.param(
            {TPU: 4000, "pods": 110_000},
            {TPU: 4000, "pods": 1000},
            1,
            id="one tpu pod takes all chips",
        ),
        pytest.param(
            {"cpu": 8000, "pods": 110_000}, {"cpu": 2000, "pods": 1000}, 4, id="cpu pods pack"
        ),
        pytest.param({"cpu": 8000}, {TPU: 4000}, 0, id="resource the node lacks"),
        pytest.param(
            {"cpu": 8000, "pods": 2000}, {"cpu": 1000, "pods": 1000}, 2, id="pod count limit"
        ),
        pytest.param(None, {TPU: 4000}, 1, id="unknown allocatable is one pod per node"),
    ],
)
def test_pods_that_fit(
    allocatable: dict[str, int] | None, per_pod: dict[str, int], want: int
) -> None:
    assert pods_that_fit(allocatable, per_pod) == want


def test_slim_node_from_manifest() -> None:
    node = slim_node_from_manifest(node_manifest("n1", "pool-a"))
    assert node.name == "n1"
    assert node.labels[POOL_KEY] == "pool-a"
    assert node.taints == (TPU_TAINT,)
    assert node.allocatable is not None
    assert node.allocatable[TPU] == 4000
    assert node.allocatable["cpu"] == 111_500
    assert node.usable


def test_not_ready_and_cordoned_nodes_are_not_usable() -> None:
    assert not slim_node_from_manifest(node_manifest("n1", "p", ready=False)).usable
    cordoned = node_manifest("n2", "p")
    cordoned["spec"]["unschedulable"] = True
    assert not slim_node_from_manifest(cordoned).usable


def test_malformed_node_is_not_an_exception() -> None:
    node = slim_node_from_manifest(
        {"metadata": {"name": "x"}, "status": {"allocatable": {"a": "?"}}}
    )
    assert node.allocatable == {}
