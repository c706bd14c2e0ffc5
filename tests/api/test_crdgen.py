"""The generated CRD: committed file is fresh, structural basics, printer columns."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from jobset_infra.api import constants as c
from jobset_infra.api.crd import command as crd_command
from jobset_infra.api.crd.generate import HEADER, generate_crd, render_crd


def _schema() -> dict[str, Any]:
    version = generate_crd()["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_committed_crd_matches_a_fresh_generation() -> None:
    committed = crd_command.default_path().read_text(encoding="utf-8")
    assert committed == render_crd(), "run: jobset-infra crd"


def test_rendered_crd_starts_with_the_generated_header_and_parses() -> None:
    text = render_crd()
    assert text.startswith(HEADER)
    assert yaml.load(text, Loader=yaml.CSafeLoader) == generate_crd()


def test_check_fails_with_a_clear_message_when_stale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "crd.yaml"
    stale.write_text(render_crd().replace("Recreate", "Recreated", 1), encoding="utf-8")
    code = crd_command.run(argparse.Namespace(check=True, output=str(stale)))
    assert code == 1
    assert "out of date" in capsys.readouterr().err


def test_check_passes_after_writing(tmp_path: Path) -> None:
    target = tmp_path / "crd.yaml"
    assert crd_command.run(argparse.Namespace(check=False, output=str(target))) == 0
    assert crd_command.run(argparse.Namespace(check=True, output=str(target))) == 0


def test_crd_names_status_subresource_and_printer_columns() -> None:
    crd = generate_crd()
    assert crd["metadata"]["name"] == c.CRD_NAME
    version = crd["spec"]["versions"][0]
    assert (version["name"], version["served"], version["storage"]) == (c.VERSION, True, True)
    assert version["subresources"] == {"status": {}}
    columns = [col["name"] for col in version["additionalPrinterColumns"]]
    assert columns == ["TerminalState", "Restarts", "Completed", "Suspended", "Age"]


def test_embedded_job_template_is_inlined_without_refs() -> None:
    template = _schema()["properties"]["spec"]["properties"]["replicatedJobs"]["items"][
        "properties"
    ]["template"]
    pod_spec = template["properties"]["spec"]["properties"]["template"]["properties"]["spec"]
    assert "containers" in pod_spec["required"]
    assert "$ref" not in yaml.safe_dump(template)
    assert set(template["properties"]["metadata"]["properties"]) == {
        "annotations",
        "finalizers",
        "labels",
        "name",
        "namespace",
    }


def _nodes(schema: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    out = [(path, schema)]
    for key, sub in schema.get("properties", {}).items():
        out += _nodes(sub, f"{path}.{key}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out += _nodes(schema[key], f"{path}.{key}")
    return out


def test_schema_is_structural() -> None:
    # What the kube-apiserver requires of a CRD schema (apiextensions structural rules).
    problems = []
    for path, node in _nodes(_schema()):
        typed = (
            "type" in node
            or node.get("x-kubernetes-int-or-string")
            or node.get("x-kubernetes-preserve-unknown-fields")
        )
        if not typed:
            problems.append(f"{path}: no type")
        if "$ref" in node or ("anyOf" in node and not node.get("x-kubernetes-int-or-string")):
            problems.append(f"{path}: $ref/anyOf")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: properties with additionalProperties")
        if node.get("type") == "array" and "items" not in node:
            problems.append(f"{path}: array without items")
        if isinstance(node.get("type"), list):
            problems.append(f"{path}: type list")
        if node.get("x-kubernetes-list-type") == "map":
            item = node["items"]
            for key in node["x-kubernetes-list-map-keys"]:
                prop = item["properties"][key]
                if key not in item.get("required", []) and "default" not in prop:
                    problems.append(f"{path}: list-map key {key} neither required nor defaulted")
    assert problems == []


def test_defaults_are_valid_for_their_own_schema() -> None:
    from jobset_infra.api.crd.schema import CrdSchema

    for path, node in _nodes(_schema()):
        if "default" in node:
            assert CrdSchema(node).validate(node["default"]) == [], path
