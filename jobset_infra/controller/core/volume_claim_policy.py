"""VolumeClaimPolicies: PVCs made once per JobSet from templates, and mounted by the Jobs that
reference them (upstream `volume_claim_policy.go`, KEP-572).

* PVC `<template>-<jobset>` with the template's labels plus jobset-name, its annotations and spec;
  a controller ownerReference only when whenDeleted is Delete (so garbage collection removes it
  with the JobSet), none for Retain.
* A Job's pod spec gets a volume `<template>` claiming that PVC when one of its containers or
  init containers mounts a volume of that name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.models import JobSet, WhenDeleted
from jobset_infra.controller.core.identity import owner_reference
from jobset_infra.controller.core.types import Manifest

__all__ = ["add_claimed_volumes", "pvc_name", "pvcs_to_create"]


def pvc_name(template_name: str, jobset_name: str) -> str:
    """Return the PVC name for a template: `<template>-<jobset>`."""
    return f"{template_name}-{jobset_name}"


def _templates(js: JobSet) -> Iterator[tuple[dict[str, Any], bool]]:
    """Yield (PVC template, owned by the JobSet) for every VolumeClaimPolicy template."""
    for policy in js.spec.volume_claim_policies or ():
        retention = policy.retention_policy
        owned = retention is None or retention.when_deleted is WhenDeleted.DELETE
        for template in policy.templates:
            yield template, owned


def _pvc(js: JobSet, template: dict[str, Any], owned: bool) -> Manifest:
    meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "name": pvc_name(str(meta.get("name", "")), js.name),
        "namespace": js.namespace,
        "labels": {**(meta.get("labels") or {}), c.JOBSET_NAME_KEY: js.name},
    }
    if meta.get("annotations"):
        metadata["annotations"] = dict(meta["annotations"])
    if owned:
        metadata["ownerReferences"] = [owner_reference(js)]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": dict(template.get("spec") or {}),
    }


def pvcs_to_create(js: JobSet, existing: frozenset[str] | None) -> tuple[Manifest, ...]:
    """Return the PVCs to create. `existing`: PVC names known to exist; None means unknown, in
    which case every PVC is planned each pass and AlreadyExists is ignored, as upstream does."""
    pvcs = (_pvc(js, template, owned) for template, owned in _templates(js))
    return tuple(p for p in pvcs if existing is None or p["metadata"]["name"] not in existing)


def _mounted_names(pod_spec: dict[str, Any]) -> set[str]:
    containers = [*(pod_spec.get("containers") or []), *(pod_spec.get("initContainers") or [])]
    return {
        str(mount.get("name"))
        for container in containers
        for mount in container.get("volumeMounts") or []
    }


def add_claimed_volumes(js: JobSet, pod_spec: dict[str, Any]) -> None:
    """Append a PVC volume to `pod_spec` for every policy template one of its containers mounts."""
    if not js.spec.volume_claim_policies:
        return
    mounted = _mounted_names(pod_spec)
    present = {v.get("name") for v in pod_spec.get("volumes") or []}
    for template, _ in _templates(js):
        name = str((template.get("metadata") or {}).get("name", ""))
        if name in mounted and name not in present:
            volume = {"name": name, "persistentVolumeClaim": {"claimName": pvc_name(name, js.name)}}
            pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), volume]
