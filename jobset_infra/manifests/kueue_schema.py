"""JSON schemas of the Kueue v1beta2 fields we render, from Kueue's documented API.

Source: reference kueue-and-pulumi.md §A2 (`apis/kueue/v1beta2/*_types.go`): field names, the
enums, and the list limits (ResourceFlavor nodeLabels/tolerations <= 8, resourceGroups <= 16).
Unknown fields are errors, so a misspelled field (or a v1beta1 one such as `cohort`) fails.
"""

from __future__ import annotations

from typing import Any

import jsonschema

_NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "maxLength": 253}
_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}


def _obj(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _metadata(namespaced: bool) -> dict[str, Any]:
    props = {"name": _NAME, "labels": _STR_MAP, "annotations": _STR_MAP}
    if namespaced:
        props["namespace"] = _NAME
    return _obj(props, ("name", "namespace") if namespaced else ("name",))


def _kind(kind: str, namespaced: bool = False, **top: Any) -> dict[str, Any]:
    props = {
        "apiVersion": {"const": "kueue.x-k8s.io/v1beta2"},
        "kind": {"const": kind},
        "metadata": _metadata(namespaced),
        **top,
    }
    return _obj(props, ("apiVersion", "kind", "metadata", *top))


_TOLERATION = _obj(
    {
        "key": {"type": "string"},
        "operator": {"enum": ["Exists", "Equal"]},
        "value": {"type": "string"},
        "effect": {"enum": ["NoSchedule", "PreferNoSchedule", "NoExecute"]},
        "tolerationSeconds": {"type": "integer"},
    }
)
_QUANTITY = {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string"}]}
_FLAVOR_QUOTAS = _obj(
    {
        "name": _NAME,
        "resources": {
            "type": "array",
            "minItems": 1,
            "items": _obj(
                {
                    "name": {"type": "string"},
                    "nominalQuota": _QUANTITY,
                    "borrowingLimit": _QUANTITY,
                    "lendingLimit": _QUANTITY,
                },
                ("name", "nominalQuota"),
            ),
        },
    },
    ("name", "resources"),
)
_SELECTOR = _obj(
    {
        "matchLabels": _STR_MAP,
        "matchExpressions": {
            "type": "array",
            "items": _obj(
                {
                    "key": {"type": "string"},
                    "operator": {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]},
                    "values": {"type": "array", "items": {"type": "string"}},
                },
                ("key", "operator"),
            ),
        },
    }
)

SCHEMAS: dict[str, dict[str, Any]] = {
    "ResourceFlavor": _kind(
        "ResourceFlavor",
        spec=_obj(
            {
                "nodeLabels": {**_STR_MAP, "maxProperties": 8},
                "nodeTaints": {"type": "array", "maxItems": 8},
                "tolerations": {"type": "array", "maxItems": 8, "items": _TOLERATION},
                "topologyName": _NAME,
            }
        ),
    ),
    "ClusterQueue": _kind(
        "ClusterQueue",
        spec=_obj(
            {
                "namespaceSelector": _SELECTOR,
                "cohortName": _NAME,
                "queueingStrategy": {"enum": ["BestEffortFIFO", "StrictFIFO"]},
                "resourceGroups": {
                    "type": "array",
                    "maxItems": 16,
                    "items": _obj(
                        {
                            "coveredResources": {"type": "array", "items": {"type": "string"}},
                            "flavors": {"type": "array", "minItems": 1, "items": _FLAVOR_QUOTAS},
                        },
                        ("coveredResources", "flavors"),
                    ),
                },
                "preemption": _obj(
                    {
                        "reclaimWithinCohort": {"enum": ["Never", "LowerPriority", "Any"]},
                        "withinClusterQueue": {
                            "enum": ["Never", "LowerPriority", "LowerOrNewerEqualPriority"]
                        },
                        "borrowWithinCohort": {"type": "object"},
                    }
                ),
                "admissionChecksStrategy": _obj(
                    {
                        "admissionChecks": {
                            "type": "array",
                            "items": _obj(
                                {
                                    "name": _NAME,
                                    "onFlavors": {"type": "array", "items": _NAME},
                                },
                                ("name",),
                            ),
                        }
                    }
                ),
                "stopPolicy": {"enum": ["None", "Hold", "HoldAndDrain"]},
            },
            ("resourceGroups",),
        ),
    ),
    "LocalQueue": _kind(
        "LocalQueue", namespaced=True, spec=_obj({"clusterQueue": _NAME}, ("clusterQueue",))
    ),
    "WorkloadPriorityClass": _kind(
        "WorkloadPriorityClass",
        value={"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
        description={"type": "string"},
    ),
    "AdmissionCheck": _kind(
        "AdmissionCheck",
        spec=_obj(
            {
                "controllerName": {"type": "string"},
                "parameters": _obj(
                    {"apiGroup": {"type": "string"}, "kind": {"type": "string"}, "name": _NAME},
                    ("apiGroup", "kind", "name"),
                ),
            },
            ("controllerName",),
        ),
    ),
    "ProvisioningRequestConfig": _kind(
        "ProvisioningRequestConfig",
        spec=_obj(
            {
                "provisioningClassName": {"type": "string"},
                "parameters": _STR_MAP,
                "managedResources": {"type": "array", "items": {"type": "string"}},
                "podSetUpdates": _obj(
                    {
                        "nodeSelector": {
                            "type": "array",
                            "items": _obj(
                                {
                                    "key": {"type": "string"},
                                    "valueFromProvisioningClassDetail": {"type": "string"},
                                },
                                ("key", "valueFromProvisioningClassDetail"),
                            ),
                        }
                    }
                ),
            },
            ("provisioningClassName",),
        ),
    ),
}


def kueue_errors(manifest: dict[str, Any]) -> list[str]:
    """Return every way `manifest` departs from the documented Kueue v1beta2 fields."""
    schema = SCHEMAS.get(manifest.get("kind", ""))
    if schema is None:
        return [f"unknown Kueue kind {manifest.get('kind')!r}"]
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(manifest)]
