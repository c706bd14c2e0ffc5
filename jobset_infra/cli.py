"""`jobset-infra`: validate | crd | plan | sim | cluster | deploy | kueue-postrender.

Each subcommand lives in the module that owns its logic; this file only wires them to argparse.
A subcommand module exposes `add_arguments(parser)` and `run(args) -> int` and keeps heavy imports
(pulumi, aiohttp) inside `run`, so `jobset-infra validate` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Protocol, cast

from jobset_infra import __version__


class _Command(Protocol):
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: dict[str, str] = {
    "validate": "jobset_infra.validate_command",
    "crd": "jobset_infra.api.crd.command",
    "plan": "jobset_infra.plan.command",
    "sim": "jobset_infra.sim.command",
    "cluster": "jobset_infra.cluster.command",
    "deploy": "jobset_infra.cluster.deploy_command",
    "kueue-postrender": "jobset_infra.kueue_postrender_command",
}


def _load(module: str) -> _Command:
    return cast(_Command, importlib.import_module(module))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jobset-infra",
        description="TPU training platform on GKE: JobSet API, controller, Kueue, with Pulumi.",
    )
    parser.add_argument("--version", action="version", version=f"jobset-infra {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        try:
            command = _load(module)
        except ImportError:  # a subcommand whose module is not there yet
            continue
        command.add_arguments(sub.add_parser(name, help=command.HELP, description=command.HELP))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _load(COMMANDS[args.command]).run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
