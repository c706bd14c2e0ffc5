"""Headless Service (upstream TestCreateHeadlessSvcIfNecessary)."""

from __future__ import annotations

from typing import Any

import pytest

from jobset_infra.controller.core.headless_service import service_to_create
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset


def _js() -> JobSetBuilder:
    return make_jobset("test-js", "ns").uid("u1").replicated_job("a")


def _svc(name: str, publish: bool) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "test-js",
                    "uid": "u1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {"jobset.sigs.k8s.io/jobset-name": "test-js"},
            "publishNotReadyAddresses": publish,
        },
    }


@pytest.mark.parametrize(
    ("builder", "exists", "want"),
    [
        pytest.param(
            _js().network(True), True, None, id="headless service exists and should not be created"
        ),
        pytest.param(
            _js(),
            False,
            None,
            id="jobset created before webhook defaulting should not create headless service",
        ),
        pytest.param(_js().network(False), False, None, id="dns hostnames disabled"),
        pytest.param(
            _js().network(True),
            False,
            _svc("test-js", True),
            id="service does not exist and should be created, subdomain not set",
        ),
        pytest.param(
            _js().network(True, "sub"),
            False,
            _svc("sub", True),
            id="service does not exist and should be created, subdomain set",
        ),
        pytest.param(
            _js().network(True, None, False),
            False,
            _svc("test-js", False),
            id="service does not exist and should be created, publishNotReadyAddresses is false",
        ),
        pytest.param(
            _js().network(True, None, True),
            False,
            _svc("test-js", True),
            id="service does not exist and should be created, publishNotReadyAddresses is true",
        ),
    ],
)
def test_headless_service(
    builder: JobSetBuilder, exists: bool, want: dict[str, Any] | None
) -> None:
    assert service_to_create(builder.model(), exists) == want
