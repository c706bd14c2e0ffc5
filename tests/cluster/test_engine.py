"""The real Pulumi engine's surroundings: its environment, the Automation API's events read as
steps and failures, the built CLI it runs, project copies."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from pulumi.automation.events import EngineEvent

from jobset_infra.cluster.engine import (
    Engine,
    EngineError,
    EventLog,
    Preview,
    Update,
    cli_root,
    command_error,
    engine_env,
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


def test_a_language_host_a_program_needs_is_put_on_path_too(tmp_path: Path) -> None:
    """A YAML program's host (pulumi-language-yaml) may sit in another folder than the three
    binaries every command needs; it is found the same way, and named when missing."""
    tools = _tools(tmp_path)
    other = tmp_path / "yaml-tools"
    other.mkdir()
    (other / "pulumi-language-yaml").write_text("#!/bin/sh\n")
    (other / "pulumi-language-yaml").chmod(0o755)
    base = {"JOBSET_INFRA_TOOLS": str(tools), "PATH": f"{other}:/usr/bin",
            "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env = engine_env(tmp_path / "state", base, plugins=["pulumi-language-yaml"])
    assert env["PATH"] == f"{tools}:{other}:{other}:/usr/bin"
    from jobset_infra.cluster.binaries import MissingBinaryError

    with pytest.raises(MissingBinaryError, match="pulumi-language-nodejs not found"):
        engine_env(tmp_path / "state", base, plugins=["pulumi-language-nodejs"])


def _events(*raw: dict[str, object]) -> EventLog:
    """The log of engine events given as the CLI sends them (JSON objects)."""
    log = EventLog()
    for sequence, event in enumerate(raw):
        log(EngineEvent.from_json({"sequence": sequence, "timestamp": 0, **event}))
    return log


def _pre(op: str, urn: str, **more: object) -> dict[str, object]:
    return {"resourcePreEvent": {"metadata": {
        "op": op, "urn": urn, "type": "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
        "provider": "", **more}}}


def test_a_preview_reads_as_the_operation_of_each_changed_resource() -> None:
    log = _events(
        _pre("same", STACK),
        _pre("replace", JOBSET, keys=["spec"],
             detailedDiff={"spec.replicatedJobs[0].replicas": {"diffKind": "update-replace",
                                                               "inputDiff": True}}),
    )
    preview = Preview(tuple(log.steps), {"same": 1, "replace": 1})
    assert preview.ops() == {"hello-tpu": "replace"}
    [_, step] = preview.steps
    assert step.type == "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet"
    assert step.diffs == ("spec.replicatedJobs[0].replicas",)
    assert step.replace_reasons == ("spec",)


def test_an_update_lists_its_steps_in_the_order_the_engine_took_them() -> None:
    """A replacement is three steps, the old object's deletion first when the resource is
    replaced delete-before-create; events that are not steps are no steps."""
    diff = {"detailedDiff": {"spec.replicatedJobs[0].replicas": {"diffKind": "update-replace"}}}
    log = _events({"preludeEvent": {"config": {}}}, _pre("same", STACK),
                  _pre("same", COMPONENT), _pre("delete-replaced", JOBSET),
                  _pre("replace", JOBSET, **diff),
                  {"diagnosticEvent": {"message": "not a step", "severity": "info"}},
                  _pre("create-replacement", JOBSET, **diff),
                  {"summaryEvent": {"maybeCorrupt": False, "durationSeconds": 1,
                                    "resourceChanges": {"replace": 1, "same": 1}}})
    update = Update(tuple(log.steps))
    assert update.ops() == {"hello-tpu": "replace"}
    assert update.sequence("hello-tpu") == ["delete-replaced", "replace", "create-replacement"]
    [replace] = [s for s in update.steps if s.op == "replace"]
    assert replace.diffs == ("spec.replicatedJobs[0].replicas",)
    assert log.failures == []


def test_a_failed_command_names_each_resource_that_failed_from_the_events() -> None:
    log = _events(
        _pre("create", JOBSET),
        {"diagnosticEvent": {"urn": JOBSET, "severity": "error", "message":
                             "resource default/hello-tpu was not created:\n admission webhook "
                             "denied the request\n"}},
        {"diagnosticEvent": {"urn": STACK, "severity": "warning", "message": "slow"}},
        {"diagnosticEvent": {"urn": JOBSET, "severity": "error", "message":
                             "resource default/hello-tpu was not created:\n admission webhook "
                             "denied the request\n"}},
    )
    err = command_error("up", "local", log, RuntimeError("exit 255"))
    assert str(err) == ("pulumi up -s local failed:\n  hello-tpu: resource default/hello-tpu "
                        "was not created: admission webhook denied the request")


def test_a_failure_without_events_quotes_the_last_lines_the_cli_printed() -> None:
    from pulumi.automation import CommandError, CommandResult

    printed = "\n".join(f"line {n}" for n in range(40))
    err = command_error("stack export", "local", EventLog(),
                        CommandError(CommandResult(printed, "error: boom", 255)))
    assert str(err).startswith("pulumi stack export -s local exited 255:\nline 16\n")
    assert str(err).endswith("line 39\nerror: boom")


# A stand-in CLI: the Automation API asks its version, selects the stack, reads outputs.
FAKE_CLI = """#!{python}
import json, os, sys
args = [a for a in sys.argv[1:] if not a.startswith("--")]
if args[:1] == ["version"]:
    print("v3.274.1")
elif args[:2] == ["stack", "output"]:
    print(json.dumps({{"tmp": os.environ["TMPDIR"], "home": os.environ["PULUMI_HOME"]}}))
elif args[:2] != ["stack", "select"]:
    sys.exit("unexpected: " + " ".join(sys.argv[1:]))
"""


def test_every_command_runs_the_built_cli_with_temporary_files_in_the_state_folder(
    tmp_path: Path
) -> None:
    """The Automation API runs the CLI `make tools` built (from a folder not named bin), with
    the engine's environment; the provider leaves a temporary kubeconfig per command, so under
    the state folder they are removed with the cluster instead of piling up in /tmp."""
    tools = _tools(tmp_path)
    (tools / "pulumi").write_text(FAKE_CLI.format(python=sys.executable))
    state = tmp_path / "state"
    engine = Engine(tmp_path, state, engine_env(state, {"JOBSET_INFRA_TOOLS": str(tools),
                                                        "PATH": "/usr/bin:/bin"}))
    assert engine.outputs("local") == {"tmp": str(state / "tmp"), "home": str(state / "home")}
    assert (state / "tmp").is_dir()
    assert "TMPDIR" not in engine.env  # what `deploy env` prints for a shell stays without it
    assert cli_root(state, tools / "pulumi") / "bin" / "pulumi" == state / "cli" / "bin" / "pulumi"
    assert (state / "cli" / "bin" / "pulumi").resolve() == (tools / "pulumi").resolve()


def test_a_cli_that_fails_is_an_engine_error_naming_the_command(tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    (tools / "pulumi").write_text(FAKE_CLI.format(python=sys.executable))
    state = tmp_path / "state"
    engine = Engine(tmp_path, state, engine_env(state, {"JOBSET_INFRA_TOOLS": str(tools),
                                                        "PATH": "/usr/bin:/bin"}))
    with pytest.raises(EngineError, match=r"pulumi stack export -s local exited 1:\n"
                                          r"unexpected: --non-interactive stack export"):
        engine.resources("local")


def test_a_project_copy_runs_with_the_given_venv_and_only_the_stacks_asked_for(
    tmp_path: Path
) -> None:
    copy = project_copy(ROOT, tmp_path / "p", Path("/venv"), stacks=["local"])
    project = yaml.safe_load((copy / "Pulumi.yaml").read_text())
    assert project["runtime"]["options"]["virtualenv"] == "/venv"
    assert sorted(p.name for p in (copy / "stacks").iterdir()) == [
        "Pulumi.local.yaml", "__main__.py"]
