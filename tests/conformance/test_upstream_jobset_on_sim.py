"""Real tier: upstream JobSet's manager (sigs.k8s.io/jobset at the pin of tools/jobset) runs
unpatched against the sim with its own CRD (read from the module zip) and creates a JobSet's
Jobs and headless Service; controller-runtime picks protobuf for both, and its leader
election writes a Lease.

Configuration: only what running out of cluster needs. `internalCertManagement.enable: false`
(the in-cluster rotator waits for a mounted Secret), the webhook server (it cannot be turned
off) on a loopback port with a throwaway certificate, metrics and probes on loopback, and the
leader-election Lease in jobset-system.

The sim has no admission webhooks, so upstream's mutating JobSet webhook is not called on
create as a cluster with its MutatingWebhookConfiguration would call it, and upstream's
controller needs what it sets (`spec.network`, for one: it dereferences it). The test asks
upstream's own webhook, served on loopback, for its defaulting patch, applies it, and creates
the JobSet so defaulted: what an API server with the webhook registered would have stored.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.sim.apiserver.patch import json_patch
from jobset_infra.sim.apiserver.server import SimThread
from tests.conformance.managers import (
    Api,
    Manager,
    ModuleZip,
    binary_or_skip,
    certificate_folder,
    free_port,
    running,
    wait_for,
)
from tests.conformance.runner import Target

pytestmark = [pytest.mark.real, pytest.mark.slow]
TOKEN = "upstream-jobset-on-sim-admin"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
MUTATE = "/mutate-jobset-x-k8s-io-v1alpha2-jobset"


@dataclass
class UpstreamOnSim:
    api: Api
    manager: Manager
    webhook_port: int
    certificate: Path


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[UpstreamOnSim]:
    binary = binary_or_skip("jobset-manager")
    module = ModuleZip.pinned("jobset", "sigs.k8s.io/jobset")
    with SimThread(token=TOKEN, tls=True) as sim:
        assert sim.sim is not None and sim.sim.ca_file is not None
        api = Api(Target(sim.url, ssl.create_default_context(cafile=str(sim.sim.ca_file)),
                         TOKEN))
        for crd in module.yaml_documents("config/components/crd/bases"):
            api.create(CRDS, crd)
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "jobset-system"}})
        certs = certificate_folder(tmp_path / "certs")
        webhook_port = free_port()
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
            "internalCertManagement": {"enable": False},
            "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
            "metrics": {"bindAddress": f"127.0.0.1:{free_port()}"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{free_port()}"},
            "leaderElection": {"leaderElect": True, "resourceNamespace": "jobset-system"},
        }))
        kubeconfig = sim.kubeconfig(tmp_path / "kubeconfig")
        command = [str(binary), f"--config={config}", f"--kubeconfig={kubeconfig}",
                   "--zap-devel=false"]
        with running(command, tmp_path / "jobset-manager.log") as manager:
            yield UpstreamOnSim(api, manager, webhook_port, certs / "tls.crt")


def _admission_review(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "jobset-on-sim", "operation": "CREATE", "namespace": "default",
        "name": obj["metadata"]["name"], "userInfo": {"username": "jobset-infra-admin"},
        "kind": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "kind": "JobSet"},
        "resource": {"group": "jobset.x-k8s.io", "version": "v1alpha2", "resource": "jobsets"},
        "object": obj}}


def _defaulted(upstream: UpstreamOnSim, obj: dict[str, Any]) -> dict[str, Any] | None:
    """`obj` as upstream's mutating webhook patches it (None until the webhook serves)."""
    context = ssl.create_default_context(cafile=str(upstream.certificate))
    request = urllib.request.Request(
        f"https://127.0.0.1:{upstream.webhook_port}{MUTATE}",
        data=json.dumps(_admission_review(obj)).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=5) as answer:
            response = json.load(answer)["response"]
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None
    assert response["allowed"] is True, response
    patch = json.loads(base64.b64decode(response.get("patch") or "W10="))
    patched: dict[str, Any] = json_patch(obj, patch)
    return patched


def _jobset() -> dict[str, Any]:
    pod = {"containers": [{"name": "trainer", "image": "busybox:1.36"}]}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "trainer", "namespace": "default"},
            "spec": {"replicatedJobs": [{
                "name": "workers", "replicas": 2,
                "template": {"spec": {"parallelism": 2, "completions": 2,
                                      "template": {"spec": pod}}}}]}}


def test_upstream_manager_creates_its_jobs_and_headless_service_on_the_sim(
        upstream: UpstreamOnSim) -> None:
    api = upstream.api
    jobset = wait_for("upstream's webhook serves its defaulting patch",
                      lambda: _defaulted(upstream, _jobset()), upstream.manager)
    assert jobset["spec"]["network"]["enableDNSHostnames"] is True  # the webhook's default
    api.create(JOBSETS, jobset)

    def jobs() -> list[dict[str, Any]]:
        return api.items("/apis/batch/v1/namespaces/default/jobs")

    created = wait_for("upstream's manager creates both Jobs",
                       lambda: (found := jobs()) and len(found) == 2 and found,
                       upstream.manager)
    assert sorted(j["metadata"]["name"] for j in created) == [
        "trainer-workers-0", "trainer-workers-1"]
    owner = created[0]["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("JobSet", "trainer", True)
    service = wait_for("upstream's manager creates the headless Service", lambda: next(
        (s for s in api.items("/api/v1/namespaces/default/services")
         if s["metadata"]["name"] == "trainer"), None), upstream.manager)
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    wait_for("upstream's manager writes the JobSet's status",
             lambda: (api.get(f"{JOBSETS}/trainer").get("status") or {}).get(
                 "replicatedJobsStatus"), upstream.manager)
    assert api.items("/apis/coordination.k8s.io/v1/namespaces/jobset-system/leases")
