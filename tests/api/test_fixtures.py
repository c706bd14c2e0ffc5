"""Our equivalents of every upstream JobSet example validate, round-trip and default sensibly."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.check import check_jobset
from jobset_infra.api.features import FeatureGates
from jobset_infra.api.models import JobSet
from jobset_infra.api.yaml_io import load_documents
from jobset_infra.validate_command import parse_feature_gates

FIXTURES = Path(__file__).parent / "fixtures"

# Upstream example (reference §6) -> our fixture. Non-JobSet examples (Kueue config, Argo
# workflow, RBAC, Prometheus) are not JobSets and have no fixture here.
_FP, _RJS, _RJ, _OJ = "failure-policy/", "restartjobset", "restartjob", "onjobfailurereasons-"
UPSTREAM_EXAMPLES = {
    "simple/paralleljobs.yaml": "paralleljobs.yaml",
    "simple/success-policy.yaml": "success-policy.yaml",
    "simple/failure-policy.yaml": "failure-policy.yaml",
    "simple/exclusive-placement.yaml": "exclusive-placement.yaml",
    "simple/coordinator.yaml": "coordinator.yaml",
    "simple/group.yaml": "group.yaml",
    "simple/jobset-with-network.yaml": "network.yaml",
    "simple/ttl-after-finished.yaml": "ttl-after-finished.yaml",
    "startup-policy/startup-driver-ready.yaml": "startup-driver-ready.yaml",
    "depends-on/depends-on.yaml": "depends-on.yaml",
    "depends-on/multiple-depends-on.yaml": "multiple-depends-on.yaml",
    "failure-policy/failjobset-action.yaml": "failjobset-action.yaml",
    "failure-policy/restartjobset-action.yaml": "restartjobset-action.yaml",
    f"{_FP}{_RJS}andignoremaxrestarts-action.yaml": f"{_RJS}andignoremaxrestarts-action.yaml",
    "failure-policy/restartjob-action.yaml": "restartjob-action.yaml",
    f"{_FP}restartjobandignoremaxrestarts-action.yaml": f"{_RJ}andignoremaxrestarts-action.yaml",
    "failure-policy/onjobfailurereasons-present.yaml": "onjobfailurereasons-present.yaml",
    f"{_FP}onjobfailurereasons-present-podfailurepolicy.yaml": f"{_OJ}podfailurepolicy.yaml",
    "failure-policy/host-maintenance-event-model.yaml": "host-maintenance-event-model.yaml",
    "in-place-restart/jobset-main-container-mode.yaml": "in-place-restart-main-container.yaml",
    "in-place-restart/jobset-sidecar-container-mode.yaml": "in-place-restart-sidecar.yaml",
    "volume-claim-policy/single-pvc.yaml": "volume-claim-policy.yaml",
    "pytorch/cnn-mnist/mnist.yaml": "pytorch-mnist.yaml",
    "pytorch/resnet-cifar10/resnet.yaml": "pytorch-resnet.yaml",
    "tensorflow/mnist.yaml": "tensorflow-mnist.yaml",
    "tpu-multislice/v6e-jax-workload.yaml": "tpu-multislice.yaml",
    "workload-aware-scheduling/jobset.yaml": "workload-aware-scheduling.yaml",
    "config/samples/batch_v1alpha2_jobset.yaml": "empty-scaffold.yaml",
}


def _load(name: str) -> tuple[dict[str, Any], FeatureGates]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    match = re.search(r"^# feature-gates: (\S+)", text, re.MULTILINE)
    gates = parse_feature_gates(match.group(1)) if match else FeatureGates()
    assert isinstance(gates, FeatureGates)
    (document,) = load_documents(text)
    return document, gates


def test_every_fixture_is_mapped_to_an_upstream_example() -> None:
    assert sorted(UPSTREAM_EXAMPLES.values()) == sorted(p.name for p in FIXTURES.glob("*.yaml"))


@pytest.mark.parametrize(
    "name", [pytest.param(f, id=f"{u} validates") for u, f in UPSTREAM_EXAMPLES.items()]
)
def test_fixture_is_valid(name: str) -> None:
    manifest, gates = _load(name)
    result = check_jobset(manifest, feature_gates=gates)
    assert result.errors == []
    assert result.jobset is not None
    assert JobSet.model_validate(manifest).to_manifest() == manifest


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(f, id=f"{f} needs its feature gate")
        for f in (
            "restartjob-action.yaml",
            "restartjobandignoremaxrestarts-action.yaml",
            "in-place-restart-main-container.yaml",
            "in-place-restart-sidecar.yaml",
        )
    ],
)
def test_gated_fixtures_are_rejected_without_their_gate(name: str) -> None:
    manifest, _ = _load(name)
    assert check_jobset(manifest).errors != []


def test_defaulting_fills_what_the_controller_relies_on() -> None:
    manifest, _ = _load("paralleljobs.yaml")
    js = check_jobset(manifest).jobset
    assert js is not None
    assert js.spec.network is not None and js.spec.network.enable_dns_hostnames is True
    assert js.spec.success_policy is not None
    for rjob in js.spec.replicated_jobs:
        assert rjob.template["spec"]["completionMode"] == c.COMPLETION_MODE_INDEXED
        assert rjob.template["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
