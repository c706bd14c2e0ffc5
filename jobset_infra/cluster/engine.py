"""The real Pulumi engine on this machine, driven through Pulumi's Automation API.

`Engine(project, state)` runs a project folder (Pulumi.yaml) with `pulumi.automation`: a
`LocalWorkspace` on that folder whose `PulumiCommand` is the CLI `make tools` built, and typed
engine events (`pulumi.automation.events`) instead of parsed `--json` output. It runs with

- the tools folder first on PATH: the engine takes `pulumi-language-python` and
  `pulumi-resource-kubernetes` from there (ambient plugins), and never downloads one
  (PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION), nor checks for a newer CLI;
- PULUMI_HOME and the file backend (`file://...`) under `state`, so nothing is written to
  ~/.pulumi and the stack's state lives (and dies) with the cluster it describes;
- the passphrase secrets provider with the local stacks' passphrase: the only secret of a
  local stack is its kubeconfig, whose client key sits in the same cluster folder anyway.
- the state written once, when a command ends (PULUMI_SKIP_CHECKPOINTS), not after every step:
  a local stack's state is several MB (Kueue's CRDs), and rewriting it after each of its ~150
  steps took most of an `up` or `destroy` (destroy 33-50 -> 20 s here). The cost: if the CLI
  itself is killed mid-command, that command's steps are not recorded, on a cluster that is
  thrown away with its state. Set PULUMI_SKIP_CHECKPOINTS=false to record every step.

`preview` and `update` return the steps the engine planned or took (`Step`, from each
`ResourcePreEvent`, in the order the engine began them); every command takes `echo`, a callback
that receives the CLI's own output line by line while it runs (`jobset-infra deploy` prints it).
A failed command raises `EngineError` naming the command and stack and, from the events, each
resource that failed with the engine's message for it.

The Automation API drives the same CLI (it is a typed client of it, not an engine in-process):
what it adds is the event stream over gRPC, stack and config operations as methods, and errors
as exceptions. It has no timeout of its own; a hung command is ended by the caller (Ctrl-C, the
test's timeout).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from pulumi import automation as auto
from pulumi.automation import events

from jobset_infra.cluster.binaries import find

PASSPHRASE: Final = "jobset-infra-local"
"""Unlocks the local stacks' secrets (their committed encryptionsalt was made with it)."""
BINARIES: Final = ("pulumi", "pulumi-language-python", "pulumi-resource-kubernetes")
TAIL_LINES: Final = 25

Echo = Callable[[str], object]


class EngineError(RuntimeError):
    """A `pulumi` command failed; the message names it, the resources that failed and what the
    engine said last."""


@dataclass(frozen=True)
class Step:
    """One resource step: its operation (create, same, update, replace, ...)."""

    op: str
    urn: str
    type: str
    diffs: tuple[str, ...] = ()
    replace_reasons: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.urn.rsplit("::", 1)[-1]

    @classmethod
    def of(cls, meta: events.StepEventMetadata) -> Step:
        """The step a `ResourcePreEvent` announces."""
        # The property paths that differ: `diffs` when given, else the detailed diff's keys.
        diffs = meta.diffs or list(meta.detailed_diff or {})
        return cls(op=str(meta.op.value), urn=meta.urn, type=meta.type, diffs=tuple(diffs),
                   replace_reasons=tuple(meta.keys or ()))


# The two halves of a replacement; `changed_ops` counts them as the replace they belong to.
REPLACEMENT_HALVES: Final = frozenset({"create-replacement", "delete-replaced"})


def changed_ops(steps: Sequence[Step]) -> dict[str, str]:
    """Resource name -> operation, for the steps that change something (a replacement's
    halves count as its replace)."""
    return {s.name: "replace" if s.op in REPLACEMENT_HALVES else s.op
            for s in steps if s.op != "same"}


@dataclass(frozen=True)
class Preview:
    """What `preview` would do: every step, and the engine's count per operation."""

    steps: tuple[Step, ...]
    change_summary: Mapping[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def ops(self) -> dict[str, str]:
        """Resource name -> operation, for the steps that change something."""
        return changed_ops(self.steps)


@dataclass(frozen=True)
class Update:
    """What `up` did: every step, in the order the engine began it."""

    steps: tuple[Step, ...]
    outputs: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def ops(self) -> dict[str, str]:
        """Resource name -> operation, for the steps that changed something."""
        return changed_ops(self.steps)

    def sequence(self, name: str) -> list[str]:
        """The operations that changed resources named `name`, in order (a replacement has
        three; a component of the same name that stayed the same has none)."""
        return [s.op for s in self.steps if s.name == name and s.op != "same"]


@dataclass
class EventLog:
    """What one command's engine events said: its steps, and each resource that failed."""

    steps: list[Step] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def __call__(self, event: events.EngineEvent) -> None:
        if event.resource_pre_event is not None:
            self.steps.append(Step.of(event.resource_pre_event.metadata))
        diagnostic = event.diagnostic_event
        if diagnostic is not None and diagnostic.severity == "error":
            where = diagnostic.urn.rsplit("::", 1)[-1] if diagnostic.urn else "the program"
            message = " ".join(diagnostic.message.split())
            if message:
                self.failures.append(f"{where}: {message}")


def command_error(command: str, stack: str, log: EventLog, err: Exception) -> EngineError:
    """The error for a failed command: the resources that failed (from the events), else the
    last lines the CLI printed."""
    if log.failures:
        detail = "\n".join(f"  {line}" for line in dict.fromkeys(log.failures))
        return EngineError(f"pulumi {command} -s {stack} failed:\n{detail}")
    code, printed = cli_result(str(err))
    tail = "\n".join(printed.strip().splitlines()[-TAIL_LINES:])
    return EngineError(f"pulumi {command} -s {stack} exited {code}:\n{tail}")


# How a CommandError prints the CLI's result (it keeps nothing else of it).
_RESULT = re.compile(r"\A\s*code: (?P<code>-?\d+)\n stdout: (?P<out>.*)\n stderr: (?P<err>.*)\Z",
                     re.DOTALL)


def cli_result(text: str) -> tuple[str, str]:
    """The exit code and the output (stdout, then stderr) in a CommandError's text."""
    match = _RESULT.match(text)
    if match is None:
        return "?", text
    return match["code"], f"{match['out']}\n{match['err']}"


def engine_env(state: Path, base: Mapping[str, str] | None = None,
               plugins: Sequence[str] = ()) -> dict[str, str]:
    """The environment every `pulumi` command here runs with (see the module docstring).
    `plugins`: more binaries the engine must find on PATH, e.g. `pulumi-language-yaml` for a
    YAML program."""
    base = os.environ if base is None else base
    # Each binary's folder (raising MissingBinaryError, which names the build command).
    folders = dict.fromkeys(str(find(name, base).parent) for name in (*BINARIES, *plugins))
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


def cli_root(state: Path, pulumi: Path) -> Path:
    """A folder whose `bin/pulumi` is `pulumi`: `PulumiCommand(root=...)` runs `root/bin/pulumi`,
    and `make tools` (or JOBSET_INFRA_TOOLS) may keep it in a folder of another name."""
    root = state / "cli"
    link = root / "bin" / "pulumi"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.is_symlink() and link.resolve() == pulumi.resolve()):
        link.unlink(missing_ok=True)
        link.symlink_to(pulumi.resolve())
    return root


@dataclass
class Engine:
    project: Path
    state: Path
    env: dict[str, str] = field(default_factory=dict)
    _workspace: auto.LocalWorkspace | None = field(default=None, init=False, repr=False)
    _stacks: dict[str, auto.Stack] = field(default_factory=dict, init=False, repr=False)

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

    @property
    def workspace(self) -> auto.LocalWorkspace:
        """The project's workspace, running the built CLI (its version checked once, here)."""
        if self._workspace is None:
            pulumi = find("pulumi", self.env)
            try:
                command = auto.PulumiCommand(root=str(cli_root(self.state, pulumi)))
            except (OSError, auto.InvalidVersionError) as err:
                raise EngineError(f"cannot run {pulumi} version: {err}; rebuild it with "
                                  "`make tools`") from None
            self._workspace = auto.LocalWorkspace(
                work_dir=str(self.project), pulumi_home=self.env["PULUMI_HOME"],
                env_vars=self.command_env, pulumi_command=command)
        return self._workspace

    def stack(self, name: str) -> auto.Stack:
        """Stack `name`, selected (and created in the backend the first time)."""
        if name not in self._stacks:
            self._stacks[name] = _call("stack select --create", name, EventLog(),
                                       auto.Stack.create_or_select, name, self.workspace)
        return self._stacks[name]

    def select(self, stack: str) -> None:
        """Select `stack`, creating it in the backend the first time."""
        self.stack(stack)

    def config_set(self, stack: str, key: str, value: str, *, path: bool = False) -> None:
        _call(f"config set {key}", stack, EventLog(), self.stack(stack).set_config, key,
              auto.ConfigValue(value), path=path)

    def preview(self, stack: str, *, expect_no_changes: bool = False,
                echo: Echo | None = None) -> Preview:
        """What `up` would do, step by step (`pulumi preview`)."""
        log = EventLog()
        started = time.monotonic()
        result = _call("preview", stack, log, self.stack(stack).preview, on_event=log,
                       on_output=echo, color="never", suppress_progress=True,
                       expect_no_changes=expect_no_changes)
        summary = {getattr(op, "value", op): count
                   for op, count in result.change_summary.items()}
        return Preview(tuple(log.steps), summary, time.monotonic() - started)

    def up(self, stack: str, *, expect_no_changes: bool = False,
           echo: Echo | None = None) -> Update:
        """`pulumi up` without a preview: the steps it took, and the stack's outputs."""
        log = EventLog()
        started = time.monotonic()
        result = _call("up", stack, log, self.stack(stack).up, on_event=log, on_output=echo,
                       color="never", suppress_progress=True,
                       expect_no_changes=expect_no_changes)
        outputs = {key: out.value for key, out in result.outputs.items()}
        return Update(tuple(log.steps), outputs, time.monotonic() - started)

    def destroy(self, stack: str, *, echo: Echo | None = None) -> Update:
        """`pulumi destroy`: the steps it took."""
        log = EventLog()
        started = time.monotonic()
        _call("destroy", stack, log, self.stack(stack).destroy, on_event=log, on_output=echo,
              color="never", suppress_progress=True)
        return Update(tuple(log.steps), {}, time.monotonic() - started)

    def refresh(self, stack: str, *, echo: Echo | None = None) -> Update:
        """`pulumi refresh`: the state read back from the cluster."""
        log = EventLog()
        started = time.monotonic()
        _call("refresh", stack, log, self.stack(stack).refresh, on_event=log, on_output=echo,
              color="never", suppress_progress=True)
        return Update(tuple(log.steps), {}, time.monotonic() - started)

    def outputs(self, stack: str) -> dict[str, Any]:
        found = _call("stack output", stack, EventLog(), self.stack(stack).outputs)
        return {key: out.value for key, out in found.items()}

    def resources(self, stack: str) -> list[dict[str, Any]]:
        """The stack's state: every resource the engine recorded (`pulumi stack export`)."""
        exported = _call("stack export", stack, EventLog(), self.stack(stack).export_stack)
        found: list[dict[str, Any]] = (exported.deployment or {}).get("resources") or []
        return found


T = TypeVar("T")


def _call(command: str, stack: str, log: EventLog, method: Callable[..., T], *args: Any,
          **kwargs: Any) -> T:
    """`method(*args, **kwargs)`, its failure raised as the EngineError naming `command`."""
    try:
        return method(*args, **kwargs)
    except auto.CommandError as err:
        raise command_error(command, stack, log, err) from None
    except RuntimeError as err:  # the Automation API's own: e.g. a preview without a summary
        raise EngineError(f"pulumi {command} -s {stack}: {err}") from None


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
