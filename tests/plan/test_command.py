"""`jobset-infra plan` on a small throwaway project: tree, YAML output, clear errors."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from jobset_infra.cli import main

PROGRAM = """
import pulumi, pulumi_kubernetes as k8s
cfg = pulumi.Config()
settings = cfg.require_object("settings")
if settings.get("replicas", 0) < 0:
    raise ValueError("settings.replicas: must be >= 0\\nsettings.name: required")
k8s.core.v1.Namespace("ns", metadata={"name": settings["name"]})
"""


def _project(tmp_path: Path, config: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: jobset-infra\nmain: stacks\n")
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "__main__.py").write_text(PROGRAM)
    (stacks / "Pulumi.demo.yaml").write_text(config)
    return tmp_path


def test_plan_prints_tree_and_writes_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config:\n  jobset-infra:settings:\n    name: team-a\n")
    out = tmp_path / "out"
    code = main(["plan", "--stack", "demo", "--project-dir", str(project), "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0
    assert "kubernetes:core/v1:Namespace" in captured.out
    assert "Planning stack demo" in captured.err
    [written] = sorted(out.glob("*.yaml"))
    assert yaml.safe_load(written.read_text())["metadata"]["name"] == "team-a"


def test_on_a_terminal_a_live_line_counts_the_resources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path, "config:\n  jobset-infra:settings:\n    name: team-a\n")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["plan", "--stack", "demo", "--project-dir", str(project)]) == 0
    err = capsys.readouterr().err
    assert "\r  1 resources..." in err
    assert "\r\033[K" in err  # the live line is cleared before the tree is printed


def test_a_second_plan_replaces_the_files_of_the_first_and_only_those(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    project = _project(tmp_path, "config:\n  jobset-infra:settings:\n    name: team-a\n")
    argv = ["plan", "--stack", "demo", "--project-dir", str(project), "--out", str(out)]
    assert main(argv) == 0
    (out / "999-my-notes.yaml").write_text("kind: Note\n")  # the user's, numbered like ours
    (out / "README.md").write_text("mine\n")
    (project / "stacks" / "Pulumi.demo.yaml").write_text(
        "config:\n  jobset-infra:settings:\n    name: team-b\n")
    assert main(argv) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.iterdir()) == [
        ".jobset-infra-plan", "000-namespace-team-b.yaml", "999-my-notes.yaml", "README.md"]
    assert json.loads((out / ".jobset-infra-plan").read_text())["files"] == [
        "000-namespace-team-b.yaml"]


def test_a_file_plan_would_write_but_did_not_write_before_is_refused_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "000-namespace-team-a.yaml").write_text("kind: Namespace  # hand-edited\n")
    project = _project(tmp_path, "config:\n  jobset-infra:settings:\n    name: team-a\n")
    argv = ["plan", "--stack", "demo", "--project-dir", str(project), "--out", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "000-namespace-team-a.yaml exist(s) but an earlier plan did not write them" in err
    assert (out / "000-namespace-team-a.yaml").read_text() == "kind: Namespace  # hand-edited\n"


def test_json_output_is_one_object_for_scripts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config:\n  jobset-infra:settings:\n    name: team-a\n")
    assert main(["plan", "--stack", "demo", "--project-dir", str(project), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is True and report["errors"] == []
    assert [(r["type"], r["name"]) for r in report["resources"]] == [
        ("kubernetes:core/v1:Namespace", "ns")]
    assert report["objects"][0]["metadata"]["name"] == "team-a"
    (tmp_path / "b").mkdir()
    broken = _project(tmp_path / "b", "config:\n  settings: {name: x, replicas: -1}\n")
    assert main(["plan", "--stack", "demo", "--project-dir", str(broken), "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "stack": "demo", "valid": False,
        "errors": ["settings.replicas: must be >= 0", "settings.name: required"]}


def test_program_errors_are_one_line_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config:\n  settings: {name: x, replicas: -1}\n")
    code = main(["plan", "--stack", "demo", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 1
    assert "error: settings.replicas: must be >= 0" in err
    assert "error: settings.name: required" in err
    assert "Traceback" not in err


def test_unknown_stack_lists_the_known_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config: {}\n")
    code = main(["plan", "--stack", "prod", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 1
    assert "no stack 'prod'" in err
    assert "(stacks: demo)" in err


def test_without_the_platform_extra_plan_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The base install is the controller's; `plan` needs jobset-infra[platform].
    project = _project(tmp_path, "config: {}\n")
    monkeypatch.setitem(sys.modules, "pulumi_gcp", None)  # as if it were not installed
    code = main(["plan", "--stack", "demo", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 1
    assert "pulumi_gcp missing" in err
    assert "pip install 'jobset-infra[platform]'" in err
    assert "Traceback" not in err


def test_broken_stack_yaml_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config: [unclosed\n")
    assert main(["plan", "--stack", "demo", "--project-dir", str(project)]) == 1
    assert "not valid YAML" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(b"config:\n  x: \xff\xfe\n", "not UTF-8 text", id="not UTF-8"),
        pytest.param(b"config: &a [*a]\n", "refers to a node that contains it",
                     id="a recursive alias"),
        pytest.param(b"a: 1\n---\nb: 2\n", "2 YAML documents", id="two documents"),
    ],
)
def test_an_unreadable_stack_file_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, expected: str
) -> None:
    project = _project(tmp_path, "")
    (project / "stacks" / "Pulumi.demo.yaml").write_bytes(content)
    assert main(["plan", "--stack", "demo", "--project-dir", str(project)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and expected in err and "Pulumi.demo.yaml" in err


# --- the real stacks ------------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]


def _admitted(obj: dict[str, object]) -> list[str]:
    """Check one written object independently of plan's own validation."""
    from jobset_infra.api import constants as k
    from jobset_infra.api.crd.schema import CrdSchema
    from jobset_infra.api.k8s_openapi import definition_for, validate_builtin
    from jobset_infra.api.kueue_crds import kueue_errors
    from jobset_infra.manifests.crd import jobset_crd

    api_version, kind = str(obj["apiVersion"]), str(obj["kind"])
    if definition_for(api_version, kind) is not None:
        return [str(e) for e in validate_builtin(obj)]
    if api_version == k.API_VERSION:
        return [str(e) for e in CrdSchema.from_crd(jobset_crd(), k.VERSION).admit(obj)[1]]
    assert api_version == k.KUEUE_API_VERSION, f"unexpected kind {api_version} {kind}"
    return kueue_errors(obj)


def test_v5e_multislice_plan_writes_only_objects_the_cluster_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["plan", "--stack", "v5e-multislice", "--project-dir", str(ROOT), "--out", str(out)]
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "every object validates" in captured.err
    objects = [yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml"))]
    assert sorted(p.name for p in out.iterdir() if not p.is_file()) == ["helm"]
    kinds = [obj["kind"] for obj in objects]
    for kind in ("CustomResourceDefinition", "Deployment", "ClusterQueue", "LocalQueue", "JobSet"):
        assert kind in kinds
    for obj in objects:
        assert _admitted(obj) == [], obj["kind"]
    assert main(["validate", str(out)]) == 0  # validate accepts everything plan writes
    [jobset] = [obj for obj in objects if obj["kind"] == "JobSet"]
    assert jobset["spec"]["replicatedJobs"][0]["replicas"] == 4  # whole numbers, not 4.0
    assert "gcp:container/nodePool:NodePool" in captured.out
    assert "machineType=ct5lp-hightpu-4t nodeCount=2 tpuTopology=2x4" in captured.out


def _copy_project(tmp_path: Path, stack_yaml: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "__main__.py").write_text((ROOT / "stacks" / "__main__.py").read_text())
    (stacks / "Pulumi.broken.yaml").write_text(stack_yaml)
    return tmp_path


def test_broken_stack_config_exits_1_with_one_line_per_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.v5e-multislice.yaml").read_text())
    config = stack["config"]
    config["jobset-infra:slices"]["topology"] = "3x3"
    config["jobset-infra:projct"] = "typo"
    del config["jobset-infra:zone"]
    project = _copy_project(tmp_path, yaml.safe_dump(stack))
    code = main(["plan", "--stack", "broken", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 1
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: jobset-infra:projct: unknown key; valid keys: platform, kubeconfig, context, "
        "nodes, kwok_pools, drain_jobsets, project, region, zone, cluster, slices, controller, "
        "kueue, placement, workload",
        "error: jobset-infra:zone: required on platform gke "
        "(pulumi config set jobset-infra:zone ...)",
    ]
    assert "Traceback" not in err


def test_semantic_config_problems_are_reported_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.v5e-multislice.yaml").read_text())
    config = stack["config"]
    config["jobset-infra:slices"]["topology"] = "3x3"
    config["jobset-infra:controller"]["image"] = "example.com/jobset-controller:latest"
    project = _copy_project(tmp_path, yaml.safe_dump(stack))
    assert main(["plan", "--stack", "broken", "--project-dir", str(project)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 2
    assert errors[0].startswith("error: jobset-infra:controller: image: ")
    assert errors[1].startswith("error: jobset-infra:slices.topology: topology '3x3'")


INVALID_OBJECT_PROGRAM = """
import pulumi_kubernetes as k8s
k8s.core.v1.Service("svc", metadata={"name": "svc", "namespace": "team"},
                    spec={"ports": [{"port": "eighty"}]})
"""


def test_objects_the_cluster_would_refuse_fail_the_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, "config: {}\n")
    (project / "stacks" / "__main__.py").write_text(INVALID_OBJECT_PROGRAM)
    code = main(["plan", "--stack", "demo", "--project-dir", str(project)])
    err = capsys.readouterr().err
    assert code == 1
    assert "error: Service team/svc: spec.ports[0].port:" in err



@pytest.mark.parametrize(
    ("out", "want"),
    [
        pytest.param("afile", "afile: is a file, not a folder", id="a file where the folder goes"),
        pytest.param("afile/plan", "afile is a file, not a folder", id="a file as a parent"),
    ],
)
def test_an_out_folder_that_cannot_be_written_is_refused_before_the_plan_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], out: str, want: str
) -> None:
    project = _project(tmp_path, "config:\n  jobset-infra:settings:\n    name: team-a\n")
    (tmp_path / "afile").write_text("in the way\n")
    argv = ["plan", "--stack", "demo", "--project-dir", str(project), "--out", str(tmp_path / out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"error: --out {tmp_path / out}: " in err and want in err
    assert "choose a folder you can write to" in err
    assert "Planning stack" not in err  # refused before the program ran


def test_checking_the_out_folder_creates_nothing(tmp_path: Path) -> None:
    from jobset_infra.plan.out_folder import check_out

    check_out(tmp_path / "new" / "plan")
    check_out(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_helm_releases_kubectl_would_leave_out_get_their_values_and_a_helm_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kubectl apply -f plan/` applies the objects; Kueue is a chart, so plan says so."""
    from jobset_infra.manifests.kueue_install import helm_values
    from jobset_infra.manifests.kueue_spec import parse_kueue_install

    out = tmp_path / "out"
    (out / "helm").mkdir(parents=True)
    (out / "helm" / "gone.values.yaml").write_text("{}\n")  # a release an older plan had
    (out / ".jobset-infra-plan").write_text(json.dumps({"files": ["helm/gone.values.yaml"]}))
    argv = ["plan", "--stack", "v5e-multislice", "--project-dir", str(ROOT), "--out", str(out)]
    assert main(argv) == 0
    err = capsys.readouterr().err
    values = out / "helm" / "kueue.values.yaml"
    assert sorted(p.name for p in (out / "helm").iterdir()) == ["kueue.values.yaml"]
    install = parse_kueue_install(version="0.19.2")
    assert yaml.safe_load(values.read_text()) == helm_values(install)
    assert "jobset.x-k8s.io/jobset" in values.read_text()  # Kueue manages JobSets
    [note] = [line for line in err.splitlines() if line.startswith("note: ")]
    assert f"`kubectl apply -f {out}` leaves out Helm release kueue" in note
    assert note.endswith(
        "helm install kueue oci://registry.k8s.io/kueue/charts/kueue --version 0.19.2 "
        f"--namespace kueue-system --create-namespace --values {values} --wait")
    # Nothing at the top that kubectl would refuse as a manifest.
    assert all("kind" in yaml.safe_load(p.read_text()) for p in out.glob("*.yaml"))


@pytest.mark.parametrize(("project_config", "stack_config", "namespace"), [
    pytest.param("    value: {name: from-project}\n", "config: {}\n", "from-project",
                 id="a project-level value reaches every stack"),
    pytest.param("    default: {name: declared}\n", "config: {}\n", "declared",
                 id="a declared default is used when the stack sets none"),
    pytest.param("    value: {name: from-project}\n",
                 "config:\n  jobset-infra:settings:\n    name: from-stack\n", "from-stack",
                 id="the stack file's own value wins"),
])
def test_plan_reads_pulumi_yaml_config_as_pulumi_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], project_config: str,
    stack_config: str, namespace: str
) -> None:
    """Project-level `config:` in Pulumi.yaml (what the `pulumi new` template keeps its
    structured values in) applies to every stack under the stack file's own values."""
    project = _project(tmp_path, stack_config)
    (project / "Pulumi.yaml").write_text(
        "name: jobset-infra\nmain: stacks\nconfig:\n  pulumi:tags:\n    value: {a: b}\n"
        "  jobset-infra:settings:\n" + project_config)
    code = main(["plan", "--stack", "demo", "--project-dir", str(project), "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["errors"]
    [namespace_object] = [r for r in report["resources"] if r["type"] ==
                          "kubernetes:core/v1:Namespace"]
    assert namespace_object["keyInputs"] == f"name={namespace}"


def test_the_live_cluster_names_plan_passes_are_the_ones_the_program_reads() -> None:
    from jobset_infra.plan import command
    from jobset_infra.stack import program

    assert (command.PLAN_KUBECONFIG_ENV, command.PLAN_CONTEXT_ENV) == (
        program.PLAN_KUBECONFIG_ENV, program.PLAN_CONTEXT_ENV)


@pytest.mark.parametrize(("argv", "said"), [
    pytest.param(["--context", "c"], "error: --context needs --kubeconfig", id="context alone"),
    pytest.param(["--kubeconfig", "/nonexistent/kubeconfig"],
                 "error: --kubeconfig /nonexistent/kubeconfig: no such file", id="no file"),
])
def test_a_live_check_without_a_kubeconfig_file_is_one_clear_error(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--stack", "v5e-multislice", "--project-dir", str(ROOT), *argv]) == 1
    assert said in capsys.readouterr().err


def test_with_a_kubeconfig_the_programs_pool_guard_reads_that_cluster_and_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GKE stack's pools change topology under a running JobSet: the plan fails as preview
    does. The program's own guard decides (its reads faked here; tests/e2e/test_slice_health.py
    reads a real cluster); it reads the file `--kubeconfig` names, never the stack's mock."""
    from datetime import UTC, datetime

    from jobset_infra.stack import program
    from jobset_infra.stack.pool_drain import LIVE
    from jobset_infra.stack.pool_guard import LiveView
    from jobset_infra.testing.jobs import make_job
    from jobset_infra.testing.jobsets import make_jobset
    from jobset_infra.tpu.node_pools import node_manifests, parse_nodes

    key = "cloud.google.com/gke-nodepool"
    jobset = make_jobset("train").uid("uid-train")
    job = make_job("train", rjob="slice", jobset_uid="uid-train").annotation(
        "alpha.jobset.sigs.k8s.io/exclusive-topology", key).node_selector(**{key: "v5e-1"})
    nodes = node_manifests(parse_nodes("v5e=v5e-2x4@ct5lp-hightpu-4t:4"),
                           datetime(2026, 1, 1, tzinfo=UTC))
    read: list[tuple[str, str | None]] = []

    async def fake_read(kubeconfig: str, context: str | None, _ns: str) -> LiveView:
        read.append((kubeconfig, context))
        return LiveView([jobset.obj()], [job.obj()], [], None, nodes)

    monkeypatch.setattr(program, "LIVE", replace(LIVE, read=fake_read))
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.v5e-multislice.yaml").read_text())
    stack["config"]["jobset-infra:slices"]["topology"] = "4x4"
    project = _copy_project(tmp_path, yaml.safe_dump(stack))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n# the live one\n")
    argv = ["plan", "--stack", "broken", "--project-dir", str(project), "--kubeconfig",
            str(kubeconfig), "--context", "live"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert read == [(kubeconfig.read_text(), "live")]
    assert "error: this update would kill 1 running JobSet(s)" in err, err
    assert "default/train on v5e-1 (replaced: " in err and "topology '2x4' -> '4x4'" in err
    assert main(["plan", "--stack", "broken", "--project-dir", str(project)]) == 0
    assert len(read) == 1  # without --kubeconfig, nothing is read
