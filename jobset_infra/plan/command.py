"""`jobset-infra plan --stack NAME [--out DIR]`: what `pulumi up` would create, with no cloud.

Runs the stack's Pulumi program (`stacks/__main__.py`) with its committed `Pulumi.<stack>.yaml`
under Pulumi's mocks (no Pulumi CLI, no credentials, no network), prints the resource tree as
`pulumi preview` draws it, and writes every Kubernetes object it would apply as YAML under DIR.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

HELP = "show what `pulumi up` would create for a stack, offline (no cloud, no Pulumi CLI)"

PROJECT = "jobset-infra"


class PlanError(Exception):
    """A problem with the stack or project files; the message says what and how to fix it."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stack", "-s", required=True, help="stack name (stacks/Pulumi.<NAME>.yaml)"
    )
    parser.add_argument("--out", type=Path, help="write the Kubernetes objects as YAML under DIR")
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


def _qualified(key: str, project: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def _as_config_string(value: Any) -> str:
    # Pulumi passes structured values as JSON text (read back with Config.get_object).
    if isinstance(value, str):
        return value
    return json.dumps(value)


_WRITTEN = re.compile(r"\d{3}-[a-z0-9.-]+\.yaml")


def write_objects(objects: list[dict[str, Any]], out: Path) -> list[Path]:
    """Write one YAML file per object, `NNN-kind-name.yaml` in apply order; return the paths.

    Files an earlier plan wrote there are removed first: `kubectl apply -f DIR` must not pick up
    an object the stack no longer has. Other files in DIR are left alone.
    """
    try:
        return _write_objects(objects, out)
    except OSError as err:  # a file in the way, a read-only or missing parent: say so
        raise PlanError(
            f"--out {out}: cannot write there ({err.strerror or err}: {err.filename or out}); "
            "choose a folder you can write to"
        ) from None


def check_out(out: Path) -> None:
    """Raise PlanError now if `--out` could not be written later, so a typo does not cost a plan.

    Nothing is created: `out` must be a writable folder, or not exist under a writable folder
    (a probe file is made and removed there).
    """
    existing = next(p for p in [out, *out.parents] if p.exists() or p == p.parent)  # "." or "/"
    problem = None
    if not existing.is_dir():
        what = "is a file" if existing == out else f"{existing} is a file"
        problem = f"{what}, not a folder"
    else:
        try:
            with tempfile.TemporaryFile(dir=existing):
                pass
        except OSError as err:
            problem = f"cannot create files in {existing} ({err.strerror or err})"
    if problem:
        raise PlanError(f"--out {out}: {problem}; choose a folder you can write to")


def _write_objects(objects: list[dict[str, Any]], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.iterdir():
        if stale.is_file() and _WRITTEN.fullmatch(stale.name):
            stale.unlink()
    paths = []
    for index, obj in enumerate(objects):
        meta = obj.get("metadata") or {}
        label = f"{obj.get('kind', 'object')}-{meta.get('name', index)}".lower()
        slug = re.sub(r"[^a-z0-9.-]+", "-", label)
        path = out / f"{index:03d}-{slug}.yaml"
        path.write_text(yaml.safe_dump(_readable(obj), sort_keys=False))
        paths.append(path)
    return paths


HELM_DIR = "helm"  # below DIR: `kubectl apply -f DIR` does not read subfolders


def write_helm_values(releases: list[Any], out: Path) -> list[str]:
    """Write each Helm release's values to DIR/helm/<release>.values.yaml; return the notes that
    say how to install them, since `kubectl apply -f DIR` leaves the releases out."""
    try:
        folder = out / HELM_DIR
        for stale in folder.glob("*.values.yaml") if folder.is_dir() else ():
            stale.unlink()
        notes = []
        for release in releases:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{release.name}.values.yaml"
            path.write_text(yaml.dump(_sorted(release.values), Dumper=_BlockDumper))
            notes.append(
                f"note: `kubectl apply -f {out}` leaves out Helm release {release.name} "
                f"({release.chart} {release.version}); install it first, its webhooks must "
                f"serve before its objects are created: {release.install_command(str(path))}"
            )
        return notes
    except OSError as err:
        raise PlanError(
            f"--out {out}: cannot write there ({err.strerror or err}: {err.filename or out}); "
            "choose a folder you can write to"
        ) from None


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (an embedded config file) as `|` blocks, readable in the values."""


_BlockDumper.add_representer(
    str, lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)
)


def _readable(obj: dict[str, Any]) -> dict[str, Any]:
    """Return `obj` with apiVersion, kind, metadata first and every nested mapping sorted.

    Pulumi hands inputs back in no fixed order; sorted output makes two plans diffable.
    """
    head = [key for key in ("apiVersion", "kind", "metadata") if key in obj]
    rest = sorted(key for key in obj if key not in head)
    return {key: _sorted(obj[key]) for key in [*head, *rest]}


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def run(args: argparse.Namespace) -> int:
    try:
        return _plan(args)
    except PlanError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _plan(args: argparse.Namespace) -> int:
    project_dir = args.project_dir or find_project_dir(Path.cwd())
    stack_dir = project_dir / "stacks"
    stack_file = stack_dir / f"Pulumi.{args.stack}.yaml"
    if not stack_file.is_file():
        known = ", ".join(available_stacks(stack_dir)) or "none"
        raise PlanError(f"no stack {args.stack!r}: {stack_file} does not exist (stacks: {known})")
    config = stack_config(stack_file)
    if args.out is not None:
        check_out(args.out)

    print(f"Planning stack {args.stack} offline (Pulumi mocks, no cloud)...", file=sys.stderr)
    started = time.monotonic()
    # Heavy imports only now: `jobset-infra validate` must not pay for Pulumi.
    _require_pulumi()
    from jobset_infra.plan.offline import ProgramError, run_offline
    from jobset_infra.plan.preview import (
        apply_order,
        helm_releases,
        kubernetes_objects,
        render_tree,
    )

    try:
        result = run_offline(
            stack_dir / "__main__.py",
            project=PROJECT,
            stack=args.stack,
            config=config,
            mocks=_progress_mocks(live=sys.stderr.isatty()),
        )
    except ProgramError as exc:
        _end_progress(live=sys.stderr.isatty())
        for line in str(exc).splitlines() or ["the program failed"]:
            print(f"error: {line}", file=sys.stderr)
        return 1
    _end_progress(live=sys.stderr.isatty())
    # One stable order for the tree and the files, whatever order the engine registered in.
    registrations = apply_order(result.registrations)
    print(render_tree(registrations, PROJECT, args.stack))
    for message in result.warnings():
        print(f"warning: {message}", file=sys.stderr)
    objects = kubernetes_objects(registrations)
    print(f"Validating {len(objects)} Kubernetes objects...", file=sys.stderr)
    problems = invalid_objects(objects)
    if args.out is not None:
        paths = write_objects(objects, args.out)
        print(f"Wrote {len(paths)} Kubernetes objects to {args.out}", file=sys.stderr)
        for note in write_helm_values(helm_releases(registrations), args.out):
            print(note, file=sys.stderr)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    elapsed = time.monotonic() - started
    if problems:
        print(f"Planned in {elapsed:.1f}s: {len(problems)} problem(s).", file=sys.stderr)
        return 1
    print(f"Planned in {elapsed:.1f}s; every object validates.", file=sys.stderr)
    return 0


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
