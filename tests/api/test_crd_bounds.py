"""The generated CRD carries upstream's maxItems/minimum/maxLength bounds, and ours where we
are stricter (docs/api.md lists both); the real API server needs the string bounds to accept
the CEL rules within its cost budget."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.api.crd.generate import generate_crd


def _schema(path: str) -> dict[str, Any]:
    node: dict[str, Any] = generate_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for part in path.split("."):
        items = part.endswith("[]")
        node = node["properties"][part.removesuffix("[]")]
        if items:
            node = node["items"]
    return node


UPSTREAM = [
    ("spec.volumeClaimPolicies", "maxItems", 50),
    ("spec.volumeClaimPolicies[].templates", "maxItems", 50),
    ("spec.replicatedJobs[].dependsOn", "maxItems", 5),
    ("spec.replicatedJobs[].replicas", "minimum", 0),
    ("spec.ttlSecondsAfterFinished", "minimum", 0),
    ("status.replicatedJobsStatus[].jobRestarts", "maxItems", 1024),
    ("status.replicatedJobsStatus[].jobRestartsCountTowardsMax", "maxItems", 1024),
    ("status.conditions[].message", "maxLength", 32768),
    ("status.conditions[].reason", "maxLength", 1024),
    ("status.conditions[].type", "maxLength", 316),
]
STRICTER = [
    ("spec.replicatedJobs[].name", "maxLength", 63),
    ("spec.replicatedJobs[].groupName", "maxLength", 63),
    ("spec.coordinator.replicatedJob", "maxLength", 63),
    ("spec.network.subdomain", "maxLength", 63),
    ("spec.managedBy", "maxLength", 63),
    ("spec.failurePolicy.rules[].name", "maxLength", 128),
    ("spec.replicatedJobs[].replicas", "maximum", 2**31 - 1),
    ("spec.failurePolicy.maxRestarts", "maximum", 2**31 - 1),
    ("spec.ttlSecondsAfterFinished", "maximum", 2**31 - 1),
]


@pytest.mark.parametrize(
    ("path", "keyword", "bound"),
    [pytest.param(*row, id=f"upstream: {row[0]} {row[1]} {row[2]}") for row in UPSTREAM]
    + [pytest.param(*row, id=f"stricter: {row[0]} {row[1]} {row[2]}") for row in STRICTER],
)
def test_the_crd_has_the_bound(path: str, keyword: str, bound: int) -> None:
    assert _schema(path)[keyword] == bound
