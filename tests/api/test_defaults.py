"""default(js): upstream's webhook defaulting (TestJobSetDefaulting) plus the CRD defaults."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.defaults import default
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset


def _defaulted(build: Callable[[JobSetBuilder], JobSetBuilder]) -> dict[str, Any]:
    builder = build(make_jobset("js", "ns").replicated_job("w", replicas=2))
    return default(builder.model()).to_manifest()


def _pod_spec(manifest: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]
    return dict(spec["template"]["spec"])


@pytest.mark.parametrize(
    ("build", "read", "want"),
    [
        pytest.param(
            lambda b: b,
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"],
            c.COMPLETION_MODE_INDEXED,
            id="completion mode defaults to Indexed when unset",
        ),
        pytest.param(
            lambda b: b.job_spec("w", completionMode="NonIndexed"),
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"]["completionMode"],
            "NonIndexed",
            id="completion mode NonIndexed is kept",
        ),
        pytest.param(
            lambda b: b,
            lambda m: m["spec"]["network"]["enableDNSHostnames"],
            True,
            id="enableDNSHostnames defaults to true when unset",
        ),
        pytest.param(
            lambda b: b.network(enable_dns_hostnames=False),
            lambda m: m["spec"]["network"]["enableDNSHostnames"],
            False,
            id="enableDNSHostnames false is kept",
        ),
        pytest.param(
            lambda b: b,
            lambda m: m["spec"]["network"]["publishNotReadyAddresses"],
            True,
            id="publishNotReadyAddresses defaults to true when unset",
        ),
        pytest.param(
            lambda b: b.network(publish_not_ready_addresses=False),
            lambda m: m["spec"]["network"]["publishNotReadyAddresses"],
            False,
            id="publishNotReadyAddresses false is kept",
        ),
        pytest.param(
            lambda b: b,
            lambda m: _pod_spec(m)["restartPolicy"],
            c.RESTART_POLICY_ON_FAILURE,
            id="pod restart policy defaults to OnFailure when unset",
        ),
        pytest.param(
            lambda b: b.pod_spec("w", restartPolicy="Never"),
            lambda m: _pod_spec(m)["restartPolicy"],
            "Never",
            id="pod restart policy Never is kept",
        ),
        pytest.param(
            lambda b: b,
            lambda m: m["spec"]["successPolicy"],
            {"operator": "All"},
            id="success policy defaults to All with no targets",
        ),
        pytest.param(
            lambda b: b.success_policy("Any"),
            lambda m: m["spec"]["successPolicy"],
            {"operator": "Any"},
            id="success policy operator set without targets is kept",
        ),
        pytest.param(
            lambda b: b,
            lambda m: m["spec"]["startupPolicy"],
            {"startupPolicyOrder": "AnyOrder"},
            id="startup policy defaults to AnyOrder",
        ),
        pytest.param(
            lambda b: b.startup_policy("InOrder"),
            lambda m: m["spec"]["startupPolicy"],
            {"startupPolicyOrder": "InOrder"},
            id="startup policy InOrder is kept",
        ),
        pytest.param(
            lambda b: b,
            lambda m: "managedBy" in m["spec"],
            False,
            id="managedBy is left unset",
        ),
        pytest.param(
            lambda b: b.managed_by("example.com/ctl"),
            lambda m: m["spec"]["managedBy"],
            "example.com/ctl",
            id="managedBy is preserved",
        ),
        pytest.param(
            lambda b: b.rule("FailJobSet"),
            lambda m: [r["name"] for r in m["spec"]["failurePolicy"]["rules"]],
            ["failurePolicyRule0"],
            id="one unnamed rule gets failurePolicyRule0",
        ),
        pytest.param(
            lambda b: b.rule("FailJobSet", "first").rule("RestartJobSet"),
            lambda m: [r["name"] for r in m["spec"]["failurePolicy"]["rules"]],
            ["first", "failurePolicyRule1"],
            id="second of two rules is named after its index",
        ),
        pytest.param(
            lambda b: b.failure_policy(max_restarts=1),
            lambda m: m["spec"]["failurePolicy"]["restartStrategy"],
            "Recreate",
            id="failure policy restart strategy defaults to Recreate",
        ),
        pytest.param(
            lambda b: b.volume_claim_policy("data"),
            lambda m: m["spec"]["volumeClaimPolicies"][0]["retentionPolicy"],
            {"whenDeleted": "Delete"},
            id="volume claim retention defaults to Delete",
        ),
        pytest.param(
            lambda b: b.volume_claim_policy("data", when_deleted="Retain"),
            lambda m: m["spec"]["volumeClaimPolicies"][0]["retentionPolicy"],
            {"whenDeleted": "Retain"},
            id="volume claim retention Retain is kept",
        ),
        pytest.param(
            lambda b: b.replicated_job("x", replicas=None),
            lambda m: (
                m["spec"]["replicatedJobs"][1]["replicas"],
                m["spec"]["replicatedJobs"][1]["groupName"],
            ),
            (1, "default"),
            id="CRD defaults replicas to 1 and groupName to default",
        ),
        pytest.param(
            lambda b: b,
            lambda m: "failurePolicy" in m["spec"],
            False,
            id="no failure policy is added",
        ),
    ],
)
def test_defaulting(
    build: Callable[[JobSetBuilder], JobSetBuilder],
    read: Callable[[dict[str, Any]], Any],
    want: Any,
) -> None:
    assert read(_defaulted(build)) == want


def test_default_is_idempotent_and_does_not_mutate_its_input() -> None:
    js = make_jobset("js").replicated_job("w").rule("FailJobSet").volume_claim_policy("d").model()
    before = js.to_manifest()
    once = default(js)
    assert js.to_manifest() == before
    assert default(once).to_manifest() == once.to_manifest()
