"""`jobset-infra` start-up: what each command line imports (counted, never timed), and a
subcommand whose module cannot load says so instead of disappearing from the help."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobset_infra import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "tpu-multislice" / "jobset.yaml"

# Runs the CLI in a fresh interpreter and prints, last, the modules it had imported.
_PROBE = (
    "import json, sys\n"
    "from jobset_infra.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit:\n"
    "    pass\n"
    "print('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
)

# What the light command lines must never load: the sim, the controller's runtime, the Pulumi
# side, HTTP stacks and the CEL engine (the heavy half of `validate`, and nothing `--help` needs).
_HEAVY = ("jobset_infra.sim", "jobset_infra.controller", "jobset_infra.components",
          "jobset_infra.stack", "jobset_infra.cluster", "pulumi", "aiohttp", "kubernetes",
          "kubernetes_asyncio", "grpc", "google.protobuf")


def imported_by(*argv: str) -> list[str]:
    """The modules a fresh `jobset-infra ARGV...` has imported when it returns."""
    done = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True,
                          timeout=120, check=False)
    line = done.stdout.rsplit("\nMODULES ", 1)[-1]
    return list(json.loads(line))


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if any(m == h or m.startswith(h + ".") for h in _HEAVY)]


@pytest.mark.parametrize("argv", [
    pytest.param(["--help"], id="--help imports no subcommand"),
    pytest.param(["--version"], id="--version imports no subcommand"),
])
def test_help_and_version_import_only_the_cli(argv: list[str]) -> None:
    modules = imported_by(*argv)
    ours = [m for m in modules if m.split(".")[0] == "jobset_infra"]
    assert ours == ["jobset_infra", "jobset_infra.cli"]
    # The interpreter and argparse alone are about 80 modules; 150 leaves room for Python's own
    # growth, while any of our subcommands (200 and more) or a third-party SDK would exceed it.
    assert len(modules) < 150, f"{len(modules)} modules: {modules}"
    assert not {"yaml", "pydantic", "celpy"} & set(modules)


def test_a_subcommands_help_imports_that_subcommand_only() -> None:
    modules = imported_by("plan", "--help")
    assert "jobset_infra.plan.command" in modules
    others = {cmd.module for name, cmd in cli.COMMANDS.items() if name != "plan"}
    assert not others & set(modules)
    assert heavy(modules) == []


def test_validating_a_file_loads_no_sim_controller_or_pulumi() -> None:
    modules = imported_by("validate", str(EXAMPLE))
    assert "jobset_infra.api.check" in modules  # it did validate
    assert heavy(modules) == []


def test_every_subcommand_is_in_the_help_without_importing_it() -> None:
    parser = cli.build_parser()
    text = parser.format_help()
    for name, command in cli.COMMANDS.items():
        assert name in text
        assert command.help.split()[0] in text


def test_a_subcommand_that_cannot_load_says_so(monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(cli.COMMANDS, "plan", cli.Command("jobset_infra.no_such_module", "plan"))
    assert cli.main(["plan", "gke-dev"]) == 1
    err = capsys.readouterr().err
    assert "jobset-infra plan: cannot load jobset_infra.no_such_module" in err
    assert "Traceback" not in err
    # ... and it is still listed.
    assert "plan" in cli.build_parser().format_help()


def test_a_subcommand_missing_the_pulumi_sdk_names_the_extra(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def no_pulumi(name: str) -> object:
        raise ModuleNotFoundError("No module named 'pulumi'", name="pulumi")

    monkeypatch.setattr(cli.importlib, "import_module", no_pulumi)
    assert cli.main(["deploy", "env"]) == 1
    assert "pip install 'jobset-infra[platform]'" in capsys.readouterr().err


def test_the_deploy_command_loads_and_builds_its_arguments(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Only the real tiers run `deploy`; this loads it as `jobset-infra deploy up --help` does.
    with pytest.raises(SystemExit) as exited:
        cli.main(["deploy", "up", "--help"])
    assert exited.value.code == 0
    assert "--auto-complete" in capsys.readouterr().out
