"""`jobset-infra validate FILE...`: check JobSet manifests before they reach a cluster.

Each YAML document (multi-document files, `-` for stdin) is checked: JobSets by `check_jobset`
(models, CRD schema with CEL rules, upstream's defaulting and validation), other Kubernetes kinds
against the pinned Kubernetes OpenAPI. One line per problem, `file (document N): field.path:
message` (documents count from 1; a location that cannot be read as a line number), or with
`-o json` one JSON object on stdout for scripts; exit 0 when everything is valid, 1 otherwise,
2 for bad arguments. A directory stands for the .yaml, .yml and .json files directly in it, as
`kubectl apply -f DIR` reads it. Kueue's kinds (`kueue.x-k8s.io`) are checked against Kueue's
own CRDs (`manifests.kueue_schema`), so everything `jobset-infra plan` writes validates here.
With `--old FILE`, a JobSet whose namespace/name is also in FILE is checked as an update of it
(immutability, what may change while suspended). With `--stack NAME`, each JobSet is also checked
against that stack (stacks/Pulumi.<NAME>.yaml, read as `plan` reads it): its TPU requests (chips
per pod, pods per slice, node selectors, the placement mode's topology annotations) against the
stack's pools and its queue label against the stack's LocalQueue, with the sentences the JobSet
component gives at preview (`stack.fit`). Whatever the input, the command reports and never
shows a traceback.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobset_infra.api.features import FeatureGateError, FeatureGates, parse_gates


@dataclass(frozen=True)
class Problem:
    """One problem: where (file, document from 1, field path) and what."""

    file: str
    message: str
    document: int | None = None
    field: str = ""

    def line(self) -> str:
        where = self.file if self.document is None else f"{self.file} (document {self.document})"
        if self.document is None:
            return f"{where}: {self.message}"
        return f"{where}: {self.field or '<document>'}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file, "document": self.document, "field": self.field,
                "message": self.message}


@dataclass(frozen=True)
class Options:
    """Feature gates, and the previous versions of JobSets by (namespace, name) for updates."""

    gates: FeatureGates = field(default_factory=FeatureGates)
    old: dict[tuple[str, str], Any] = field(default_factory=dict)
    stack: tuple[str, Callable[[Mapping[str, Any]], list[str]]] | None = None
    """The stack's name and its check of one JobSet (`--stack`)."""
    settle: bool = False
    """The command's own process: once the checking modules are loaded, `_settle_heap`."""


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
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text",
        help="text: one line per problem (default); json: one object on stdout for scripts",
    )
    parser.add_argument(
        "--stack", default=None, metavar="NAME",
        help="also check JobSets against that stack's TPU pools, placement and queue "
             "(stacks/Pulumi.<NAME>.yaml)",
    )
    parser.add_argument(
        "--project-dir", type=Path, default=None,
        help="folder holding Pulumi.yaml (with --stack; default: found from the current folder)",
    )


def run(args: argparse.Namespace) -> int:
    """Check every document of every file; print problems; 0 when all are valid."""
    # Pydantic looks for plugins (observers of validation) in every installed distribution's
    # entry points when it builds the first model: 20-25 ms of this command's 0.5 s, for
    # plugins a one-shot check has no use for. A user who sets the variable keeps their value,
    # and a caller in the same process gets its environment back.
    plugins_set = _PLUGINS in os.environ
    os.environ.setdefault(_PLUGINS, "__all__")
    collecting = gc.isenabled()
    gc.disable()  # until the checking modules are loaded (`_settle_heap`)
    try:
        return _run(args)
    finally:
        if collecting:
            gc.enable()
        else:
            gc.disable()
        if not plugins_set:
            os.environ.pop(_PLUGINS, None)


_PLUGINS = "PYDANTIC_DISABLE_PLUGINS"


def _run(args: argparse.Namespace) -> int:
    gates = parse_feature_gates(args.feature_gates)
    if isinstance(gates, str):
        print(f"jobset-infra validate: --feature-gates: {gates}", file=sys.stderr)
        return 2
    old = _load_old(args.old) if args.old else {}
    if isinstance(old, str):
        print(f"jobset-infra validate: --old: {old}", file=sys.stderr)
        return 2
    stack = _stack_check(args.stack, getattr(args, "project_dir", None)) if getattr(
        args, "stack", None) else None
    if isinstance(stack, str):
        print(f"jobset-infra validate: --stack: {stack}", file=sys.stderr)
        return 2
    options = Options(gates, old, stack, settle=True)
    problems: list[Problem] = []
    documents = 0
    as_json = getattr(args, "output", "text") == "json"
    for name in (found for given in args.files for found in manifest_files(given)):
        for problem, counted in _check_file(name, options, sys.stdin.buffer):
            documents += counted
            if problem is not None:
                problems.append(problem)
                if not as_json:
                    print(problem.line())
    if as_json:
        print(json.dumps({"valid": not problems, "documents": documents,
                          "problems": [p.as_json() for p in problems]}, indent=2))
    else:
        plural = "" if len(problems) == 1 else "s"
        print(f"checked {documents} document(s): {len(problems)} problem{plural}",
              file=sys.stderr)
    return 0 if not problems else 1


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
    return [p.line() for p, _ in _check_data(name, data, options) if p is not None]


def _stack_check(
    name: str, project_dir: Path | None
) -> tuple[str, Callable[[Mapping[str, Any]], list[str]]] | str:
    """The stack's check of one JobSet, or why the stack cannot be read."""
    from jobset_infra.plan.command import PlanError, find_project_dir, stack_config, stack_file
    from jobset_infra.stack.config import StackConfigError, load_stack_config
    from jobset_infra.stack.fit import stack_jobset_problems

    try:
        path = stack_file(project_dir or find_project_dir(Path.cwd()), name)
        config = load_stack_config(stack_config(path))
    except PlanError as exc:
        return str(exc)
    except StackConfigError as exc:
        return f"stack {name!r} does not plan (run `jobset-infra plan --stack {name}`): " + \
            "; ".join(exc.problems)
    return name, lambda jobset: stack_jobset_problems(config, jobset)


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


def _check_file(name: str, options: Options, stdin: Any) -> Iterator[tuple[Problem | None, int]]:
    from jobset_infra.api.input_limits import MANIFEST_LIMITS, LimitError, read_bounded

    if name != "-" and Path(name).is_dir():
        yield Problem(name, _directory_hint(name).removeprefix(f"{name}: ")), 0
        return
    shown = "<stdin>" if name == "-" else name
    try:
        data = read_bounded(stdin, MANIFEST_LIMITS) if name == "-" else _read(name)
    except OSError as exc:
        yield Problem(name, f"cannot read: {exc.strerror or exc}"), 0
        return
    except LimitError as exc:
        yield Problem(shown, str(exc)), 0
        return
    yield from _check_data(shown, data, options)


def _read(name: str) -> bytes:
    """The file's bytes, at most the manifest size limit (`validate /dev/zero` ends at once)."""
    from jobset_infra.api.input_limits import MANIFEST_LIMITS, read_bounded

    with open(name, "rb") as handle:
        return read_bounded(handle, MANIFEST_LIMITS)


def _check_data(name: str, data: bytes, options: Options
                ) -> Iterator[tuple[Problem | None, int]]:
    from jobset_infra.api.yaml_io import YamlError, load_documents

    try:
        documents = load_documents(data)
    except YamlError as exc:
        yield Problem(name, str(exc)), 0
        return
    except Exception as exc:  # never a traceback, whatever the input
        yield Problem(name, f"cannot read as YAML: {type(exc).__name__}: {exc}"), 0
        return
    if not documents:
        yield Problem(name, "no YAML documents (empty input)"), 0
        return
    for index, document in enumerate(documents, start=1):
        found = _check_document(document, options)
        yield None, 1
        for path, message in found:
            yield Problem(name, message, index, path), 0


def _check_document(document: Any, options: Options) -> list[tuple[str, str]]:
    """(field path, message) of every problem; "" for the document as a whole."""
    try:
        return [(e.path, e.message) for e in _errors(document, options)]
    except RecursionError:
        return [("", "nested too deeply to check")]
    except Exception as exc:  # report, never crash
        return [("", f"internal error while checking: {type(exc).__name__}: {exc}")]


def _errors(document: Any, options: Options) -> list[Any]:
    from jobset_infra.api import constants as c
    from jobset_infra.api.check import check_jobset
    from jobset_infra.api.errors import FieldError
    from jobset_infra.api.k8s_openapi import K8S_VERSION, validate_builtin
    from jobset_infra.api.object_meta import metadata_errors

    if options.settle:
        _settle_heap()
    if not isinstance(document, dict):
        return [FieldError("", f"a manifest must be a mapping, got {type(document).__name__}")]
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if (api_version, kind) == (c.API_VERSION, c.KIND) or str(api_version).startswith(c.GROUP):
        old = options.old.get(_key(document))
        errors = check_jobset(document, old, feature_gates=options.gates).errors
        if options.stack is not None and not errors:
            name, check = options.stack
            errors = [FieldError(f"stack {name}", line) for line in check(document)]
        return errors
    if str(api_version).partition("/")[0] == c.KUEUE_GROUP:
        from jobset_infra.api.kueue_crds import kueue_field_errors

        return kueue_field_errors(document)
    errors = validate_builtin(document)
    if errors and errors[0].path == "kind" and errors[0].message.startswith("no kind"):
        return [
            FieldError(
                "kind",
                f"{kind!r} ({api_version!r}) is neither a JobSet, a Kueue kind nor a Kubernetes "
                f"{K8S_VERSION} built-in kind",
            )
        ]
    return metadata_errors(document.get("metadata"), builtin=True) + errors


@functools.cache
def _settle_heap() -> None:
    """Put what the checking modules loaded (the models, schemas, rules) out of the cyclic
    collector's sight: it lives as long as the process, and the collections that unpickling
    the CEL trees sets off walked it again each time, half of checking one JobSet's CPU
    (0.03 s, 2026-12-07). Only for the command's process (`run`), never a caller's heap.

    `run` keeps the collector off until then: loading pydantic, celpy and the models makes
    about 65,000 tracked objects, none of them garbage, and the 115 collections they set off
    walked them again and again (0.04 s of a run's 0.5-0.7 s CPU at load 20, 2026-12-07);
    once they are frozen, collections see only what checking makes (35 of them, 0.01 s)."""
    gc.freeze()
    gc.enable()
