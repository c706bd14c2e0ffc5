"""Kueue objects are checked against Kueue's own CRDs, extracted from the pinned module."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from jobset_infra.api.kueue_crds import kueue_errors, kueue_kinds

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"tools_{name}", ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_schemas_are_those_of_the_kueue_module_tools_kueue_pins() -> None:
    """CI regenerates the file from that module (tools/kueue_crds.py --check); here, without
    Go, the recorded version must at least be the pinned one."""
    data = json.loads((ROOT / "jobset_infra" / "api" / "kueue_crds.json").read_text())
    pins = _tool("build").pinned_versions(ROOT / "tools" / "kueue" / "go.mod")
    assert data["version"] == pins[data["module"]] == "v0.19.2"
    assert data["source"] == "config/components/crd/bases"


def test_every_kind_we_render_and_users_apply_is_served_at_v1beta2() -> None:
    kinds = kueue_kinds()
    for kind in ("ResourceFlavor", "ClusterQueue", "LocalQueue", "WorkloadPriorityClass",
                 "AdmissionCheck", "ProvisioningRequestConfig", "Topology", "Cohort"):
        assert "v1beta2" in kinds[kind], kind
    assert "Workload" not in kinds  # left out: nothing we render is one


def test_a_property_named_description_is_kept_while_prose_is_dropped() -> None:
    without = _tool("kueue_crds").without_descriptions
    schema = {"description": "prose", "properties": {
        "description": {"description": "more prose", "type": "string"}}}
    assert without(schema) == {"properties": {"description": {"type": "string"}}}
    priority = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": "high"}, "value": 1000, "description": "high"}
    assert kueue_errors(priority) == []


def test_a_namespace_on_a_cluster_scoped_kind_and_a_bad_name_are_named() -> None:
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": "Not_A_Name", "namespace": "default"}, "spec": {}}
    errors = kueue_errors(flavor)
    assert errors[0].startswith("metadata.name: Invalid value: 'Not_A_Name'")
    assert errors[1].startswith("metadata.namespace: Forbidden")
