"""`jobset-infra`: validate | crd | plan | sim | cluster | deploy | image | explain.

Each subcommand lives in the module that owns its logic; this file only wires them to argparse.
A subcommand module exposes `add_arguments(parser)` and `run(args) -> int`; its one-line help is
declared here, so `jobset-infra --help` imports no subcommand, and only the subcommand asked for
is imported (the module keeps its own heavy imports, pulumi or aiohttp, inside `run`). A
subcommand whose module cannot be imported says so, naming the module and the error, and exits 1:
it is never left out of the help.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from jobset_infra import __version__

# Neither `typing` nor `dataclasses` is imported at run time: with `inspect`, `ast` and `dis`,
# which `dataclasses` loads, they were a third of `jobset-infra --help`'s CPU (0.04 of 0.13 s).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Protocol

    class _Command(Protocol):
        def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

        def run(self, args: argparse.Namespace) -> int: ...


class Command:
    """A subcommand: the module that implements it and its one-line help."""

    __slots__ = ("help", "module")

    def __init__(self, module: str, help: str) -> None:
        self.module = module
        self.help = help

    def __repr__(self) -> str:
        return f"Command({self.module!r}, {self.help!r})"


COMMANDS: dict[str, Command] = {
    "validate": Command(
        "jobset_infra.validate_command",
        "Check JobSet manifests (YAML, multi-document, '-' for stdin) like the cluster would."),
    "crd": Command(
        "jobset_infra.api.crd.command",
        "Generate the JobSet CRD from the models (or --check the committed file is up to date)."),
    "plan": Command(
        "jobset_infra.plan.command",
        "show what `pulumi up` would create for a stack, offline (no cloud, no Pulumi CLI)"),
    "sim": Command(
        "jobset_infra.sim.command",
        "run a simulated Kubernetes API server on 127.0.0.1 with the JobSet CRD, a fake Job "
        "controller and TPU-like nodes; --demo runs a multislice JobSet end to end"),
    "cluster": Command(
        "jobset_infra.cluster.command",
        "run the real Kubernetes control plane (etcd, kube-apiserver, controller-manager, "
        "scheduler, kwok nodes) on 127.0.0.1: up | down | status"),
    "deploy": Command(
        "jobset_infra.cluster.deploy_command",
        "the real path: the local cluster and `pulumi up` with the Pulumi engine built from "
        "source: up | down | env"),
    "image": Command(
        "jobset_infra.cluster.images.command",
        "build the controller and workload images without a Docker daemon, reproducibly "
        "(OCI layout and archive, digest printed): build"),
    "explain": Command(
        "jobset_infra.explain.command",
        "why a JobSet is (not) running: its conditions, Kueue Workload, pools, pods and nodes, "
        "and what would unblock it; read-only, from a kubeconfig (-o json for scripts)"),
}


class CommandLoadError(Exception):
    """A subcommand's module cannot be imported; the message names it, the error and the fix."""


def _load(name: str) -> _Command:
    module = COMMANDS[name].module
    try:
        loaded: _Command = importlib.import_module(module)
        return loaded
    except ImportError as err:
        missing = err.name or ""
        hint = (" (the Pulumi SDKs are the platform extra: pip install 'jobset-infra[platform]')"
                if missing.startswith("pulumi") else "")
        raise CommandLoadError(
            f"jobset-infra {name}: cannot load {module}: {type(err).__name__}: {err}{hint}"
        ) from err


def build_parser(load: str | None = None) -> argparse.ArgumentParser:
    """The parser: every subcommand with its help; the arguments of `load` only (imported)."""
    parser = argparse.ArgumentParser(
        prog="jobset-infra",
        description="TPU training platform on GKE: JobSet API, controller, Kueue, with Pulumi.",
    )
    parser.add_argument("--version", action="version", version=f"jobset-infra {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        subparser = sub.add_parser(name, help=command.help, description=command.help)
        if name == load:
            _load(name).add_arguments(subparser)
    return parser


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (the first word that is not an option)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    name = _command_in(words)
    try:
        args = build_parser(name if name in COMMANDS else None).parse_args(words)
        return _load(args.command).run(args)
    except CommandLoadError as err:
        print(err, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
