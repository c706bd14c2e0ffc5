"""`plan --out DIR`: the Kubernetes objects as YAML files, and a record of which files are ours.

`write_plan(objects, releases, out)` writes one `NNN-kind-name.yaml` per object in apply order,
each Helm release's values under `helm/`, and `DIR/.jobset-infra-plan` (JSON, no file extension,
so neither `kubectl apply -f DIR` nor `jobset-infra validate DIR` reads it) listing exactly the
files it wrote. The next plan removes those files and only those: `kubectl apply -f DIR` never
picks up an object the stack no longer has, and a file of yours (`999-my-notes.yaml`,
`README.md`) is never touched. A file plan would write that it did not write before is refused
instead of overwritten.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol

import yaml

__all__ = ["RECORD", "OutFolderError", "PlanFiles", "check_out", "write_plan"]

RECORD: Final = ".jobset-infra-plan"
"""The file naming what the last plan wrote (JSON; no extension kubectl or validate would read)."""
HELM_DIR: Final = "helm"  # below DIR: `kubectl apply -f DIR` does not read subfolders


class OutFolderError(Exception):
    """`--out` cannot be written as asked; the message says why and what to do."""


class Release(Protocol):
    """What the values file and its note need of a Helm release (plan.preview.HelmRelease)."""

    @property
    def name(self) -> str: ...

    @property
    def chart(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def values(self) -> Any: ...

    def install_command(self, values_file: str) -> str: ...


@dataclass(frozen=True)
class PlanFiles:
    """What one plan wrote: object files (apply order), values files, notes for the user."""

    objects: tuple[Path, ...]
    values: tuple[Path, ...]
    notes: tuple[str, ...]


def check_out(out: Path) -> None:
    """Raise OutFolderError now if `out` could not be written later, so a typo does not cost a
    plan. Nothing is created: `out` must be a writable folder, or not exist under a writable
    folder (a probe file is made and removed there)."""
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
        raise OutFolderError(f"--out {out}: {problem}; choose a folder you can write to")


def written_before(out: Path) -> list[str]:
    """The files (relative to `out`) the last plan recorded; none if it recorded nothing."""
    if not (out / RECORD).is_file():
        return []  # a new folder (or a file in the way, which writing then names)
    try:
        record = json.loads((out / RECORD).read_text())
    except (OSError, ValueError) as err:
        raise OutFolderError(f"--out {out}: {RECORD} is not plan's record ({err}); remove it "
                             "(and the files it listed) or choose another folder") from None
    files = record.get("files") if isinstance(record, dict) else None
    if not isinstance(files, list) or not all(_is_own_name(f) for f in files):
        raise OutFolderError(f"--out {out}: {RECORD} is not plan's record; remove it (and the "
                             "files it listed) or choose another folder")
    return list(files)


def _is_own_name(name: object) -> bool:
    """A name plan writes: `NNN-...yaml` or `helm/<release>.values.yaml`, nothing outside."""
    return isinstance(name, str) and bool(
        re.fullmatch(r"\d{3}-[a-z0-9.-]+\.yaml|helm/[A-Za-z0-9._-]+\.values\.yaml", name))


def object_file_names(objects: Sequence[dict[str, Any]]) -> list[str]:
    """`NNN-kind-name.yaml` for each object, NNN its place in apply order."""
    names = []
    for index, obj in enumerate(objects):
        meta = obj.get("metadata") or {}
        label = f"{obj.get('kind', 'object')}-{meta.get('name', index)}".lower()
        names.append(f"{index:03d}-{re.sub(r'[^a-z0-9.-]+', '-', label)}.yaml")
    return names


def write_plan(objects: Sequence[dict[str, Any]], releases: Sequence[Release],
               out: Path) -> PlanFiles:
    """Replace the last plan's files in `out` with this plan's; return what was written."""
    try:
        return _write_plan(objects, releases, out)
    except OSError as err:  # a file in the way, a read-only or missing parent: say so
        raise OutFolderError(
            f"--out {out}: cannot write there ({err.strerror or err}: {err.filename or out}); "
            "choose a folder you can write to"
        ) from None


def _write_plan(objects: Sequence[dict[str, Any]], releases: Sequence[Release],
                out: Path) -> PlanFiles:
    ours = set(written_before(out))
    names = object_file_names(objects)
    value_names = [f"{HELM_DIR}/{release.name}.values.yaml" for release in releases]
    foreign = [n for n in [*names, *value_names] if n not in ours and (out / n).exists()]
    if foreign:
        raise OutFolderError(
            f"--out {out}: {', '.join(foreign)} exist(s) but an earlier plan did not write "
            f"them ({RECORD} does not list them); move them or choose another folder")
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted(ours):
        (out / name).unlink(missing_ok=True)
    paths = []
    for name, obj in zip(names, objects, strict=True):
        path = out / name
        path.write_text(yaml.safe_dump(_readable(obj), sort_keys=False))
        paths.append(path)
    values, notes = _write_values(releases, out)
    record = {"writtenBy": "jobset-infra plan", "files": [*names, *value_names]}
    (out / RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return PlanFiles(tuple(paths), tuple(values), tuple(notes))


def _write_values(releases: Sequence[Release], out: Path) -> tuple[list[Path], list[str]]:
    """Each release's values in DIR/helm/<release>.values.yaml, and the note that says how to
    install it, since `kubectl apply -f DIR` leaves releases out."""
    paths, notes = [], []
    for release in releases:
        (out / HELM_DIR).mkdir(parents=True, exist_ok=True)
        path = out / HELM_DIR / f"{release.name}.values.yaml"
        path.write_text(yaml.dump(_sorted(release.values), Dumper=_BlockDumper))
        paths.append(path)
        notes.append(
            f"note: `kubectl apply -f {out}` leaves out Helm release {release.name} "
            f"({release.chart} {release.version}); install it first, its webhooks must "
            f"serve before its objects are created: {release.install_command(str(path))}"
        )
    return paths, notes


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
