"""`jobset-infra validate FILE...`: check JobSet manifests before they reach a cluster.

Each YAML document (multi-document files, `-` for stdin) is checked: JobSets by `check_jobset`
(models, CRD schema with CEL rules, upstream's defaulting and validation), other Kubernetes kinds
against the pinned Kubernetes OpenAPI. One line per problem, `file (document N): field.path:
message` (documents count from 1; a location that cannot be read as a line number); exit 0 when
everything is valid, 1 otherwise, 2 for bad arguments. A directory stands for the .yaml, .yml and
.json files directly in it, as `kubectl apply -f DIR` reads it.
With `--old FILE`, a JobSet whose namespace/name is also in FILE is checked as an update of it
(immutability, what may change while suspended). Whatever the input, the command reports and
never shows a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobset_infra.api.features import FeatureGateError, FeatureGates, parse_gates

HELP = "Check JobSet manifests (YAML, multi-document, '-' for stdin) like the cluster would."


@dataclass(frozen=True)
class Options:
    """Feature gates, and the previous versions of JobSets by (namespace, name) for updates."""

    gates: FeatureGates = field(default_factory=FeatureGates)
    old: dict[tuple[str, str], Any] = field(default_factory=dict)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register FILE..., --feature-gates and --old."""
    parser.add_argument(
        "files", nargs="+", metavar="FILE",
        help="YAML/JSON file, a directory (its .yaml/.yml/.json files), or - for stdin",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        metavar="GATE=BOOL,...",
        help="JobSet feature gates, e.g. RestartJob=true,InPlaceRestart=true",
    )
    parser.add_argument(
        "--old",
        default=None,
        metavar="FILE",
        help="the JobSets as they are now: matching namespace/name are checked as updates",
    )


def run(args: argparse.Namespace) -> int:
    """Check every document of every file; print problems; 0 when all are valid."""
    gates = parse_feature_gates(args.feature_gates)
    if isinstance(gates, str):
        print(f"jobset-infra validate: --feature-gates: {gates}", file=sys.stderr)
        return 2
    old = _load_old(args.old) if args.old else {}
    if isinstance(old, str):
        print(f"jobset-infra validate: --old: {old}", file=sys.stderr)
        return 2
    options = Options(gates, old)
    problems = documents = 0
    for name in (found for given in args.files for found in manifest_files(given)):
        for line, counted in _check_file(name, options, sys.stdin.buffer):
            documents += counted
            if line:
                problems += 1
                print(line)
    plural = "" if problems == 1 else "s"
    print(f"checked {documents} document(s): {problems} problem{plural}", file=sys.stderr)
    return 0 if problems == 0 else 1


def parse_feature_gates(text: str) -> FeatureGates | str:
    """`A=true,B=false` -> the registry's gates with those values; a message when malformed."""
    try:
        return FeatureGates.of(parse_gates(text))
    except FeatureGateError as err:
        return str(err)


def check_text(
    name: str,
    data: bytes,
    gates: FeatureGates | None = None,
    old: dict[tuple[str, str], Any] | None = None,
) -> list[str]:
    """Problem lines for one file's content (the command's core, for tests and tools)."""
    options = Options(gates or FeatureGates(), old or {})
    return [line for line, _ in _check_data(name, data, options) if line]


def _load_old(name: str) -> dict[tuple[str, str], Any] | str:
    from jobset_infra.api.input_limits import LimitError
    from jobset_infra.api.yaml_io import YamlError, load_documents

    try:
        documents = load_documents(_read(name))
    except (OSError, YamlError, LimitError) as exc:
        return f"{name}: {exc}"
    return {_key(d): d for d in documents if isinstance(d, dict)}


def _key(document: dict[str, Any]) -> tuple[str, str]:
    meta = document.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    return str(meta.get("namespace") or "default"), str(meta.get("name") or "")


MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def manifest_files(name: str) -> list[str]:
    """`name`, or for a directory the manifest files directly in it (sorted, like `kubectl
    apply -f DIR`: subdirectories are not entered). A directory with none is returned as is, and
    `_check_file` says what to pass instead."""
    folder = Path(name)
    if name == "-" or not folder.is_dir():
        return [name]
    try:
        found = sorted(str(p) for p in folder.iterdir()
                       if p.suffix in MANIFEST_SUFFIXES and p.is_file())
    except OSError:
        return [name]
    return found or [name]


def _directory_hint(name: str) -> str:
    folder = Path(name)
    nested = any(p.suffix in MANIFEST_SUFFIXES for p in folder.glob("*/*"))  # stops at one
    example = f", e.g. {Path(name, '*', '*.yaml')}" if nested else ""
    return (f"{name}: a directory with no {', '.join(MANIFEST_SUFFIXES)} files in it "
            f"(subdirectories are not read); pass the manifest files{example}")


def _check_file(name: str, options: Options, stdin: Any) -> Iterator[tuple[str, int]]:
    from jobset_infra.api.input_limits import MANIFEST_LIMITS, LimitError, read_bounded

    if name != "-" and Path(name).is_dir():
        yield _directory_hint(name), 0
        return
    shown = "<stdin>" if name == "-" else name
    try:
        data = read_bounded(stdin, MANIFEST_LIMITS) if name == "-" else _read(name)
    except OSError as exc:
        yield f"{name}: cannot read: {exc.strerror or exc}", 0
        return
    except LimitError as exc:
        yield f"{shown}: {exc}", 0
        return
    yield from _check_data(shown, data, options)


def _read(name: str) -> bytes:
    """The file's bytes, at most the manifest size limit (`validate /dev/zero` ends at once)."""
    from jobset_infra.api.input_limits import MANIFEST_LIMITS, read_bounded

    with open(name, "rb") as handle:
        return read_bounded(handle, MANIFEST_LIMITS)


def _check_data(name: str, data: bytes, options: Options) -> Iterator[tuple[str, int]]:
    from jobset_infra.api.yaml_io import YamlError, load_documents

    try:
        documents = load_documents(data)
    except YamlError as exc:
        yield f"{name}: {exc}", 0
        return
    except Exception as exc:  # never a traceback, whatever the input
        yield f"{name}: cannot read as YAML: {type(exc).__name__}: {exc}", 0
        return
    if not documents:
        yield f"{name}: no YAML documents (empty input)", 0
        return
    for index, document in enumerate(documents, start=1):
        lines = _check_document(document, options)
        yield "", 1
        for line in lines:
            yield f"{name} (document {index}): {line}", 0


def _check_document(document: Any, options: Options) -> list[str]:
    try:
        errors = _errors(document, options)
        return [str(e) if e.path else f"<document>: {e.message}" for e in errors]
    except RecursionError:
        return ["<document>: nested too deeply to check"]
    except Exception as exc:  # report, never crash
        return [f"<document>: internal error while checking: {type(exc).__name__}: {exc}"]


def _errors(document: Any, options: Options) -> list[Any]:
    from jobset_infra.api import constants as c
    from jobset_infra.api.check import check_jobset
    from jobset_infra.api.errors import FieldError
    from jobset_infra.api.k8s_openapi import K8S_VERSION, validate_builtin
    from jobset_infra.api.object_meta import metadata_errors

    if not isinstance(document, dict):
        return [FieldError("", f"a manifest must be a mapping, got {type(document).__name__}")]
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if (api_version, kind) == (c.API_VERSION, c.KIND) or str(api_version).startswith(c.GROUP):
        old = options.old.get(_key(document))
        return check_jobset(document, old, feature_gates=options.gates).errors
    errors = validate_builtin(document)
    if errors and errors[0].path == "kind" and errors[0].message.startswith("no kind"):
        return [
            FieldError(
                "kind",
                f"{kind!r} ({api_version!r}) is neither a JobSet nor a Kubernetes {K8S_VERSION} "
                "built-in kind",
            )
        ]
    return metadata_errors(document.get("metadata"), builtin=True) + errors
