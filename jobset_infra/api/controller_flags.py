"""`jobset-controller`'s command line: argparse wiring of `ControllerConfig`'s flags.

The flag table (`FLAGS`) lives with the model in `controller_config`, which renders it
(`ControllerConfig.to_args`); this module parses it: flags given explicitly override the config
file, which overrides the defaults. Pure apart from reading the `--config` file, which is injected.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from jobset_infra import __version__
from jobset_infra.api.controller_config import (
    FLAGS,
    LEADER_ELECT_PATH,
    ControllerConfig,
    ControllerConfigError,
    Flag,
)
from jobset_infra.api.features import FeatureGateError, parse_gates

__all__ = ["add_flags", "merge_flags", "parse_config"]


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Register `--config`, `--feature-gates` and every flag in FLAGS (defaults left unset)."""
    parser.add_argument("--config", default=None, help="path of a Configuration YAML file")
    parser.add_argument(
        "--feature-gates", default=None, help="comma-separated Gate=true|false pairs"
    )
    for flag in FLAGS:
        if flag.path == LEADER_ELECT_PATH:  # a Go bool flag: `--leader-elect` alone means true
            parser.add_argument(f"--{flag.name}", nargs="?", const="true", help=flag.help)
        else:
            parser.add_argument(f"--{flag.name}", default=None, help=flag.help)


def merge_flags(
    config: ControllerConfig, args: argparse.Namespace, source: str = "flags"
) -> ControllerConfig:
    """Overlay the flags given explicitly in `args` (parsed by `add_flags`) onto `config`."""
    data = config.to_file_dict()
    for flag in FLAGS:
        raw = getattr(args, flag.name.replace("-", "_"), None)
        if raw is not None:
            section, key = flag.path
            data[section][key] = _flag_value(flag, raw)
    gates = getattr(args, "feature_gates", None)
    if gates:
        try:
            data["featureGates"] = {**data.get("featureGates", {}), **parse_gates(gates)}
        except FeatureGateError as err:
            raise ControllerConfigError(f"{source}: --feature-gates: {err}") from None
    try:
        return ControllerConfig.model_validate(data)
    except ValidationError as err:
        raise ControllerConfigError(_describe_flags(err, source)) from None


def parse_config(
    argv: Sequence[str], read_file: Callable[[str], str] | None = None
) -> tuple[ControllerConfig, argparse.Namespace]:
    """Parse argv (flags + optional `--config`); `read_file(path) -> str` is injected for tests."""
    parser = argparse.ArgumentParser(prog="jobset-controller", add_help=True)
    parser.add_argument("--version", action="version",
                        version=f"jobset-controller {__version__}")
    add_flags(parser)
    parser.add_argument("--kubeconfig", default=None, help="kubeconfig path (else in-cluster)")
    parser.add_argument("--master", default=None, help="API server URL overriding kubeconfig")
    args = parser.parse_args(list(argv))
    config = ControllerConfig()
    if args.config:
        reader = read_file or _read_text
        try:
            text = reader(args.config)
        except OSError as err:
            raise ControllerConfigError(
                f"--config: cannot read {args.config}: {err.strerror or err}"
            ) from None
        except UnicodeDecodeError:
            raise ControllerConfigError(
                f"--config: {args.config} is not UTF-8 text; give the path of a YAML "
                "Configuration file"
            ) from None
        config = ControllerConfig.from_yaml(text, source=args.config)
    return merge_flags(config, args), args


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _flag_value(flag: Flag, raw: str) -> Any:
    if flag.path == LEADER_ELECT_PATH:
        lowered = raw.strip().lower()
        if lowered not in {"true", "false", "1", "0"}:
            raise ControllerConfigError(f"--{flag.name}: expected true or false, got {raw!r}")
        return lowered in {"true", "1"}
    return raw


def _describe_flags(err: ValidationError, source: str) -> str:
    by_path = {flag.path: flag.name for flag in FLAGS}
    lines = []
    for problem in err.errors():
        loc = tuple(str(part) for part in problem["loc"])
        name = by_path.get((loc[0], loc[1])) if len(loc) >= 2 else None
        key = f"--{name}" if name else ".".join(loc)
        if loc and loc[0] == "featureGates":
            key = "--feature-gates"
        message = problem["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {key}: {message}")
    return "\n".join(lines)
