"""The pure parts of the real-cluster benchmark: audit parsing, upstream's files, the report.

No cluster here: upstream's module folder is replaced by a small one of our own making, shaped
like the parts `benchmarks.real.upstream` reads (kustomization with JSON-patch replaces).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
import yaml

from benchmarks.real import audit, report, upstream
from benchmarks.real.observe import attempt_of, has_affinity
from benchmarks.real.scenarios import Phase, Run
from benchmarks.real.testbed import _established_since, pick
from benchmarks.real.workloads import cpu_nodes, multislice_jobset, scale_jobset
from jobset_infra.api.models import JobSet
from jobset_infra.cluster.layout import Tuning, scheduler_config
from jobset_infra.cluster.pki import SCHEDULER


def audit_line(user: str, verb: str, resource: str, code: int = 201, *,
               subresource: str | None = None, at: str = "2026-12-01T10:00:00.250000Z") -> str:
    ref = {"resource": resource, **({"subresource": subresource} if subresource else {})}
    return json.dumps({"kind": "Event", "verb": verb, "user": {"username": user},
                       "objectRef": ref, "responseStatus": {"code": code},
                       "requestReceivedTimestamp": at})


def test_an_audit_line_becomes_a_request_with_its_refusal_in_the_key() -> None:
    ok = audit.parse_line(audit_line("u", "create", "jobs"))
    refused = audit.parse_line(audit_line("u", "update", "jobsets", 409, subresource="status"))
    assert ok is not None and refused is not None
    assert (ok.key, ok.write) == ("create jobs", True)
    assert refused.key == "update jobsets/status (409)"
    assert ok.at == pytest.approx(1796119200.25)
    assert audit.parse_line("not json") is None


def test_the_audit_log_is_read_incrementally_across_a_partial_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    first, second = audit_line("a", "create", "jobs"), audit_line("b", "list", "jobs", 200)
    path.write_text(first + "\n" + second[:20])
    log = audit.AuditLog(path)
    assert [r.user for r in log.read()] == ["a"]
    with path.open("a") as f:
        f.write(second[20:] + "\n")
    assert [r.verb for r in log.read()] == ["list"]
    assert log.last_write("a") == pytest.approx(log.requests[0].at)
    assert log.last_write("b") is None  # a list is not a write
    assert audit.writes(log.requests) == {"create jobs": 1}


def test_the_audit_policy_records_only_the_named_users() -> None:
    rules = audit.policy(["x", "y"])["rules"]
    assert rules == [{"level": "Metadata", "users": ["x", "y"]}, {"level": "None"}]


def fake_module(folder: Path) -> Path:
    hooks = folder / upstream.WEBHOOK_DIR
    (hooks / "patches").mkdir(parents=True)
    (folder / upstream.CRD_FILE).parent.mkdir(parents=True)
    (folder / upstream.CRD_FILE).write_text("kind: CustomResourceDefinition\n")
    base = [{"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
             "metadata": {"name": name},
             "webhooks": [{"name": f"{name}-a", "clientConfig": {"service": {
                 "name": "svc", "namespace": "system", "path": f"/{name}/a"}}},
                          {"name": f"{name}-b", "clientConfig": {"service": {
                              "name": "svc", "namespace": "system", "path": f"/{name}/b"}}}]}
            for kind, name in (("MutatingWebhookConfiguration", "m"),
                               ("ValidatingWebhookConfiguration", "v"))]
    (hooks / "manifests.yaml").write_text(yaml.safe_dump_all(base))
    replaced = {"name": "m-b", "objectSelector": {"matchLabels": {"k": "v"}},
                "clientConfig": {"service": {"name": "svc", "path": "/m/b"}}}
    (hooks / "patches" / "m.yaml").write_text(yaml.safe_dump(
        [{"op": "replace", "path": "/webhooks/1", "value": replaced}]))
    (hooks / "kustomization.yaml").write_text(yaml.safe_dump({"patches": [
        {"path": "patches/m.yaml", "target": {"kind": "MutatingWebhookConfiguration",
                                              "name": "m"}}]}))
    return folder


def test_upstream_webhooks_point_at_loopback_with_the_patches_applied(tmp_path: Path) -> None:
    docs = upstream.webhook_configurations(fake_module(tmp_path), 9443, b"PEM")
    mutating, validating = docs
    assert mutating["metadata"]["name"] == upstream.NAME_PREFIX + "m"
    assert mutating["webhooks"][1]["objectSelector"] == {"matchLabels": {"k": "v"}}
    assert "objectSelector" not in validating["webhooks"][1]
    for doc in docs:
        for hook in doc["webhooks"]:
            assert hook["clientConfig"]["url"].startswith("https://127.0.0.1:9443/")
            assert base64.b64decode(hook["clientConfig"]["caBundle"]) == b"PEM"
            assert "service" not in hook["clientConfig"]


def test_a_json_patch_op_other_than_replace_is_refused() -> None:
    with pytest.raises(upstream.UpstreamError, match="only replace"):
        upstream.apply_replace({"a": [1]}, [{"op": "add", "path": "/a/1", "value": 2}])


def test_the_pinned_upstream_version_comes_from_the_tools_group(tmp_path: Path) -> None:
    go_mod = tmp_path / "go.mod"
    go_mod.write_text("module x\n\nrequire (\n\tsigs.k8s.io/jobset v0.12.0\n)\n")
    assert upstream.pinned_version(go_mod) == "v0.12.0"
    go_mod.write_text("module x\n")
    with pytest.raises(upstream.UpstreamError, match="does not require"):
        upstream.pinned_version(go_mod)


def test_affinity_counts_only_inter_pod_terms() -> None:
    assert has_affinity({"spec": {"affinity": {"podAntiAffinity": {"x": 1}}}})
    assert not has_affinity({"spec": {"affinity": {"nodeAffinity": {"x": 1}}}})
    assert not has_affinity({"spec": {}})
    assert attempt_of({"metadata": {"labels": {
        "jobset.sigs.k8s.io/restart-attempt": "2"}}}) == "2"


def test_the_workloads_are_valid_jobsets_both_controllers_accept() -> None:
    multislice = JobSet.model_validate(multislice_jobset("ns", 4))
    rjob = multislice.spec.replicated_jobs[0]
    assert rjob.replicas == 4
    assert rjob.template["spec"]["parallelism"] == 4
    assert rjob.template["spec"]["backoffLimit"] == 0
    assert JobSet.model_validate(scale_jobset("ns", 16)).spec.replicated_jobs[0].replicas == 16
    assert cpu_nodes(2048) == "cpu:21"


def test_tuning_reaches_the_controller_manager_scheduler_and_apiserver() -> None:
    from jobset_infra.cluster.binaries import Tools
    from jobset_infra.cluster.layout import Layout, Ports, plan_processes

    layout = Layout(Path("/tmp/x"), Ports(1, 2, 3, 4, 5, 6), "t")
    tools = Tools(*(Path(f"/bin/{n}") for n in Tools.names()))
    tuning = Tuning(component_qps=9, component_burst=10, concurrent_job_syncs=3,
                    apiserver_args=("--audit-log-path=/a",))
    _, apiserver, kcm, *_ = plan_processes(layout, tools, tuning)
    assert apiserver.argv[-1] == "--audit-log-path=/a"
    assert {"--kube-api-qps=9", "--kube-api-burst=10", "--concurrent-job-syncs=3"} <= set(
        kcm.argv)
    assert scheduler_config(layout, tuning)["clientConnection"] == {
        "kubeconfig": str(layout.component_kubeconfig(SCHEDULER)), "qps": 9, "burst": 10}
    default_kcm = plan_processes(layout, tools)[2]
    assert "--kube-api-qps=500" in default_kcm.argv


def test_metric_samples_are_summed_by_name_and_labels() -> None:
    text = ('# TYPE a counter\na_total{result="ok"} 2\na_total{result="no"} 3\n'
            'b_sum 1.5\nb_count 4\nother 9\n')
    wanted = (("ok", "a", {"result": "ok"}), ("all", "a", {}), ("s", "b_sum", {}),
              ("n", "b_count", {}))
    assert pick(text, wanted) == {"ok": 2, "all": 5, "s": 1.5, "n": 4}


def phase(seconds: float) -> Phase:
    return Phase(jobs_s=seconds, running_s=2 * seconds, ready_s=2 * seconds,
                 settled_s=2 * seconds, writes=10, write_kinds={"create jobs": 10}, reads=0)


def test_ratios_are_taken_within_each_round_pair() -> None:
    runs = [Run("scale", who, 16, "500/500", rnd, start=phase(s))
            for who, rnd, s in (("ours", 0, 1.0), ("upstream", 0, 2.0), ("ours", 1, 3.0),
                                ("upstream", 1, 3.0), ("ours", 2, 9.0))]  # round 2 unpaired
    assert report.ratios(runs, lambda r: r.start.jobs_s if r.start else None) == [0.5, 1.0]
    text = "\n".join(report.targets(runs))
    assert "N=16 at 500/500, start, Jobs: 0.75 — met" in text
    tables = "\n".join(report.scale_tables(runs))
    assert "| 16 | 500/500 | 3.00 (1.00-9.00) | 2.50 (2.00-3.00) | 0.75 (0.50-1.00) |" in tables


def test_runs_of_different_cases_in_one_round_pair_within_their_own_case() -> None:
    runs = [Run(case, who, size, "500/500", 0, start=phase(s))
            for case, size, who, s in (("scale", 16, "ours", 1.0), ("scale", 16, "upstream", 4.0),
                                       ("placement", 16, "ours", 3.0),
                                       ("placement", 16, "upstream", 3.0))]
    # Both pairs of round 0 count, each against its own case's upstream run.
    assert sorted(report.ratios(runs, lambda r: r.start.jobs_s if r.start else None)) == [
        0.25, 1.0]


def test_a_milestone_a_run_gave_up_on_is_shown_as_a_bound() -> None:
    slow = phase(100.0)
    slow.missed = ["running_s"]
    runs = [Run("placement", "ours", 256, "500/500", 0, start=phase(10.0)),
            Run("placement", "upstream", 256, "500/500", 0, start=slow)]
    ours, theirs, ratio = report.side_by_side(runs, report.PhaseMetric("start", "running_s"))
    assert (ours, theirs, ratio) == ("20.00", "≥200.00", "≤0.10")
    # a milestone reached before the give-up is exact
    assert report.side_by_side(runs, report.PhaseMetric("start", "jobs_s"))[1] == "100.00"


def observed(kind: str, namespace: str, name: str, attempt: str = "0",
             **status: object) -> dict[str, object]:
    return {"kind": kind, "metadata": {
        "namespace": namespace, "name": name,
        "labels": {"jobset.sigs.k8s.io/restart-attempt": attempt}}, "status": dict(status)}


async def test_milestones_count_jobs_and_pods_per_namespace_and_attempt() -> None:
    from benchmarks.real.observe import Observer

    obs = Observer(None, ["a", "b"])  # type: ignore[arg-type]  # handlers only, no watches
    obs.expect("jobs:0", "jobs", "0", 2)
    obs.expect("running:0", "running", "0", 2)
    for namespace in ("a", "b"):  # the same Job name in two namespaces is two Jobs
        obs._job("ADDED", observed("Job", namespace, "ms-slice-0"))
    obs._job("ADDED", observed("Job", "a", "ms-slice-0", attempt="1"))
    assert "jobs:0" in obs.when and obs.count("jobs", "1") == 1
    obs._pod("ADDED", observed("Pod", "a", "p", phase="Running"))
    obs._pod("MODIFIED", observed("Pod", "a", "p", phase="Failed"))  # no longer running
    obs._pod("ADDED", observed("Pod", "b", "p", phase="Running"))
    assert "running:0" not in obs.when and obs.count("running", "0") == 1
    obs._pod("ADDED", observed("Pod", "a", "q", phase="Running"))
    assert "running:0" in obs.when
    assert obs.attempt("0").pods["a/p"].running is not None


def test_a_printed_run_reads_back_as_the_same_run() -> None:
    # --report-from rebuilds an interrupted benchmark's report from the lines it printed.
    run = Run("placement", "ours", 64, "500/500", 2, start=phase(3.0), recovery=phase(1.5),
              quiet_writes=1, load=(1.0, 2.0, 3.0), scheduler={"scheduled": 256.0})
    line = json.dumps({"bench": "real", **run.as_dict()})
    assert Run.from_dict(json.loads(line)) == run


def crd(group: str, *conditions: tuple[str, str, str]) -> dict[str, object]:
    return {"spec": {"group": group}, "status": {"conditions": [
        {"type": t, "status": s, "lastTransitionTime": at} for t, s, at in conditions]}}


@pytest.mark.parametrize(("items", "expected"), [
    pytest.param([], None, id="no JobSet CRD yet: not established"),
    pytest.param([crd("jobset.x-k8s.io", ("NamesAccepted", "True", "2026-12-01T10:00:00Z"))],
                 None, id="names accepted but not established: keep waiting"),
    pytest.param([crd("jobset.x-k8s.io", ("Established", "True", "2026-12-01T10:00:01Z")),
                  crd("kueue.x-k8s.io", ("Established", "True", "2026-12-01T10:00:09Z"))],
                 1796119201.0, id="another group's CRD does not count"),
    pytest.param([crd("jobset.x-k8s.io", ("Established", "True", "2026-12-01T10:00:01Z")),
                  crd("jobset.x-k8s.io", ("Established", "True", "2026-12-01T10:00:03Z"))],
                 1796119203.0, id="the latest of the group's transitions is the one to wait on"),
    pytest.param([crd("jobset.x-k8s.io", ("Established", "True", "2026-12-01T10:00:01Z")),
                  crd("jobset.x-k8s.io", ("Established", "False", "2026-12-01T10:00:03Z"))],
                 None, id="one CRD of the group not established: keep waiting"),
])
def test_the_creation_hold_is_timed_from_the_groups_latest_established_transition(
        items: list[dict[str, object]], expected: float | None) -> None:
    assert _established_since({"items": items}) == expected


@pytest.mark.parametrize(("source", "says", "never"), [
    pytest.param(None, "Measured ", "Reported ", id="a measuring run says when and how long"),
    pytest.param(Path("runs/x.jsonl"), "from runs measured earlier (2 runs, 7 s of them)",
                 "Measured ", id="a report of earlier runs does not claim it measured them now"),
])
def test_the_header_says_whether_the_runs_were_measured_now(
        source: Path | None, says: str, never: str) -> None:
    from benchmarks.real.run import Results

    runs = [Run("scale", who, 16, "500/500", 0, start=phase(1.0), wall_s=3.5,
                load=(1.0, 1.0, 1.0)) for who in ("ours", "upstream")]
    results = Results(runs=runs, load=[(1.0, 1.0, 1.0)], seconds=7.0, source=source)
    text = report.markdown(results, command="cmd", quick=False, machine="m", plot="p.png")
    assert says in text and never not in text


def test_a_missing_matplotlib_skips_the_plot_and_says_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.real import plot, run

    def without_matplotlib(runs: object, png: Path) -> None:
        raise ModuleNotFoundError("No module named 'matplotlib'", name="matplotlib")

    monkeypatch.setattr(plot, "plot", without_matplotlib)
    said = run._plotted([], tmp_path / "real.png")
    assert said.startswith("plot skipped: matplotlib is not installed") and "[bench]" in said
