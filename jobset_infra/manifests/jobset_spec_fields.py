"""The `spec` argument of a workload: any JobSet spec field, as the API declares it.

`spec_fields(given)` turns an `api.models.JobSetSpec`, or its mapping in wire (camelCase) or
Python (snake_case) names, into wire fields set as given: a field the API gains is settable with
no change here. `spec_field_problems` refuses the fields the workload's own arguments own
(replicated jobs, policies, ttl): those are derived and checked there. Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jobset_infra.api.models import JobSetSpec

__all__ = ["OWNED_SPEC_FIELDS", "spec_field_problems", "spec_fields"]

OWNED_SPEC_FIELDS: dict[str, str] = {
    "replicatedJobs": "replicated_jobs", "failurePolicy": "failure_policy",
    "successPolicy": "success_policy", "network": "network", "coordinator": "coordinator",
    "ttlSecondsAfterFinished": "ttl_seconds_after_finished",
}
"""Spec field (wire name) -> the workload argument that owns it."""


def spec_fields(given: JobSetSpec | Mapping[str, Any] | None) -> dict[str, Any]:
    """`given` as wire fields (camelCase), whichever form it came in."""
    if given is None:
        return {}
    if isinstance(given, JobSetSpec):
        return given.to_dict()
    wire_of = {name: f.alias or name for name, f in JobSetSpec.model_fields.items()}
    return {wire_of.get(key, key): copy.deepcopy(value) for key, value in given.items()}


def spec_field_problems(given: object, arguments: Mapping[str, object]) -> list[str]:
    """Problems of `given`: not a spec, or setting a field an argument owns (`arguments`:
    argument name -> its value; replicated jobs always come from their argument). Unknown or
    mistyped fields are left to the full check of the JobSet, which names them as the API
    server would (`spec.startupPolicyy: unknown field`)."""
    if given is None:
        return []
    if not isinstance(given, JobSetSpec | Mapping):
        return [f"spec: {type(given).__name__} is not a JobSetSpec; pass an api JobSetSpec or "
                "its manifest mapping"]
    fields = spec_fields(given)
    return [f"spec.{wire}: set {argument}= instead (the component derives and checks it)"
            for wire, argument in OWNED_SPEC_FIELDS.items()
            if wire in fields and (wire == "replicatedJobs" or arguments.get(argument)
                                   is not None)]
