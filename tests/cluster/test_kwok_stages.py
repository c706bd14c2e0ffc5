"""kwok's Stages as data: which objects each one picks (their effect is tested on the real
cluster by tests/e2e and tests/cluster/test_command.py)."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.cluster.kwok_stages import EXIT_CODE_ANNOTATION, NOT_READY_ANNOTATION, stages


def by_name(auto_complete: float | None = None) -> dict[str, dict[str, Any]]:
    return {s["metadata"]["name"]: s["spec"] for s in stages(auto_complete)}


def selector(spec: dict[str, Any]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(e["key"], e["operator"], tuple(e.get("values", ())))
            for e in spec["selector"]["matchExpressions"]]


EXIT = f'.metadata.annotations["{EXIT_CODE_ANNOTATION}"]'
NOT_READY = f'.metadata.annotations["{NOT_READY_ANNOTATION}"]'


@pytest.mark.parametrize(
    ("stage", "expression"),
    [
        pytest.param("pod-succeeded", (EXIT, "In", ("0",)),
                     id="exit code 0 makes a Pod Succeeded"),
        pytest.param("pod-failed", (EXIT, "NotIn", ("0",)),
                     id="any other exit code makes it Failed"),
        pytest.param("pod-failed", (EXIT, "Exists", ()),
                     id="a Pod without the annotation never fails by itself"),
        pytest.param("pod-running", (".status.phase", "In", ("Pending",)),
                     id="a scheduled Pending Pod starts running"),
        pytest.param("pod-delete", (".metadata.deletionTimestamp", "Exists", ()),
                     id="a Pod being deleted is removed, as a kubelet would confirm"),
        pytest.param("pvc-provision", (".spec.volumeName", "DoesNotExist", ()),
                     id="a claim without a volume gets one"),
        pytest.param("node-not-ready", (NOT_READY, "Exists", ()),
                     id="a Node annotated not-ready stops reporting Ready"),
        pytest.param("node-ready", (NOT_READY, "DoesNotExist", ()),
                     id="kwok makes a Node Ready again only once the annotation is gone"),
        pytest.param("node-heartbeat", (NOT_READY, "DoesNotExist", ()),
                     id="a heartbeat never reports a not-ready Node Ready"),
    ],
)
def test_stage_selectors(stage: str, expression: tuple[str, str, tuple[str, ...]]) -> None:
    assert expression in selector(by_name()[stage])


def test_a_not_ready_node_reports_ready_false() -> None:
    template = by_name()["node-not-ready"]["next"]["statusTemplate"]
    assert 'status: "False"' in template and "type: Ready" in template


def test_pods_never_end_by_themselves_unless_asked() -> None:
    assert "pod-auto-complete" not in by_name()
    auto = by_name(2.5)["pod-auto-complete"]
    assert auto["delay"]["durationMilliseconds"] == 2500
    assert (EXIT, "DoesNotExist", ()) in selector(auto)  # an explicit exit code wins


def test_a_pod_exit_keeps_a_disruption_target_condition() -> None:
    """Preemption writes DisruptionTarget before the kill; a podFailurePolicy reads it."""
    template = by_name()["pod-failed"]["next"]["statusTemplate"]
    assert 'if eq .type "DisruptionTarget"' in template


def test_a_running_pod_is_ready() -> None:
    template = by_name()["pod-running"]["next"]["statusTemplate"]
    assert template.count('status: "True"\n  type: Ready') == 1
    assert "ready: true" in template

