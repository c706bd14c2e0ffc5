"""`jobset-infra`: validate | crd | plan | sim | cluster | deploy | kueue-postrender.

Each subcommand lives in the module that owns its logic; this file only wires them to argparse.
A subcommand module exposes `add_arguments(parser)` and `run(args) -> int` and keeps heavy imports
(pulumi, aiohttp) inside `run`, so `jobset-infra validate` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Protocol, cast


class _Command(Protocol):
    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


COMMANDS: dict[str, str] = {
    "validate": "jobset_infra.api.validate_command",
    "crd": "jobset_infra.api.crd.command",
    "plan": "jobset_infra.plan_command",
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
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        try:
            command = _load(module)
        except ImportError:  # a subcommand whose module is not there yet
            continue
        command.add_arguments(sub.add_parser(name, help=command.HELP, description=command.HELP))
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so it cleans up as after Ctrl-C (`cluster up`
    stops what it started: its processes run in their own session, out of the signal's
    reach)."""


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():  # only it may set handlers
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return _load(COMMANDS[args.command]).run(args)
    except Terminated:
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
