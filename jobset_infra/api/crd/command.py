"""`jobset-infra crd`: write the generated JobSet CRD, or `--check` the committed one."""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path


def default_path() -> Path:
    """Where the CRD is committed: jobset_infra/api/crd/jobset.x-k8s.io_jobsets.yaml."""
    from jobset_infra.api.crd.generate import CRD_RESOURCE

    return Path(__file__).parent / CRD_RESOURCE


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register --check and --output."""
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit 1 if the committed CRD differs from a fresh generation",
    )
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help="file to write or check (default: the packaged CRD); '-' writes to stdout",
    )


def run(args: argparse.Namespace) -> int:
    """Write or check the CRD."""
    from jobset_infra.api.crd.generate import render_crd

    fresh = render_crd()
    if args.output == "-":
        sys.stdout.write(fresh)
        return 0
    path = Path(args.output) if args.output else default_path()
    if args.check:
        return _check(path, fresh)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(fresh, encoding="utf-8")
    except OSError as exc:
        print(f"{path}: cannot write the CRD ({exc.strerror or exc}); choose another --output",
              file=sys.stderr)
        return 1
    print(f"wrote {path} ({len(fresh.splitlines())} lines)")
    return 0


def _check(path: Path, fresh: str) -> int:
    try:
        committed = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(
            f"{path}: cannot read the committed CRD ({exc}); run: jobset-infra crd", file=sys.stderr
        )
        return 1
    if committed == fresh:
        print(f"{path} is up to date")
        return 0
    diff = difflib.unified_diff(
        committed.splitlines(), fresh.splitlines(), "committed", "generated", lineterm="", n=1
    )
    lines = list(diff)
    print(
        f"{path} is out of date with the models ({len(lines)} diff lines); "
        "run: jobset-infra crd, and commit the result",
        file=sys.stderr,
    )
    for line in lines[:40]:
        print(line, file=sys.stderr)
    return 1
