"""Check a JobSet's Job templates as the API server will check the Jobs made from them.

The API server stores a JobSet without validating the pod templates inside it (a custom
resource's schema checks types and patterns, not Pod rules), and then refuses every child Job
the controller creates from a bad template. `child_job_errors` finds what it will refuse:
container names (DNS-1123 labels, unique), images, ports (1-65535), quantities (not negative,
requests within limits) and required fields, each worded as the Job's refusal would be and
placed at the template's path, saying the JobSet itself would be stored. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from jobset_infra.api.errors import FieldError, child
from jobset_infra.api.names import dns1123_label
from jobset_infra.api.quantity import parse_quantity_text

__all__ = ["JOBS_REFUSED", "child_job_errors", "pod_spec_errors"]

JOBS_REFUSED: Final = (
    "the JobSet would be stored, but the API server refuses every Job created from this template"
)
_PORT_RANGE: Final = "must be between 1 and 65535, inclusive"


def child_job_errors(manifest: Mapping[str, Any]) -> list[FieldError]:
    """Problems of every replicated job's pod template, each ending with JOBS_REFUSED."""
    spec = manifest.get("spec")
    rjobs = spec.get("replicatedJobs") if isinstance(spec, Mapping) else None
    if not isinstance(rjobs, list):
        return []
    errors = []
    for i, rjob in enumerate(rjobs):
        pod_spec = _path(rjob, "template", "spec", "template", "spec")
        if isinstance(pod_spec, Mapping):
            where = f"spec.replicatedJobs[{i}].template.spec.template.spec"
            errors += [FieldError(e.path, f"{e.message} ({JOBS_REFUSED})")
                       for e in pod_spec_errors(pod_spec, where)]
    return errors


def _path(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def pod_spec_errors(pod_spec: Mapping[str, Any], path: str) -> list[FieldError]:
    """What Pod validation refuses in `pod_spec` (containers first, then init containers)."""
    containers = pod_spec.get("containers")
    errors = []
    names: set[str] = set()
    if not containers:
        errors.append(FieldError(child(path, "containers"), "Required value"))
    for key in ("containers", "initContainers"):
        items = pod_spec.get(key)
        if isinstance(items, list):
            for i, container in enumerate(items):
                if isinstance(container, Mapping):
                    where = child(child(path, key), i)
                    errors += _container_errors(container, where, names)
    return errors


def _container_errors(
    container: Mapping[str, Any], path: str, names: set[str]
) -> list[FieldError]:
    errors = _name_errors(container.get("name"), child(path, "name"), names)
    if not container.get("image"):
        errors.append(FieldError(child(path, "image"), "Required value"))
    ports = container.get("ports")
    if isinstance(ports, list):
        for i, port in enumerate(ports):
            if isinstance(port, Mapping):
                errors += _port_errors(port, child(child(path, "ports"), i))
    resources = container.get("resources")
    if isinstance(resources, Mapping):
        errors += _resource_errors(resources, child(path, "resources"))
    return errors


def _quoted(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else str(value)


def _name_errors(name: Any, path: str, names: set[str]) -> list[FieldError]:
    if not name:
        return [FieldError(path, "Required value")]
    if not isinstance(name, str):
        return []  # a type error, reported by the schema
    if name in names:
        return [FieldError(path, f"Duplicate value: {_quoted(name)}")]
    names.add(name)
    return [FieldError(path, f"Invalid value: {_quoted(name)}: {p}") for p in dns1123_label(name)]


def _port_errors(port: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = []
    number = port.get("containerPort")
    if not number:
        errors.append(FieldError(child(path, "containerPort"), "Required value"))
    elif isinstance(number, int) and not 1 <= number <= 65535:
        errors.append(FieldError(child(path, "containerPort"),
                                 f"Invalid value: {number}: {_PORT_RANGE}"))
    host = port.get("hostPort")
    if isinstance(host, int) and host and not 1 <= host <= 65535:
        errors.append(FieldError(child(path, "hostPort"), f"Invalid value: {host}: {_PORT_RANGE}"))
    return errors


def _resource_errors(resources: Mapping[str, Any], path: str) -> list[FieldError]:
    errors = []
    amounts: dict[str, dict[str, Any]] = {}
    for kind in ("limits", "requests"):
        listed = resources.get(kind)
        if not isinstance(listed, Mapping):
            continue
        for name, value in listed.items():
            amount = parse_quantity_text(value)
            if amount is None:
                continue  # not a quantity: the schema's pattern refuses it
            amounts.setdefault(kind, {})[name] = (amount, value)
            if amount < 0:
                errors.append(FieldError(f"{path}.{kind}[{name}]",
                                         f"Invalid value: {_quoted(value)}: must be greater "
                                         "than or equal to 0"))
    for name, (request, shown) in amounts.get("requests", {}).items():
        limit = amounts.get("limits", {}).get(name)
        if limit is not None and request > limit[0] >= 0:
            errors.append(FieldError(f"{path}.requests",
                                     f"Invalid value: {_quoted(shown)}: must be less than or "
                                     f"equal to {name} limit of {limit[1]}"))
    return errors
