"""Real tier: Kueue's manager (sigs.k8s.io/kueue at the pin of tools/kueue) runs unpatched
against the sim, admits a JobSet, and its Events (client-go's events.k8s.io/v1 POSTs, always
protobuf) are stored; its secured metrics endpoint (controller-runtime's authentication and
authorization filter) authorizes scrapes with TokenReview and SubjectAccessReview on the sim.

The configuration changes only what running out of cluster needs, none of it for the sim:
- `internalCertManagement.enable: false`: the in-cluster cert rotator waits forever for a
  Secret mounted by a kubelet; Kueue then reads its metrics certificate from the hard-coded
  /etc/kueue/metrics/certs, so the manager runs in its own mount namespace with an overlay on
  /etc holding a throwaway pair (`unshare`);
- the webhook server (it cannot be turned off), metrics and probes on loopback ports; its
  leader-election Lease in kueue-system (out of cluster there is no namespace to default to);
- `VisibilityOnDemand: false`: that server is an aggregated API reached through the cluster's
  aggregator, with certificates at the hard-coded /visibility;
- `integrations.frameworks: [jobset.x-k8s.io/jobset]`: the kind under test.
WatchList, server-side apply of Workload status, WaitForPodsReady and every other gate keep
their defaults. Kueue's webhooks are never called (the sim has no admission webhooks), so the
JobSet is created as Kueue's webhook would leave it: suspended, with the queue-name label.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from jobset_infra.sim.apiserver.server import SimThread
from tests.conformance.managers import (
    Api,
    Manager,
    ModuleZip,
    binary_or_skip,
    certificate_folder,
    free_port,
    running,
    scrape,
    wait_for,
)
from tests.conformance.runner import Target
from tests.conformance.servers import install_crd

pytestmark = [pytest.mark.real, pytest.mark.slow]
TOKEN = "kueue-on-sim-admin"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@dataclass
class KueueOnSim:
    api: Api
    manager: Manager
    metrics_port: int


def _configuration(certs: Path, metrics_port: int) -> dict[str, object]:
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "namespace": "kueue-system",
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": free_port(), "certDir": str(certs)},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{free_port()}"},
        "leaderElection": {"leaderElect": True, "resourceNamespace": "kueue-system"},
        "integrations": {"frameworks": ["jobset.x-k8s.io/jobset"]},
        "featureGates": {"VisibilityOnDemand": False},
    }


def _in_mount_namespace(command: list[str], certs: Path, folder: Path) -> list[str]:
    """`command` run where /etc/kueue/metrics/certs holds `certs` (an overlay on /etc, in a
    mount namespace of its own: nothing outside the process sees it)."""
    unshare = binary_or_skip("unshare")
    upper, work = folder / "etc-upper", folder / "etc-work"
    upper.mkdir()
    work.mkdir()
    script = (f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc"
              f" && mkdir -p /etc/kueue/metrics/certs && cp {certs}/tls.crt {certs}/tls.key "
              '/etc/kueue/metrics/certs/ && exec "$@"')
    namespaces = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
    return [str(unshare), *namespaces, "--propagation", "private", "sh", "-c", script, "kueue",
            *command]


@pytest.fixture(scope="module")
def kueue(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KueueOnSim]:
    """One Kueue on one sim for the module (installing Kueue's CRDs takes most of its ~10 s)."""
    tmp_path = tmp_path_factory.mktemp("kueue")
    binary = binary_or_skip("kueue")
    module = ModuleZip.pinned("kueue", "sigs.k8s.io/kueue")
    with SimThread(token=TOKEN, tls=True) as sim:
        assert sim.sim is not None and sim.sim.ca_file is not None
        api = Api(Target(sim.url, ssl.create_default_context(cafile=str(sim.sim.ca_file)),
                         TOKEN))
        install_crd(api.target)
        for crd in module.yaml_documents("config/components/crd/bases"):
            api.create(CRDS, crd)
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "kueue-system"}})
        certs = certificate_folder(tmp_path / "certs")
        metrics_port = free_port()
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(_configuration(certs, metrics_port)))
        kubeconfig = sim.kubeconfig(tmp_path / "kubeconfig")
        command = _in_mount_namespace([str(binary), f"--config={config}",
                                       f"--kubeconfig={kubeconfig}"], certs, tmp_path)
        with running(command, tmp_path / "kueue.log") as manager:
            yield KueueOnSim(api, manager, metrics_port)


def _queues(api: Api) -> None:
    api.create(f"{KUEUE}/resourceflavors", {"apiVersion": "kueue.x-k8s.io/v1beta2",
                                            "kind": "ResourceFlavor",
                                            "metadata": {"name": "default-flavor"}})
    api.create(f"{KUEUE}/clusterqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "team"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory"],
            "flavors": [{"name": "default-flavor", "resources": [
                {"name": "cpu", "nominalQuota": "8"}, {"name": "memory", "nominalQuota": "8Gi"}]}],
        }]}})
    api.create(f"{KUEUE}/namespaces/default/localqueues", {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "team"}, "spec": {"clusterQueue": "team"}})


def _jobset(name: str) -> dict[str, object]:
    pod = {"restartPolicy": "Never", "containers": [{
        "name": "trainer", "image": "busybox:1.36",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "team"}},
            "spec": {"suspend": True, "replicatedJobs": [{
                "name": "workers", "replicas": 2,
                "template": {"spec": {"parallelism": 1, "completions": 1,
                                      "template": {"spec": pod}}}}]}}


def _admitted(api: Api) -> bool:
    workloads = api.items(f"{KUEUE}/namespaces/default/workloads")
    return any(c.get("type") == "Admitted" and c.get("status") == "True"
               for w in workloads for c in (w.get("status") or {}).get("conditions") or ())


def test_kueue_admits_a_jobset_on_the_sim_and_its_events_are_stored(kueue: KueueOnSim) -> None:
    api = kueue.api
    _queues(api)
    api.create(JOBSETS, _jobset("trainer"))
    wait_for("the Workload is admitted", lambda: _admitted(api), kueue.manager)
    wait_for("the JobSet is unsuspended",
             lambda: api.get(f"{JOBSETS}/trainer")["spec"].get("suspend") is False,
             kueue.manager)

    def events() -> set[tuple[str, str]]:
        return {(str(e.get("reportingController")), str(e.get("reason")))
                for e in api.items("/apis/events.k8s.io/v1/namespaces/default/events")}

    want = {("kueue-admission", "QuotaReserved"), ("kueue-admission", "Admitted"),
            ("jobset.x-k8s.io/jobset-kueue-controller", "CreatedWorkload"),
            ("jobset.x-k8s.io/jobset-kueue-controller", "Started")}
    wait_for("Kueue's Events are stored", lambda: want <= events(), kueue.manager)
    assert api.items("/apis/coordination.k8s.io/v1/namespaces/kueue-system/leases"), (
        "Kueue holds its leader-election Lease")


def _account_token(api: Api, name: str) -> str:
    api.create("/api/v1/namespaces/default/serviceaccounts",
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    answer = api.create(f"/api/v1/namespaces/default/serviceaccounts/{name}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    return str(answer["status"]["token"])


def test_kueue_metrics_are_authorized_by_token_and_access_reviews_on_the_sim(
        kueue: KueueOnSim) -> None:
    api = kueue.api
    reader, stranger = _account_token(api, "prometheus"), _account_token(api, "stranger")
    api.create(f"{RBAC}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "metrics-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    api.create(f"{RBAC}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "prometheus-metrics"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}]})
    wait_for("the metrics server answers", lambda: scrape(kueue.metrics_port, TOKEN) == 200,
             kueue.manager)
    assert scrape(kueue.metrics_port, reader) == 200
    assert scrape(kueue.metrics_port, stranger) == 403
    # a TokenReview error is "Authentication failed" (500) to controller-runtime's filter, as
    # kube-apiserver's "invalid bearer token" is
    assert scrape(kueue.metrics_port, "forged") == 500
