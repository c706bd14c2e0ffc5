"""The stack config's declarations, generated from its one declaration (`stack.config`).

`StackConfig` and the models and specs it holds are the config. From them come:

- the project-level `config:` block of `Pulumi.yaml`, declaring to the Pulumi CLI each
  `jobset-infra:` key that is required (no default) or has a plain default, with its type
  (string, integer, boolean, array; structured keys are objects, which Pulumi's declarations have
  no type for, so they are declared untyped), description and default. Pulumi makes every
  declared key without a `default` required (`pulumi preview` fails: "Stack 'local' is missing
  configuration values ..."), and injects a declared default into the stack's config; so an
  optional key whose default is None or a structure (a model's defaults) is not declared there:
  Pulumi accepts undeclared keys of the project's namespace, and docs/config.md lists them all;
- `docs/config.md`, the reference: every key and, for structured keys, every field with its
  type, default and description.

    python -m jobset_infra.stack.config_reference            # write both
    python -m jobset_infra.stack.config_reference --check    # CI (a test): fail if stale

Descriptions are the fields' docstrings (the string under each field), read from the source.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import sys
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from jobset_infra.api.field_docs import attribute_docs
from jobset_infra.stack.config import NAMESPACE, StackConfig
from jobset_infra.tpu.cluster import GkeClusterSpec
from jobset_infra.tpu.spec import SlicePoolsSpec

__all__ = ["field_docs", "pulumi_config_block", "reference_markdown"]

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "config.md"
PROJECT_FILE = ROOT / "Pulumi.yaml"
# Keys whose value is a dict in StackConfig but whose fields a spec declares.
NESTED: Mapping[str, type[Any]] = {"cluster": GkeClusterSpec, "slices": SlicePoolsSpec}
# Fields of those specs the program fills from other keys (project, region, zone).
FILLED: frozenset[str] = frozenset({"cluster.project", "cluster.location", "slices.zone",
                                    "slices.cluster_location"})


def field_docs(cls: type[Any]) -> dict[str, str]:
    """Field name -> its docstring (the string literal under it) on one line, over the class's
    bases too."""
    return {name: " ".join(doc.split()) for name, doc in attribute_docs(cls).items()}


def _fields(cls: type[Any]) -> Iterator[tuple[str, Any, Any]]:
    """(name, annotation, default or dataclasses.MISSING) of a pydantic model or dataclass."""
    if isinstance(cls, type) and issubclass(cls, BaseModel):
        for name, info in cls.model_fields.items():
            yield name, info.annotation, (dataclasses.MISSING if info.is_required()
                                          else info.get_default(call_default_factory=True))
        return
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        default: Any = f.default
        if f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        yield f.name, hints[f.name], default


def _kind(annotation: Any) -> str:
    """The Pulumi config type of a field: string, integer, boolean, array, or object."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        kinds = {_kind(a) for a in options}
        return kinds.pop() if len(kinds) == 1 else "object"
    if origin is typing.Literal:
        return _kind(type(typing.get_args(annotation)[0]))
    if annotation is bool:
        return "boolean"
    if annotation is int:
        return "integer"
    if annotation is str or (isinstance(annotation, type) and issubclass(annotation, str)):
        return "string"
    if origin in (list, tuple) or annotation in (list, tuple):
        return "array"
    return "object"


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _shown(value: Any) -> str:
    if value is dataclasses.MISSING:
        return "required"
    if isinstance(value, BaseModel) or dataclasses.is_dataclass(value):
        return "(its fields' defaults)"
    text = yaml.safe_dump(_plain(value), default_flow_style=True).strip()
    return f"`{text.removesuffix('...').strip()}`"


def _declared_default(default: Any) -> Any:
    """The default Pulumi.yaml states for a key, MISSING for a required key, None for none."""
    if default is dataclasses.MISSING:
        return default
    plain = _plain(default) if isinstance(default, enum.Enum | str | int | float | bool) else None
    return plain


def pulumi_config_block() -> dict[str, Any]:
    """The `config:` of Pulumi.yaml: each required key, and each key with a plain default."""
    docs = field_docs(StackConfig)
    block: dict[str, Any] = {}
    for name, annotation, default in _fields(StackConfig):
        declared = _declared_default(default)
        if declared is None:
            continue
        kind = _kind(annotation)
        entry: dict[str, Any] = {}
        if kind != "object":
            entry["type"] = kind
            if kind == "array":
                entry["items"] = {"type": "string"}
        entry["description"] = docs.get(name) or f"see docs/config.md ({kind})"
        if declared is not dataclasses.MISSING:
            entry["default"] = declared
        block[f"{NAMESPACE}:{name}"] = entry
    return block


def _model_of(annotation: Any) -> type[Any] | None:
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and (issubclass(candidate, BaseModel)
                                            or dataclasses.is_dataclass(candidate)):
            return candidate
    return None


def _table(cls: type[Any], prefix: str) -> list[str]:
    docs = field_docs(cls)
    rows = ["| Key | Type | Default | Meaning |", "|---|---|---|---|"]
    nested: list[tuple[str, type[Any]]] = []
    for name, annotation, default in _fields(cls):
        key = f"{prefix}.{name}" if prefix else name
        if key in FILLED:
            continue
        model = NESTED.get(key) or _model_of(annotation)
        if model is not None:
            nested.append((key, model))
        meaning = (docs.get(name) or "").replace("|", "\\|")
        rows.append(f"| `{NAMESPACE}:{key}` | {_kind(annotation)} | {_shown(default)} | "
                    f"{meaning} |")
    out = [*rows, ""]
    for key, model in nested:
        out += [f"### `{NAMESPACE}:{key}`", "", *_table(model, key)]
    return out


def reference_markdown() -> str:
    """docs/config.md."""
    head = [
        "<!-- Generated by jobset_infra.stack.config_reference - DO NOT EDIT. Run: "
        ".venv/bin/python -m jobset_infra.stack.config_reference -->",
        "# Stack configuration reference",
        "",
        f"Every key of a stack file (`stacks/Pulumi.<stack>.yaml`), in the `{NAMESPACE}:` "
        "namespace, generated from the one declaration of the config "
        "(`jobset_infra.stack.config.StackConfig` and the models and specs it holds), as is "
        "the project-level `config:` block of `Pulumi.yaml` that declares the keys to the "
        "Pulumi CLI. Structured keys are YAML mappings in the stack file, or `pulumi config "
        "set --path`. How the keys are checked: [stacks.md](stacks.md#stack-configuration).",
        "",
        "## Keys",
        "",
    ]
    return "\n".join([*head, *_table(StackConfig, "")]).rstrip() + "\n"


def project_file_text(current: str) -> str:
    """Pulumi.yaml with its `config:` block regenerated (everything else kept)."""
    project = yaml.safe_load(current) or {}
    project["config"] = pulumi_config_block()
    return yaml.safe_dump(project, sort_keys=False, width=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if either file is stale")
    args = parser.parse_args(argv)
    wanted = {DOC: reference_markdown(),
              PROJECT_FILE: project_file_text(PROJECT_FILE.read_text())}
    stale = [path for path, text in wanted.items()
             if not path.is_file() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python -m "
                  "jobset_infra.stack.config_reference", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
