"""The ObjectMeta checks of every write (labels, annotations, finalizers), from the one
implementation `validate` uses (`api.object_meta`), as 422 causes."""

from __future__ import annotations

from typing import Any

from jobset_infra.api.object_meta import metadata_errors
from jobset_infra.sim.apiserver.errors import field_cause
from jobset_infra.sim.apiserver.resources import ResourceInfo

__all__ = ["metadata_causes"]


def metadata_causes(info: ResourceInfo, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """422 causes for `meta`; custom resources (a CRD's kinds) skip the built-in finalizer rule."""
    return [
        field_cause(
            "FieldValueTooLong" if e.message.startswith("Too long") else "FieldValueInvalid",
            e.path,
            e.message,
        )
        for e in metadata_errors(meta, builtin=info.crd is None)
    ]
