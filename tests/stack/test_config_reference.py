"""The config's declarations come from its one declaration: Pulumi.yaml's config block and
docs/config.md are generated from StackConfig, and a stale one fails here."""

from __future__ import annotations

from pathlib import Path

import yaml

from jobset_infra.stack.config import NAMESPACE, StackConfig
from jobset_infra.stack.config_reference import (
    field_docs,
    main,
    pulumi_config_block,
    reference_markdown,
)

ROOT = Path(__file__).resolve().parents[2]


def test_pulumi_yaml_and_the_reference_are_fresh() -> None:
    assert main(["--check"]) == 0, "run: python -m jobset_infra.stack.config_reference"


def test_pulumi_yaml_declares_the_required_keys_and_those_with_a_plain_default() -> None:
    # Pulumi requires every declared key without a default, and injects a declared default: so
    # only keys the program requires, or whose default Pulumi can state, are declared.
    declared = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    required = {f"{NAMESPACE}:{name}" for name, field in StackConfig.model_fields.items()
                if field.is_required()}
    assert required == {f"{NAMESPACE}:platform", f"{NAMESPACE}:controller"}
    assert {key for key, entry in declared.items() if "default" not in entry} == required
    assert declared[f"{NAMESPACE}:platform"]["type"] == "string"
    assert "type" not in declared[f"{NAMESPACE}:controller"]  # an object: Pulumi has no type
    assert declared[f"{NAMESPACE}:placement"] | {"description": ""} == {
        "type": "string", "default": "controller", "description": ""}
    assert f"{NAMESPACE}:context" not in declared  # optional, default None: Pulumi cannot say it
    assert all(entry["description"] for entry in declared.values())
    assert declared == pulumi_config_block()


def test_every_key_and_every_field_of_a_structured_key_is_in_the_reference() -> None:
    text = reference_markdown()
    for name in StackConfig.model_fields:
        assert f"| `{NAMESPACE}:{name}` |" in text, name
    assert f"| `{NAMESPACE}:workload.max_restarts` |" in text
    assert f"| `{NAMESPACE}:kueue.install.version` |" in text
    assert f"| `{NAMESPACE}:slices.topology` |" in text
    assert f"| `{NAMESPACE}:cluster.project` |" not in text  # filled from jobset-infra:project


def test_a_field_docstring_is_its_description() -> None:
    docs = field_docs(StackConfig)
    assert docs["zone"].startswith("gke: zone of the TPU slices")
