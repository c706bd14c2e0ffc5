"""Validation of a JobSet, identical to upstream's validating webhook plus its CRD rules.

Pure: `validate(js, old=None, ...)` returns every problem as a FieldError; empty means valid. It
expects a defaulted JobSet (see `defaults.default`), as upstream's webhook sees one. On create it
runs upstream's ValidateCreate (reference §4.2); on update ValidateUpdate (§4.3, in
`validation_update`). Rules upstream states as CRD CEL are checked here too, so a caller without
an API server (Pulumi preview, `jobset-infra validate`) gets the complete verdict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.api import names
from jobset_infra.api.errors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
)
from jobset_infra.api.models import (
    FailurePolicyAction,
    JobSet,
    ReplicatedJob,
    RestartStrategy,
    StartupPolicyOrder,
    WhenDeleted,
)
from jobset_infra.api.validation_update import validate_update

__all__ = ["FieldError", "validate"]

# Stand-in for the 5 random characters upstream's SimpleNameGenerator appends (same alphabet).
_NAME_SUFFIX: Final = "bcdfg"
_RESTART_JOB_ACTIONS: Final = frozenset(
    {FailurePolicyAction.RESTART_JOB, FailurePolicyAction.RESTART_JOB_AND_IGNORE_MAX_RESTARTS}
)


def validate(
    js: JobSet,
    old: JobSet | None = None,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    existing_pvcs: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[FieldError]:
    """Every problem of `js` (created, or updated from `old`); pure, no I/O.

    `existing_pvcs` maps PVC names in the JobSet's namespace to their manifests (upstream does a
    live GET); `feature_gates` overrides `constants.FEATURE_GATE_DEFAULTS`.
    """
    gates = {**c.FEATURE_GATE_DEFAULTS, **(feature_gates or {})}
    errors = list(_crd_rules(js))
    if old is None:
        errors += _validate_create(js, gates, existing_pvcs or {})
    else:
        errors += validate_update(js, old, gates)
    return errors


def _validate_create(
    js: JobSet, gates: Mapping[str, bool], existing_pvcs: Mapping[str, Mapping[str, Any]]
) -> list[FieldError]:
    name = _check_name(js)
    return [
        *_in_place_restart_gate(js, gates),
        *_first_rjob_depends_on(js),
        *_subdomain(js),
        *_managed_by(js),
        *(e for i, r in enumerate(js.spec.replicated_jobs) for e in _rjob(js, name, i, r, gates)),
        *_success_policy(js),
        *_failure_policy(js, gates),
        *_coordinator(js, name),
        *_volume_claim_policies(js, name, existing_pvcs),
    ]


def _check_name(js: JobSet) -> str:
    """The name checks use: metadata.name, or generateName plus a 5-character suffix."""
    return js.metadata.name or f"{js.metadata.generate_name or ''}{_NAME_SUFFIX}"


def _rjob_names(js: JobSet) -> list[str]:
    return [r.name for r in js.spec.replicated_jobs]


def _job_spec(rjob: ReplicatedJob) -> dict[str, Any]:
    spec = rjob.template.get("spec")
    return spec if isinstance(spec, dict) else {}


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- rules upstream states in the CRD (CEL), checked on create and update -----------------------


def _crd_rules(js: JobSet) -> Iterator[FieldError]:
    spec = js.spec
    in_order = (
        spec.startup_policy is not None
        and spec.startup_policy.startup_policy_order is StartupPolicyOrder.IN_ORDER
    )
    if in_order and any(r.depends_on is not None for r in spec.replicated_jobs):
        yield invalid("spec", {}, c.STARTUP_POLICY_DEPENDS_ON_EXCLUSIVE_MESSAGE)
    for i, policy in enumerate(spec.volume_claim_policies or []):
        for template in policy.templates:
            if (template.get("metadata") or {}).get("namespace"):
                yield invalid(f"spec.volumeClaimPolicies[{i}]", {}, c.VCP_NAMESPACE_MESSAGE)
                break


# --- create rules (upstream ValidateCreate), in upstream's order --------------------------------


def _in_place_restart_gate(js: JobSet, gates: Mapping[str, bool]) -> Iterator[FieldError]:
    policy = js.spec.failure_policy
    in_place = policy is not None and policy.restart_strategy is RestartStrategy.IN_PLACE_RESTART
    if in_place and not gates[c.FEATURE_IN_PLACE_RESTART]:
        yield forbidden(
            "spec.failurePolicy.restartStrategy",
            f"InPlaceRestart requires the {c.FEATURE_IN_PLACE_RESTART} feature gate",
        )


def _first_rjob_depends_on(js: JobSet) -> Iterator[FieldError]:
    rjobs = js.spec.replicated_jobs
    if rjobs and rjobs[0].depends_on is not None:
        yield invalid(
            "spec.replicatedJobs[0].dependsOn",
            rjobs[0].to_dict().get("dependsOn"),
            c.FIRST_RJOB_DEPENDS_ON_MESSAGE,
        )


def _subdomain(js: JobSet) -> Iterator[FieldError]:
    subdomain = js.spec.network.subdomain if js.spec.network else None
    if not subdomain:
        return
    problems = dict.fromkeys(names.dns1123_subdomain(subdomain) + names.dns1035_label(subdomain))
    for problem in problems:
        message = c.SUBDOMAIN_TOO_LONG_MESSAGE if names.is_too_long(problem) else problem
        yield invalid("spec.network.subdomain", subdomain, message)


def _managed_by(js: JobSet) -> Iterator[FieldError]:
    managed_by = js.spec.managed_by
    if managed_by is None:
        return
    for problem in names.domain_prefixed_path(managed_by):
        yield invalid("spec.managedBy", managed_by, problem)
    if len(managed_by) > c.DNS_LABEL_MAX_LENGTH:
        yield too_long("spec.managedBy", c.DNS_LABEL_MAX_LENGTH)


def _rjob(
    js: JobSet, js_name: str, i: int, rjob: ReplicatedJob, gates: Mapping[str, bool]
) -> Iterator[FieldError]:
    path = f"spec.replicatedJobs[{i}]"
    spec = _job_spec(rjob)
    parallelism = _int_or_none(spec.get("parallelism"))
    completions = _int_or_none(spec.get("completions"))
    pods = rjob.replicas * (parallelism if parallelism is not None else 1)
    if pods > c.MAX_INT32:
        yield invalid(
            f"{path}.replicas",
            rjob.replicas,
            f"replicas x parallelism = {pods} pods exceeds the maximum of {c.MAX_INT32}",
        )
    for problem in names.dns1035_label(rjob.group_name):
        message = c.GROUP_NAME_TOO_LONG_MESSAGE if names.is_too_long(problem) else problem
        yield invalid(f"{path}.groupName", rjob.group_name, message)
    # As upstream: the index of the last Job, -1 when there are no replicas.
    longest_job = f"{js_name}-{rjob.name}-{rjob.replicas - 1}"
    for problem in names.dns1035_label(longest_job):
        message = c.JOB_NAME_TOO_LONG_MESSAGE if names.is_too_long(problem) else problem
        yield invalid(f"{path}.name", longest_job, message)
    if spec.get("completionMode") == c.COMPLETION_MODE_INDEXED and completions is not None:
        longest_pod = f"{longest_job}-{completions - 1}-{_NAME_SUFFIX}"
        for problem in names.dns1035_label(longest_pod):
            message = c.POD_NAME_TOO_LONG_MESSAGE if names.is_too_long(problem) else problem
            yield invalid(f"{path}.name", longest_pod, message)
    earlier = set(_rjob_names(js)[:i])
    for j, dep in enumerate((rjob.depends_on or []) if i > 0 else []):
        if dep.name not in earlier:
            message = c.DEPENDS_ON_ORDER_MESSAGE.format(rjob=rjob.name, dep=dep.name)
            yield invalid(f"{path}.dependsOn[{j}].name", dep.name, message)
    yield from _in_place_restart_job(js, path, spec, gates)


def _in_place_restart_job(
    js: JobSet, path: str, spec: Mapping[str, Any], gates: Mapping[str, bool]
) -> Iterator[FieldError]:
    policy = js.spec.failure_policy
    if not gates[c.FEATURE_IN_PLACE_RESTART] or policy is None:
        return
    if policy.restart_strategy is not RestartStrategy.IN_PLACE_RESTART:
        return
    spec_path = f"{path}.template.spec"
    if spec.get("backoffLimit") != c.MAX_INT32:
        yield invalid(
            f"{spec_path}.backoffLimit",
            spec.get("backoffLimit"),
            f"must be {c.MAX_INT32} with restartStrategy InPlaceRestart",
        )
    if spec.get("podReplacementPolicy") != "Failed":
        yield invalid(
            f"{spec_path}.podReplacementPolicy",
            spec.get("podReplacementPolicy"),
            "must be Failed with restartStrategy InPlaceRestart",
        )
    parallelism, completions = spec.get("parallelism"), spec.get("completions")
    if parallelism is None:
        yield required(f"{spec_path}.parallelism")
    if completions is None:
        yield required(f"{spec_path}.completions")
    elif parallelism is not None and completions != parallelism:
        yield invalid(
            f"{spec_path}.completions",
            completions,
            "must equal parallelism with restartStrategy InPlaceRestart",
        )


def _success_policy(js: JobSet) -> Iterator[FieldError]:
    policy = js.spec.success_policy
    known = set(_rjob_names(js))
    for k, target in enumerate(policy.target_replicated_jobs if policy else []):
        if target not in known:
            yield invalid(
                f"spec.successPolicy.targetReplicatedJobs[{k}]",
                target,
                c.UNKNOWN_TARGET_MESSAGE.format(name=target),
            )


def _failure_policy(js: JobSet, gates: Mapping[str, bool]) -> Iterator[FieldError]:
    policy = js.spec.failure_policy
    if policy is None:
        return
    path = "spec.failurePolicy.rules"
    restart_job = [k for k, r in enumerate(policy.rules) if r.action in _RESTART_JOB_ACTIONS]
    if restart_job and not gates[c.FEATURE_RESTART_JOB]:
        for k in restart_job:
            yield forbidden(
                f"{path}[{k}].action",
                f"{policy.rules[k].action} requires the {c.FEATURE_RESTART_JOB} feature gate",
            )
        return
    if restart_job:
        for i, rjob in enumerate(js.spec.replicated_jobs):
            if rjob.replicas > c.MAX_REPLICAS_WITH_RESTART_JOB:
                yield invalid(
                    f"spec.replicatedJobs[{i}].replicas",
                    rjob.replicas,
                    f"must be at most {c.MAX_REPLICAS_WITH_RESTART_JOB} when "
                    "RestartJob failure-policy actions are used",
                )
    yield from _rule_names(js)
    known = set(_rjob_names(js))
    for k, rule in enumerate(policy.rules):
        for t, target in enumerate(rule.target_replicated_jobs):
            if target not in known:
                yield invalid(
                    f"{path}[{k}].targetReplicatedJobs[{t}]",
                    target,
                    c.UNKNOWN_TARGET_MESSAGE.format(name=target),
                )
        for r, reason in enumerate(rule.on_job_failure_reasons):
            if reason not in c.VALID_JOB_FAILURE_REASONS:
                yield not_supported(
                    f"{path}[{k}].onJobFailureReasons[{r}]", reason, c.VALID_JOB_FAILURE_REASONS
                )


def _rule_names(js: JobSet) -> Iterator[FieldError]:
    rules = js.spec.failure_policy.rules if js.spec.failure_policy else []
    by_name: dict[str, list[int]] = {}
    for k, rule in enumerate(rules):
        path = f"spec.failurePolicy.rules[{k}].name"
        if not c.RULE_NAME_MIN_LENGTH <= len(rule.name) <= c.RULE_NAME_MAX_LENGTH:
            yield invalid(
                path,
                rule.name,
                f"must be between {c.RULE_NAME_MIN_LENGTH} and "
                f"{c.RULE_NAME_MAX_LENGTH} characters long",
            )
        elif not names.matches(c.RULE_NAME_PATTERN, rule.name):
            yield invalid(path, rule.name, f"must match regex {c.RULE_NAME_PATTERN}")
        by_name.setdefault(rule.name, []).append(k)
    for name, indices in by_name.items():
        if len(indices) > 1:
            shown = "[" + " ".join(str(k) for k in indices) + "]"
            yield invalid(
                f"spec.failurePolicy.rules[{indices[-1]}].name",
                name,
                c.DUPLICATE_RULE_NAMES_MESSAGE.format(indices=shown, name=name),
            )


def _coordinator(js: JobSet, js_name: str) -> Iterator[FieldError]:
    coordinator = js.spec.coordinator
    if coordinator is None:
        return
    path = "spec.coordinator"
    rjob = next((r for r in js.spec.replicated_jobs if r.name == coordinator.replicated_job), None)
    if rjob is None:
        yield invalid(
            f"{path}.replicatedJob", coordinator.replicated_job, "replicatedJob does not exist"
        )
        return
    if not 0 <= coordinator.job_index < rjob.replicas:
        yield invalid(
            f"{path}.jobIndex", coordinator.job_index, f"must be in the range [0, {rjob.replicas})"
        )
    spec = _job_spec(rjob)
    completions = _int_or_none(spec.get("completions"))
    if spec.get("completionMode") != c.COMPLETION_MODE_INDEXED or completions is None:
        yield invalid(
            f"{path}.replicatedJob",
            coordinator.replicated_job,
            "replicatedJob must be Indexed and have completions set",
        )
    elif not 0 <= coordinator.pod_index < completions:
        yield invalid(
            f"{path}.podIndex", coordinator.pod_index, f"must be in the range [0, {completions})"
        )
    subdomain = (js.spec.network.subdomain if js.spec.network else None) or js_name
    endpoint = f"{js_name}-{rjob.name}-{coordinator.job_index}-{coordinator.pod_index}.{subdomain}"
    if names.label_value(endpoint):
        yield invalid(path, endpoint, c.COORDINATOR_LABEL_MESSAGE.format(value=endpoint))


def _volume_claim_policies(
    js: JobSet, js_name: str, existing: Mapping[str, Mapping[str, Any]]
) -> Iterator[FieldError]:
    seen: set[str] = set()
    mounts, volumes = _mounts_and_volumes(js)
    for i, policy in enumerate(js.spec.volume_claim_policies or []):
        for t, template in enumerate(policy.templates):
            path = f"spec.volumeClaimPolicies[{i}].templates[{t}]"
            name = (template.get("metadata") or {}).get("name")
            if not isinstance(name, str) or not name:
                yield required(f"{path}.metadata.name")
                continue
            if name in seen:
                yield duplicate(f"{path}.metadata.name", name)
            seen.add(name)
            for problem in names.dns1123_subdomain(name):
                yield invalid(f"{path}.metadata.name", name, problem)
            pvc_name = f"{name}-{js_name}"
            if len(pvc_name) > c.DNS_LABEL_MAX_LENGTH:
                yield invalid(
                    f"{path}.metadata.name",
                    pvc_name,
                    f"PVC name must be no more than {c.DNS_LABEL_MAX_LENGTH} characters",
                )
            if name not in mounts:
                yield invalid(
                    f"{path}.metadata.name", name, c.VCP_NO_MOUNT_MESSAGE.format(name=name)
                )
            if name in volumes:
                yield invalid(
                    f"{path}.metadata.name",
                    name,
                    f"conflicts with a volume of replicatedJob {volumes[name]!r}",
                )
            yield from _existing_pvc(
                path, policy.retention_policy, template, existing.get(pvc_name)
            )


def _existing_pvc(
    path: str, retention: Any, template: Mapping[str, Any], pvc: Mapping[str, Any] | None
) -> Iterator[FieldError]:
    if pvc is None:
        return
    if pvc.get("spec") != template.get("spec"):
        yield invalid(
            f"{path}.spec", "object", "an existing PVC with this name has a different spec"
        )
    when = retention.when_deleted if retention is not None else WhenDeleted.DELETE
    if when is not WhenDeleted.RETAIN:
        yield invalid(f"{path}.metadata.name", template["metadata"]["name"], c.VCP_RETAIN_MESSAGE)


def _mounts_and_volumes(js: JobSet) -> tuple[set[str], dict[str, str]]:
    mounts: set[str] = set()
    volumes: dict[str, str] = {}
    for rjob in js.spec.replicated_jobs:
        pod = ((_job_spec(rjob).get("template") or {}).get("spec")) or {}
        for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
            mounts.update(m.get("name") for m in container.get("volumeMounts") or [])
        for volume in pod.get("volumes") or []:
            volumes.setdefault(volume.get("name"), rjob.name)
    return mounts, volumes
