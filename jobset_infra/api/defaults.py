"""Defaulting of a JobSet, identical to what upstream's API server + mutating webhook produce.

Pure: `default(js)` returns a new JobSet. It applies upstream's webhook defaults (reference §4.1)
and the CRD's structural defaults (replicas 1, groupName "default", restartStrategy Recreate,
whenDeleted Delete), marking each as set so it appears in the manifest. Idempotent.
"""

from __future__ import annotations

import copy
from typing import Any

from jobset_infra.api import constants as c
from jobset_infra.api.models import (
    FailurePolicy,
    JobSet,
    JobSetSpec,
    Network,
    Operator,
    ReplicatedJob,
    StartupPolicy,
    StartupPolicyOrder,
    SuccessPolicy,
    VolumeClaimPolicy,
    VolumeRetentionPolicy,
)

__all__ = ["default"]


def default(js: JobSet) -> JobSet:
    """The JobSet with every upstream default applied (pure; no I/O)."""
    spec = js.spec
    spec = spec.model_copy(
        update={
            # 1. successPolicy: {operator: All}
            "success_policy": spec.success_policy or SuccessPolicy(operator=Operator.ALL),
            # 2. startupPolicy: {startupPolicyOrder: AnyOrder}
            "startup_policy": spec.startup_policy
            or StartupPolicy(startup_policy_order=StartupPolicyOrder.ANY_ORDER),
            # 3. per replicated job: completionMode Indexed, restartPolicy OnFailure (+ CRD)
            "replicated_jobs": [_default_replicated_job(r) for r in spec.replicated_jobs],
            # 4. network: DNS hostnames and publishNotReadyAddresses on
            "network": _default_network(spec.network),
        }
    )
    # 5. failure-policy rule names, restartStrategy (CRD)
    if spec.failure_policy is not None:
        spec = spec.model_copy(update={"failure_policy": _default_failure(spec.failure_policy)})
    # 6. volume claim policies: retention Delete
    if spec.volume_claim_policies is not None:
        policies = [_default_vcp(p) for p in spec.volume_claim_policies]
        spec = spec.model_copy(update={"volume_claim_policies": policies})
    return js.model_copy(update={"spec": _revalidated(spec)})


def _revalidated(spec: JobSetSpec) -> JobSetSpec:
    # model_copy skips validation; round-trip once so nested models are real instances.
    return JobSetSpec.model_validate(spec.to_dict(), context={"check_templates": False})


def _default_replicated_job(rjob: ReplicatedJob) -> ReplicatedJob:
    template = copy.deepcopy(rjob.template)
    job_spec: dict[str, Any] = template.setdefault("spec", {})
    if job_spec.get("completionMode") is None:
        job_spec["completionMode"] = c.COMPLETION_MODE_INDEXED
    pod_template: dict[str, Any] = job_spec.setdefault("template", {})
    pod_spec: dict[str, Any] = pod_template.setdefault("spec", {})
    if not pod_spec.get("restartPolicy"):
        pod_spec["restartPolicy"] = c.RESTART_POLICY_ON_FAILURE
    return rjob.model_copy(
        update={"template": template, "replicas": rjob.replicas, "group_name": rjob.group_name}
    )


def _default_network(network: Network | None) -> Network:
    network = network or Network()
    return network.model_copy(
        update={
            "enable_dns_hostnames": _true_if_none(network.enable_dns_hostnames),
            "publish_not_ready_addresses": _true_if_none(network.publish_not_ready_addresses),
        }
    )


def _true_if_none(value: bool | None) -> bool:
    return True if value is None else value


def _default_failure(policy: FailurePolicy) -> FailurePolicy:
    rules = [
        rule.model_copy(update={"name": f"{c.DEFAULT_RULE_NAME_PREFIX}{i}"})
        if not rule.name
        else rule
        for i, rule in enumerate(policy.rules)
    ]
    update: dict[str, Any] = {"restart_strategy": policy.restart_strategy}
    if "rules" in policy.model_fields_set:
        update["rules"] = rules
    return policy.model_copy(update=update)


def _default_vcp(policy: VolumeClaimPolicy) -> VolumeClaimPolicy:
    retention = policy.retention_policy or VolumeRetentionPolicy()
    retention = retention.model_copy(update={"when_deleted": retention.when_deleted})
    return policy.model_copy(update={"retention_policy": retention})
