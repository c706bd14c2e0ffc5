"""The real Pulumi engine on this machine: the CLI, language host and provider `make tools` built.

`Engine(project, state)` runs `pulumi` for a project folder (Pulumi.yaml) with

- the tools folder first on PATH: the engine takes `pulumi-language-python` and
  `pulumi-resource-kubernetes` from there (ambient plugins), and never downloads one
  (PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION), nor checks for a newer CLI;
- PULUMI_HOME and the file backend (`pulumi login file://...`) under `state`, so nothing is
  written to ~/.pulumi and the stack's state lives (and dies) with the cluster it describes;
- the passphrase secrets provider with the local stacks' passphrase: the only secret of a
  local stack is its kubeconfig, whose client key sits in the same cluster folder anyway.
- the state written once, when a command ends (PULUMI_SKIP_CHECKPOINTS), not after every step:
  a local stack's state is several MB (Kueue's CRDs), and rewriting it after each of its ~150
  steps took most of an `up` or `destroy` (destroy 33-50 -> 20 s here). The cost: if the CLI
  itself is killed mid-command, that command's steps are not recorded, on a cluster that is
  thrown away with its state. Set PULUMI_SKIP_CHECKPOINTS=false to record every step.

Commands return `Run` (exit code, output, seconds); `preview` parses `--json` into the steps it
plans, `update` (`up --json`) its event stream into the steps it took, in the order it took them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from jobset_infra.cluster.binaries import find

PASSPHRASE: Final = "jobset-infra-local"
"""Unlocks the local stacks' secrets (their committed encryptionsalt was made with it)."""
BINARIES: Final = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")


class EngineError(RuntimeError):
    """A `pulumi` command failed; the message quotes what it printed last."""


@dataclass(frozen=True)
class Run:
    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    seconds: float

    def check(self) -> Run:
        if self.code != 0:
            tail = "\n".join((self.stdout + self.stderr).strip().splitlines()[-25:])
            raise EngineError(f"pulumi {' '.join(self.args)} exited {self.code}:\n{tail}")
        return self


@dataclass(frozen=True)
class Step:
    """One resource step of a preview: its operation (create, same, update, replace, ...)."""

    op: str
    urn: str
    type: str
    diffs: tuple[str, ...] = ()
    replace_reasons: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class Preview:
    steps: tuple[Step, ...]
    run: Run
    change_summary: Mapping[str, int] = field(default_factory=dict)

    def ops(self) -> dict[str, str]:
        """Resource name -> operation, for the steps that change something."""
        return changed_ops(self.steps)


# The two halves of a replacement; `changed_ops` counts them as the replace they belong to.
REPLACEMENT_HALVES: Final = frozenset({"create-replacement", "delete-replaced"})


def changed_ops(steps: Sequence[Step]) -> dict[str, str]:
    """Resource name -> operation, for the steps that change something (a replacement's
    halves count as its replace)."""
    return {s.name: "replace" if s.op in REPLACEMENT_HALVES else s.op
            for s in steps if s.op != "same"}


@dataclass(frozen=True)
class Update:
    """What `pulumi up --json` did: every step, in the order the engine began it."""

    steps: tuple[Step, ...]
    run: Run

    def ops(self) -> dict[str, str]:
        """Resource name -> operation, for the steps that changed something."""
        return changed_ops(self.steps)

    def sequence(self, name: str) -> list[str]:
        """The operations that changed resources named `name`, in order (a replacement has
        three; a component of the same name that stayed the same has none)."""
        return [s.op for s in self.steps if s.name == name and s.op != "same"]


def engine_env(state: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every `pulumi` command here runs with (see the module docstring)."""
    base = os.environ if base is None else base
    # Each binary's folder (raising MissingBinaryError, which names the build command).
    folders = dict.fromkeys(str(find(name, base).parent) for name in BINARIES)
    return {
        **base,
        "PATH": os.pathsep.join([*folders, base.get("PATH", "/usr/bin:/bin")]),
        "PULUMI_HOME": str(state / "home"),
        "PULUMI_BACKEND_URL": (state / "backend").resolve().as_uri(),
        "PULUMI_CONFIG_PASSPHRASE": base.get("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE),
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DIY_BACKEND_NO_LEGACY_WARNING": "true",
        "PULUMI_SKIP_CHECKPOINTS": base.get("PULUMI_SKIP_CHECKPOINTS", "true"),
        # Plain, unstyled output for logs and tests.
        "PULUMI_SUPPRESS_COPILOT_LINK": "true",
        "NO_COLOR": "1",
    }


@dataclass
class Engine:
    project: Path
    state: Path
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for folder in ("home", "backend", "tmp"):
            (self.state / folder).mkdir(parents=True, exist_ok=True)
        if not self.env:
            self.env = engine_env(self.state)

    @property
    def command_env(self) -> dict[str, str]:
        """`env`, with temporary files in the state folder: the provider writes the kubeconfig
        it is given to a temporary file for every command and leaves it, so in /tmp they piled
        up (one per command); here they go with the cluster's folder. (Not in `engine_env`,
        which `deploy env` prints for a user's shell, where it would outlive the cluster.)"""
        return {**self.env, "TMPDIR": str(self.state / "tmp")}

    def run(self, *args: str, timeout: float = 1800, echo: bool = False) -> Run:
        """Run `pulumi ARGS` in the project; `echo` streams its output while it runs."""
        command = [str(find("pulumi", self.env)), *args, "--non-interactive", "--color=never"]
        started = time.monotonic()
        env = self.command_env
        if echo:
            proc = subprocess.run(command, cwd=self.project, env=env, timeout=timeout,
                                  check=False, text=True, stdout=None, stderr=None)
            return Run(tuple(args), proc.returncode, "", "", time.monotonic() - started)
        proc = subprocess.run(command, cwd=self.project, env=env, timeout=timeout,
                              check=False, capture_output=True, text=True)
        return Run(tuple(args), proc.returncode, proc.stdout, proc.stderr,
                   time.monotonic() - started)

    def select(self, stack: str) -> None:
        """Select `stack`, creating it in the backend the first time."""
        self.run("stack", "select", "--create", stack).check()

    def config_set(self, stack: str, key: str, value: str, *, path: bool = False) -> None:
        args = ["config", "set", "-s", stack, *(["--path"] if path else []), key, value]
        self.run(*args).check()

    def preview(self, stack: str, *extra: str) -> Preview:
        run = self.run("preview", "-s", stack, "--json", *extra).check()
        return parse_preview(run)

    def up(self, stack: str, *extra: str, echo: bool = False) -> Run:
        return self.run("up", "-s", stack, "--yes", "--skip-preview", *extra, echo=echo).check()

    def update(self, stack: str, *extra: str) -> Update:
        """`up` with its events as JSON: the steps it took."""
        run = self.run("up", "-s", stack, "--yes", "--skip-preview", "--json", *extra).check()
        return parse_update(run)

    def destroy(self, stack: str, *extra: str, echo: bool = False) -> Run:
        return self.run("destroy", "-s", stack, "--yes", "--skip-preview", *extra,
                        echo=echo).check()

    def refresh(self, stack: str, *extra: str) -> Run:
        return self.run("refresh", "-s", stack, "--yes", "--skip-preview", *extra).check()

    def outputs(self, stack: str) -> dict[str, Any]:
        run = self.run("stack", "output", "-s", stack, "--json").check()
        outputs: dict[str, Any] = json.loads(run.stdout or "{}")
        return outputs

    def resources(self, stack: str) -> list[dict[str, Any]]:
        """The stack's state: every resource the engine recorded (`pulumi stack export`)."""
        run = self.run("stack", "export", "-s", stack).check()
        deployment = json.loads(run.stdout).get("deployment") or {}
        found: list[dict[str, Any]] = deployment.get("resources") or []
        return found


def parse_preview(run: Run) -> Preview:
    """The steps of `pulumi preview --json` output."""
    try:
        data = json.loads(run.stdout)
    except json.JSONDecodeError as err:
        raise EngineError(f"pulumi preview --json printed no JSON ({err}): {run.stdout[:400]}") \
            from None
    steps = tuple(_step(s) for s in data.get("steps") or [])
    return Preview(steps, run, data.get("changeSummary") or {})


def parse_update(run: Run) -> Update:
    """The steps of `pulumi up --json` output: one JSON event per line, a step per
    resourcePreEvent."""
    steps = []
    for line in run.stdout.splitlines():
        try:
            event = json.loads(line) if line.strip() else {}
        except json.JSONDecodeError:
            continue  # not an event: the CLI prints nothing else here, but a line is no step
        if "resourcePreEvent" in event:
            steps.append(_step(event["resourcePreEvent"].get("metadata") or {}))
    return Update(tuple(steps), run)


def _step(raw: Mapping[str, Any]) -> Step:
    state = raw.get("newState") or raw.get("oldState") or raw
    return Step(
        op=str(raw.get("op", "")),
        urn=str(raw.get("urn", "")),
        type=str(state.get("type", "")),
        # The property paths that differ: `diffs` when given, else the detailed diff's keys.
        diffs=tuple(raw.get("diffs") or raw.get("detailedDiff") or ()),
        replace_reasons=tuple(raw.get("replaceReasons") or ()),
    )


def project_copy(source: Path, target: Path, venv: Path,
                 stacks: Sequence[str] = ()) -> Path:
    """A copy of the project (Pulumi.yaml and stacks/) in `target`, running with `venv`.

    Tests and the multislice run change stack config; a copy keeps the repository's files as
    they are. The program still imports this checkout's jobset_infra (the venv's editable
    install).
    """
    import yaml

    target.mkdir(parents=True, exist_ok=True)
    project = yaml.safe_load((source / "Pulumi.yaml").read_text())
    project["runtime"]["options"]["virtualenv"] = str(venv)
    (target / "Pulumi.yaml").write_text(yaml.safe_dump(project, sort_keys=False))
    stacks_dir = target / project.get("stackConfigDir", "stacks")
    stacks_dir.mkdir(parents=True, exist_ok=True)
    source_stacks = source / project.get("stackConfigDir", "stacks")
    for path in source_stacks.iterdir():
        if path.suffix == ".py" or (path.name.startswith("Pulumi.") and
                                    (not stacks or path.stem.removeprefix("Pulumi.") in stacks)):
            (stacks_dir / path.name).write_bytes(path.read_bytes())
    return target
