"""`jobset-infra plan --stack NAME [--out DIR] [-o json] [--kubeconfig PATH [--context C]]`:
what `pulumi up` would create, offline.

Runs the stack's Pulumi program (`stacks/__main__.py`) with its committed `Pulumi.<stack>.yaml`
under Pulumi's mocks (no Pulumi CLI, no credentials, no network), prints the resource tree as
`pulumi preview` draws it (or, with `-o json`, one JSON object: resources, objects, releases,
warnings, problems), and writes every Kubernetes object it would apply as YAML under DIR
(`plan.out_folder`: only the files it wrote itself are ever replaced).

With `--kubeconfig`, the one thing read from a cluster is what `pulumi preview` reads there:
the program's pool-change guard (`stack.pool_drain`, docs/resilience.md) reads that cluster's
JobSets, Jobs, Workloads, Nodes and pool record, and a pool change under a running JobSet
fails the plan as it fails preview, naming them. The path reaches the program through
`PLAN_KUBECONFIG_ENV` for the run (the program is run by path, not imported).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PROJECT = "jobset-infra"
# `stack.program`'s names (a sibling layer, so not imported; tests/plan checks they match).
PLAN_KUBECONFIG_ENV = "JOBSET_INFRA_PLAN_KUBECONFIG"
PLAN_CONTEXT_ENV = "JOBSET_INFRA_PLAN_CONTEXT"


class PlanError(Exception):
    """A problem with the stack or project files; the message says what and how to fix it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stack", "-s", required=True, help="stack name (stacks/Pulumi.<NAME>.yaml)"
    )
    parser.add_argument("--out", type=Path, help="write the Kubernetes objects as YAML under DIR")
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text",
        help="text: the tree (default); json: one object on stdout for scripts",
    )
    parser.add_argument(
        "--kubeconfig", type=Path, default=None,
        help="check against this live cluster, as `pulumi preview` does: the running JobSets a "
             "pool change of this stack would kill (read-only)",
    )
    parser.add_argument("--context", default=None,
                        help="the kubeconfig context to use (default: its current one)")
    parser.add_argument(
        "--project-dir",
        type=Path,
        default=None,
        help="folder holding Pulumi.yaml (default: found from the current folder upwards)",
    )


def find_project_dir(start: Path) -> Path:
    """Return the nearest folder at or above `start` holding this project's Pulumi.yaml."""
    for folder in [start, *start.parents]:
        if (folder / "Pulumi.yaml").is_file():
            return folder
    bundled = Path(__file__).resolve().parents[2]
    if (bundled / "Pulumi.yaml").is_file():
        return bundled
    raise PlanError(
        f"no Pulumi.yaml in {start} or above: "
        "run from the jobset-infra checkout or pass --project-dir"
    )


def stack_file(project_dir: Path, stack: str) -> Path:
    """Return the committed `stacks/Pulumi.<stack>.yaml`; PlanError listing the stacks if none."""
    stack_dir = project_dir / "stacks"
    path = stack_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        known = ", ".join(available_stacks(stack_dir)) or "none"
        raise PlanError(f"no stack {stack!r}: {path} does not exist (stacks: {known})")
    return path


def available_stacks(stack_dir: Path) -> list[str]:
    """Return the stack names that have a committed `Pulumi.<stack>.yaml`."""
    names = (re.fullmatch(r"Pulumi\.(.+)\.yaml", p.name) for p in stack_dir.glob("Pulumi.*.yaml"))
    return sorted(m.group(1) for m in names if m)


def stack_config(stack_file: Path, project: str = PROJECT) -> dict[str, str]:
    """Return a stack file's config as Pulumi hands it to a program: `project:key` -> string.

    The file is read like any manifest (`api.input_limits`: at most 8 MiB, bounded YAML), and
    anything that is not one YAML mapping in UTF-8 is a PlanError naming the file.
    """
    from jobset_infra.api.input_limits import MANIFEST_LIMITS, LimitError, read_bounded
    from jobset_infra.api.yaml_io import YamlError, load_documents

    try:
        with stack_file.open("rb") as handle:
            documents = load_documents(read_bounded(handle, MANIFEST_LIMITS))
    except OSError as exc:
        raise PlanError(f"{stack_file}: cannot read: {exc.strerror or exc}") from None
    except (YamlError, LimitError) as exc:
        raise PlanError(f"{stack_file}: {exc}") from None
    if len(documents) > 1:
        raise PlanError(f"{stack_file}: {len(documents)} YAML documents; a stack file has one")
    document = documents[0] if documents else {}
    if not isinstance(document, dict):
        raise PlanError(f"{stack_file}: expected a mapping with a `config:` key")
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise PlanError(f"{stack_file}: `config` must be a mapping of keys to values")
    return {_qualified(str(k), project): _as_config_string(v) for k, v in config.items()}


def project_config(project_file: Path, project: str = PROJECT) -> dict[str, str]:
    """The config Pulumi.yaml gives every stack, as Pulumi does: a key's `value`, else its
    declared `default` (a stack file's own value wins; `pulumi new` templates keep structured
    values here, since it prompts for strings only). Nothing when the file has no `config:`."""
    from jobset_infra.api.yaml_io import YamlError, load_documents

    try:
        documents = load_documents(project_file.read_bytes())
    except OSError as exc:
        raise PlanError(f"{project_file}: cannot read: {exc.strerror or exc}") from None
    except YamlError as exc:
        raise PlanError(f"{project_file}: {exc}") from None
    document = documents[0] if documents else {}
    declared = document.get("config") if isinstance(document, dict) else None
    if not isinstance(declared, dict):
        return {}
    given = {key: entry.get("value", entry.get("default")) for key, entry in declared.items()
             if isinstance(entry, dict)}
    return {_qualified(str(k), project): _as_config_string(v) for k, v in given.items()
            if v is not None and not str(k).startswith("pulumi:")}


def _qualified(key: str, project: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def _as_config_string(value: Any) -> str:
    # Pulumi passes structured values as JSON text (read back with Config.get_object).
    if isinstance(value, str):
        return value
    return json.dumps(value)


def run(args: argparse.Namespace) -> int:
    as_json = getattr(args, "output", "text") == "json"
    try:
        report = _plan(args)
    except PlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        report = {"stack": args.stack, "valid": False, "errors": [str(exc)]}
    tree = report.pop("tree", None)
    if as_json:
        print(json.dumps(report, indent=2))
    elif tree:
        print(tree)
    return 0 if report["valid"] else 1


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    """Plan the stack; print progress, warnings and problems on stderr; return the report."""
    from jobset_infra.plan.out_folder import OutFolderError, check_out, write_plan

    project_dir = args.project_dir or find_project_dir(Path.cwd())
    stack_dir = project_dir / "stacks"
    config = {**project_config(project_dir / "Pulumi.yaml"),
              **stack_config(stack_file(project_dir, args.stack))}
    try:
        if args.out is not None:
            check_out(args.out)
    except OutFolderError as exc:
        raise PlanError(str(exc)) from None

    live = _live_cluster(args)
    where = f"; pool changes checked against {live[0]}" if live else ""
    print(f"Planning stack {args.stack} offline (Pulumi mocks, no cloud{where})...",
          file=sys.stderr)
    started = time.monotonic()
    # Heavy imports only now: `jobset-infra validate` must not pay for Pulumi.
    _require_pulumi()
    from jobset_infra.plan.offline import ProgramError, run_offline
    from jobset_infra.plan.preview import (
        apply_order,
        helm_releases,
        key_inputs,
        kubernetes_objects,
        render_tree,
    )

    try:
        with _live_env(live):
            result = run_offline(
                stack_dir / "__main__.py",
                project=PROJECT,
                stack=args.stack,
                config=config,
                mocks=_progress_mocks(live=sys.stderr.isatty()),
            )
    except ProgramError as exc:
        _end_progress(live=sys.stderr.isatty())
        errors = str(exc).splitlines() or ["the program failed"]
        for line in errors:
            print(f"error: {line}", file=sys.stderr)
        return {"stack": args.stack, "valid": False, "errors": errors}
    _end_progress(live=sys.stderr.isatty())
    # One stable order for the tree and the files, whatever order the engine registered in.
    registrations = apply_order(result.registrations)
    for message in result.warnings():
        print(f"warning: {message}", file=sys.stderr)
    objects = kubernetes_objects(registrations)
    releases = helm_releases(registrations)
    print(f"Validating {len(objects)} Kubernetes objects...", file=sys.stderr)
    problems = invalid_objects(objects)
    written: list[str] = []
    if args.out is not None:
        try:
            files = write_plan(objects, releases, args.out)
        except OutFolderError as exc:
            raise PlanError(str(exc)) from None
        written = [str(path) for path in (*files.objects, *files.values)]
        print(f"Wrote {len(files.objects)} Kubernetes objects to {args.out}", file=sys.stderr)
        for note in files.notes:
            print(note, file=sys.stderr)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    elapsed = time.monotonic() - started
    if problems:
        print(f"Planned in {elapsed:.1f}s: {len(problems)} problem(s).", file=sys.stderr)
    else:
        print(f"Planned in {elapsed:.1f}s; every object validates.", file=sys.stderr)
    by_urn = {reg.urn: reg for reg in registrations}
    return {
        "stack": args.stack,
        "valid": not problems,
        "errors": problems,
        "warnings": result.warnings(),
        "resources": [
            {"type": reg.type, "name": reg.name,
             "parent": by_urn[reg.parent].name if reg.parent in by_urn else None,
             "keyInputs": key_inputs(reg)}
            for reg in registrations
        ],
        "objects": objects,
        "helmReleases": [{"name": r.name, "chart": r.chart, "version": r.version,
                          "namespace": r.namespace} for r in releases],
        "written": written,
        "tree": render_tree(registrations, PROJECT, args.stack),
    }


def _live_cluster(args: argparse.Namespace) -> tuple[str, str | None] | None:
    """Return the kubeconfig file (absolute) and context `--kubeconfig` names, or None."""
    path: Path | None = getattr(args, "kubeconfig", None)
    context: str | None = getattr(args, "context", None)
    if path is None:
        if context is not None:
            raise PlanError("--context needs --kubeconfig (the file whose context it names)")
        return None
    resolved = path.expanduser().resolve()
    if not resolved.is_file():
        raise PlanError(f"--kubeconfig {path}: no such file; give the kubeconfig of the cluster "
                        "the stack deploys to (for a gke stack: pulumi stack output kubeconfig "
                        "--show-secrets > FILE, or gcloud container clusters get-credentials)")
    return str(resolved), context


@contextlib.contextmanager
def _live_env(live: tuple[str, str | None] | None) -> Iterator[None]:
    """Tell the program which cluster its pool guard reads, for this run only."""
    saved = {name: os.environ.get(name) for name in (PLAN_KUBECONFIG_ENV, PLAN_CONTEXT_ENV)}
    for name in saved:
        os.environ.pop(name, None)
    if live is not None:
        os.environ[PLAN_KUBECONFIG_ENV] = live[0]
        if live[1]:
            os.environ[PLAN_CONTEXT_ENV] = live[1]
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


PLATFORM_SDKS = ("pulumi", "pulumi_kubernetes", "pulumi_gcp", "pulumi_docker_build")


def _require_pulumi() -> None:
    """Raise PlanError naming the extra to install when a Pulumi SDK is missing.

    The base install is the controller's; the SDKs come with `jobset-infra[platform]`.
    """
    import importlib.util

    missing = [name for name in PLATFORM_SDKS if importlib.util.find_spec(name) is None]
    if missing:
        raise PlanError(
            f"`plan` runs the Pulumi program, which needs the Pulumi SDKs ({', '.join(missing)} "
            "missing): pip install 'jobset-infra[platform]' (or -e '.[platform]' in a checkout)"
        )


def _progress_mocks(*, live: bool) -> Any:
    """Return the offline mocks, counting resources on one live stderr line when it is a TTY."""
    import threading

    from jobset_infra.plan.offline import OfflineMocks

    class ProgressMocks(OfflineMocks):
        created = 0
        lock = threading.Lock()  # the engine calls mocks from several threads

        def new_resource(self, args: Any) -> tuple[str | None, dict[str, Any]]:
            with self.lock:
                self.created += 1
                if live:
                    line = f"\r  {self.created} resources..."
                    print(line, end="", file=sys.stderr, flush=True)
            return super().new_resource(args)

    return ProgressMocks()


def _end_progress(*, live: bool) -> None:
    if live:
        print("\r\033[K", end="", file=sys.stderr, flush=True)  # clear the progress line


def invalid_objects(objects: list[dict[str, Any]]) -> list[str]:
    """Return one line per problem, `<Kind> <namespace/name>: <field>: <message>`."""
    from jobset_infra.plan.preview import object_problems

    lines = []
    for obj in objects:
        meta = obj.get("metadata") or {}
        where = "/".join(str(p) for p in (meta.get("namespace"), meta.get("name")) if p)
        lines += [f"{obj.get('kind', 'object')} {where}: {p}" for p in object_problems(obj)]
    return lines
