"""The real Pulumi engine's surroundings: its environment, previews parsed, project copies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from jobset_infra.cluster.engine import (
    Engine,
    EngineError,
    Run,
    engine_env,
    parse_preview,
    parse_update,
    project_copy,
)

ROOT = Path(__file__).resolve().parents[2]
STACK = "urn:pulumi:local::jobset-infra::pulumi:pulumi:Stack::jobset-infra-local"
COMPONENT = "urn:pulumi:local::jobset-infra::jobset-infra:index:JobSet::hello-tpu"
JOBSET = "urn:pulumi:local::jobset-infra::jobset-infra:index:JobSet$kubernetes:jobset.x-k8s.io/v1alpha2:JobSet::hello-tpu"  # noqa: E501


def _tools(tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes"):
        (tools / name).write_text("#!/bin/sh\n")
        (tools / name).chmod(0o755)
    return tools


def test_the_engine_takes_plugins_from_the_tools_folder_and_never_downloads(
    tmp_path: Path
) -> None:
    tools = _tools(tmp_path)
    env = engine_env(tmp_path / "state", {"JOBSET_INFRA_TOOLS": str(tools), "PATH": "/usr/bin",
                                          "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert env["PATH"] == f"{tools}:/usr/bin"
    assert env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"
    assert env["PULUMI_SKIP_UPDATE_CHECK"] == "true"
    assert env["PULUMI_HOME"] == str(tmp_path / "state" / "home")
    assert env["PULUMI_BACKEND_URL"] == (tmp_path / "state" / "backend").as_uri()
    assert env["PULUMI_CONFIG_PASSPHRASE"] == "jobset-infra-local"
    assert env["PULUMI_SKIP_CHECKPOINTS"] == "true"  # state written when a command ends
    kept = engine_env(tmp_path / "state", {"JOBSET_INFRA_TOOLS": str(tools), "PATH": "/usr/bin",
                                           "PULUMI_SKIP_CHECKPOINTS": "false"})
    assert kept["PULUMI_SKIP_CHECKPOINTS"] == "false"  # a user who wants every step recorded


def test_a_missing_plugin_names_the_build_command(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    (tools / "pulumi-resource-kubernetes").unlink()
    from jobset_infra.cluster.binaries import MissingBinaryError

    with pytest.raises(MissingBinaryError, match="make tools"):
        engine_env(tmp_path / "state", {"JOBSET_INFRA_TOOLS": str(tools), "PATH": "",
                                        "XDG_CACHE_HOME": str(tmp_path / "cache")})


def test_a_preview_reads_as_the_operation_of_each_changed_resource() -> None:
    out = {"steps": [
        {"op": "same", "urn": "urn:pulumi:local::jobset-infra::pulumi:pulumi:Stack::x"},
        {"op": "replace", "urn": JOBSET,
         "newState": {"type": "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"},
         "detailedDiff": {"spec.replicatedJobs[0].replicas": {"kind": "update-replace"}}},
    ], "changeSummary": {"same": 1, "replace": 1}}
    preview = parse_preview(Run(("preview",), 0, json.dumps(out), "", 1.0))
    assert preview.ops() == {"hello-tpu": "replace"}
    [_, step] = preview.steps
    assert step.type == "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
    assert step.diffs == ("spec.replicatedJobs[0].replicas",)
    assert preview.change_summary == {"same": 1, "replace": 1}


def test_an_update_lists_its_steps_in_the_order_the_engine_took_them() -> None:
    """`up --json` prints one event per line; a replacement is three steps, the old object's
    deletion first when the resource is replaced delete-before-create."""
    def pre(op: str, urn: str, **more: object) -> str:
        return json.dumps({"sequence": 1, "resourcePreEvent": {"metadata": {
            "op": op, "urn": urn, "type": "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", **more}}})

    diff = {"detailedDiff": {"spec.replicatedJobs[0].replicas": {"kind": "update-replace"}}}
    lines = [json.dumps({"preludeEvent": {"config": {}}}), pre("same", STACK),
             pre("same", COMPONENT),
             pre("delete-replaced", JOBSET), pre("replace", JOBSET, **diff),
             json.dumps({"diagnosticEvent": {"message": "not a step"}}),
             pre("create-replacement", JOBSET, **diff), "",
             json.dumps({"summaryEvent": {"resourceChanges": {"replace": 1, "same": 1}}})]
    update = parse_update(Run(("up",), 0, "\n".join(lines), "", 1.0))
    assert update.ops() == {"hello-tpu": "replace"}
    assert update.sequence("hello-tpu") == ["delete-replaced", "replace", "create-replacement"]
    [replace] = [s for s in update.steps if s.op == "replace"]
    assert replace.diffs == ("spec.replicatedJobs[0].replicas",)
    assert replace.type == "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"


def test_every_command_keeps_its_temporary_files_in_the_state_folder(tmp_path: Path) -> None:
    """The provider leaves a temporary kubeconfig per command: under the state folder they are
    removed with the cluster instead of piling up in /tmp."""
    tools = _tools(tmp_path)
    (tools / "pulumi").write_text('#!/bin/sh\nprintf %s "$TMPDIR"\n')
    state = tmp_path / "state"
    engine = Engine(tmp_path, state, engine_env(state, {"JOBSET_INFRA_TOOLS": str(tools),
                                                        "PATH": "/usr/bin:/bin"}))
    ran = engine.run("about").check()
    assert ran.stdout == str(state / "tmp") and (state / "tmp").is_dir()
    assert "TMPDIR" not in engine.env  # what `deploy env` prints for a shell stays without it


def test_a_failed_command_quotes_its_last_lines() -> None:
    with pytest.raises(EngineError, match="exited 255:\nerror: boom"):
        Run(("up",), 255, "", "error: boom\n", 1.0).check()
    with pytest.raises(EngineError, match="printed no JSON"):
        parse_preview(Run(("preview",), 0, "not json", "", 1.0))


def test_a_project_copy_runs_with_the_given_venv_and_only_the_stacks_asked_for(
    tmp_path: Path
) -> None:
    copy = project_copy(ROOT, tmp_path / "p", Path("/venv"), stacks=["local"])
    project = yaml.safe_load((copy / "Pulumi.yaml").read_text())
    assert project["runtime"]["options"]["virtualenv"] == "/venv"
    assert sorted(p.name for p in (copy / "stacks").iterdir()) == [
        "Pulumi.local.yaml", "__main__.py"]
