"""On a real API server, a controller started with a brand-new JobSet CRD is not ready until the
server takes a JobSet create (marker envtest).

The window it closes is the real server's: a new CRD's kind answers lists first and creates a
few seconds later (the MutatingAdmissionPolicy plugin refuses them with 503 "Resource kind ...
not found" until its type registry has polled the OpenAPI). A JobSet created the moment the
controller reports ready, as `pulumi up` does once JobSetSystem's Deployment is Available, must
be taken. Without the readiness gate the controller was ready as soon as its caches listed,
inside that window.
"""

from __future__ import annotations

import asyncio
import time

import pytest
import yaml

from jobset_infra.api.defaulting_policy import defaulting_policy, defaulting_policy_binding
from jobset_infra.cluster import install
from jobset_infra.cluster.local import RunningCluster
from jobset_infra.controller.runtime.manager import run_controller
from jobset_infra.controller.runtime.resources import JOBSETS
from jobset_infra.testing.jobsets import make_jobset
from tests.integration.conftest import CRD_FILE, fast_config, manifest
from tests.realcluster import real_cluster

pytestmark = [pytest.mark.envtest, pytest.mark.slow, pytest.mark.timeout(180)]


def test_a_jobset_created_when_the_controller_is_ready_is_taken_on_a_new_crd() -> None:
    with real_cluster(apiserver_only=True) as cluster:
        asyncio.run(_ready_then_create(cluster))


async def _ready_then_create(cluster: RunningCluster) -> None:
    # No retry of a 503, as the Pulumi Kubernetes provider does not retry one.
    async with cluster.client(max_retries=0) as api:
        # The CRD and its defaulting policy applied, not waited for: as `pulumi up` sends them.
        for manifest_ in (yaml.safe_load(CRD_FILE.read_text()), defaulting_policy(),
                          defaulting_policy_binding()):
            await install.apply(api, manifest_)
        started = time.monotonic()
        config = fast_config()  # cluster-wide, probing in default as a JobSetSystem install
        async with run_controller(config, access=cluster.access()) as ctl:
            while not ctl.readiness().ok:
                await asyncio.sleep(0.02)
            ready = time.monotonic() - started
            body = manifest(make_jobset("first").replicated_job("w", replicas=1))
            body["metadata"]["namespace"] = "default"
            created = await api.create(JOBSETS, body, "default")
    assert created["metadata"]["name"] == "first"
    print(f"ready {ready:.1f} s after the CRD was applied; the create was taken")
