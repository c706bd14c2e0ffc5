"""Validation of a JobSet, identical to upstream's validating webhook plus its CRD rules.

Pure: `validate(js, old=None, ...)` returns every problem as a FieldError; empty means valid. It
expects a defaulted JobSet (see `defaults.default`), as upstream's webhook sees one. The rules
are the registry in `jobset_infra.api.rules`, each declared once: those written as CEL are
evaluated here the way the API server evaluates the generated CRD (celpy), the others are the
Python checks below (upstream's ValidateCreate, reference §4.2; ValidateUpdate §4.3 is in
`validation_update`). So a caller without an API server (Pulumi preview, `jobset-infra
validate`, the controller's InvalidSpec condition) gets the complete verdict.
"""

from __future__ import annotations

import functools
import json
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
)
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.job_names import child_job_name, indexed_pod_name
from jobset_infra.api.models import (
    FailurePolicyAction,
    JobSet,
    ReplicatedJob,
    RestartStrategy,
    WhenDeleted,
)

__all__ = [
    "FieldError",
    "check_name",
    "child_name_problems",
    "children_refused",
    "coordinator_problems",
    "crd_problems",
    "failure_policy_problems",
    "in_place_restart_gate",
    "replicated_job_problems",
    "success_policy_problems",
    "validate",
    "volume_claim_policy_problems",
    "with_generated_name",
]

# Stand-in for the 5 random characters upstream's SimpleNameGenerator appends (same alphabet).
_NAME_SUFFIX: Final = "bcdfg"
_RESTART_JOB_ACTIONS: Final = frozenset(
    {FailurePolicyAction.RESTART_JOB, FailurePolicyAction.RESTART_JOB_AND_IGNORE_MAX_RESTARTS}
)


def validate(
    js: JobSet,
    old: JobSet | None = None,
    *,
    feature_gates: FeatureGates | None = None,
    existing_pvcs: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[FieldError]:
    """Every problem of `js` (created, or updated from `old`); pure, no I/O.

    `existing_pvcs` maps PVC names in the JobSet's namespace to their manifests (upstream does a
    live GET); `feature_gates` default to the registry's defaults (`api.features`).
    """
    from jobset_infra.api.rules import Context, webhook_problems

    context = Context(check_name(js), feature_gates or FeatureGates(), existing_pvcs or {}, old)
    return [*crd_problems(js, old, context.gates), *webhook_problems(js, context)]


def children_refused(js: JobSet, feature_gates: FeatureGates | None = None
                     ) -> list[FieldError]:
    """What `validate` finds in `js` that the API server will also refuse in its children (a
    Job, pod, Service or PVC name, a label value): the rules marked `children`, same messages."""
    from jobset_infra.api.rules import Context
    from jobset_infra.api.rules import children_refused as refused

    context = Context(check_name(js), feature_gates or FeatureGates())
    return refused(js, context, crd_problems(js, gates=context.gates))


def crd_problems(
    js: JobSet, old: JobSet | None = None, gates: FeatureGates | None = None
) -> list[FieldError]:
    """What the CRD generated for `gates` says about the spec of `js` (an update of `old`): its
    schema and CEL rules. Memoized by content: the same spec gets the same verdict at once."""
    from jobset_infra.api.crd.generate import crd_gates

    new_key = _spec_key(with_generated_name(js.to_dict()))
    old_key = _spec_key(old.to_dict()) if old is not None else ""
    return list(_crd_verdict(new_key, old_key, crd_gates(gates)))


def _spec_key(manifest: dict[str, Any]) -> str:
    # What the rules read: the spec, the name and whether it finished. The rest of the status is
    # the controller's, and the rest of metadata (resourceVersion, labels, ...) changes without
    # changing the verdict.
    meta = manifest.get("metadata") or {}
    named = {k: meta[k] for k in ("name", "generateName") if k in meta}
    status = manifest.get("status") or {}
    kept = {k: v for k, v in manifest.items() if k not in ("status", "metadata")}
    if "terminalState" in status:
        kept["status"] = {"terminalState": status["terminalState"]}
    return json.dumps({**kept, "metadata": named}, sort_keys=True)


@functools.lru_cache(maxsize=256)
def _crd_verdict(new: str, old: str, gates: FeatureGates) -> tuple[FieldError, ...]:
    from jobset_infra.api.crd.generate import jobset_crd_schema

    schema = jobset_crd_schema(gates)
    return tuple(schema.validate(json.loads(new), json.loads(old) if old else None))


def with_generated_name(manifest: dict[str, Any]) -> dict[str, Any]:
    """`manifest` with the name the API server generates from generateName before it validates
    (five characters appended), so rules on the name see one as they do on a real server."""
    meta = manifest.get("metadata")
    if not isinstance(meta, dict) or meta.get("name") or not meta.get("generateName"):
        return manifest
    return {**manifest, "metadata": {**meta, "name": f"{meta['generateName']}{_NAME_SUFFIX}"}}


def check_name(js: JobSet) -> str:
    """The name checks use: metadata.name, or generateName plus a 5-character suffix."""
    return js.metadata.name or f"{js.metadata.generate_name or ''}{_NAME_SUFFIX}"


def _rjob_names(js: JobSet) -> list[str]:
    return [r.name for r in js.spec.replicated_jobs]


def _job_spec(rjob: ReplicatedJob) -> dict[str, Any]:
    spec = rjob.template.get("spec")
    return spec if isinstance(spec, dict) else {}


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- create rules CEL cannot express (upstream ValidateCreate); listed in `rules` ------------


def in_place_restart_gate(js: JobSet, gates: FeatureGates) -> Iterator[FieldError]:
    policy = js.spec.failure_policy
    in_place = policy is not None and policy.restart_strategy is RestartStrategy.IN_PLACE_RESTART
    if in_place and not gates.enabled(Feature.IN_PLACE_RESTART):
        yield forbidden(
            "spec.failurePolicy.restartStrategy",
            f"InPlaceRestart requires the {Feature.IN_PLACE_RESTART} feature gate",
        )


def child_name_problems(js: JobSet, js_name: str, i: int, rjob: ReplicatedJob
                        ) -> Iterator[FieldError]:
    """Job and pod names of replicated job `i` that are not DNS-1035 labels (their length is a
    CEL rule): the API server would refuse those Jobs, or the Job controller their pods."""
    path = f"spec.replicatedJobs[{i}]"
    spec = _job_spec(rjob)
    completions = _int_or_none(spec.get("completions"))
    # As upstream: the index of the last Job, -1 when there are no replicas.
    longest_job = child_job_name(js_name, rjob.name, rjob.replicas - 1)
    for problem in names.dns1035_label(longest_job):
        if not names.is_too_long(problem):
            yield invalid(f"{path}.name", longest_job, problem)
    if spec.get("completionMode") == c.COMPLETION_MODE_INDEXED and completions is not None:
        longest_pod = indexed_pod_name(longest_job, completions - 1, _NAME_SUFFIX)
        for problem in names.dns1035_label(longest_pod):
            if not names.is_too_long(problem):
                yield invalid(f"{path}.name", longest_pod, problem)


def replicated_job_problems(
    js: JobSet, js_name: str, i: int, rjob: ReplicatedJob, gates: FeatureGates
) -> Iterator[FieldError]:
    """groupName, dependsOn pointing at a later job, InPlaceRestart's Job fields."""
    path = f"spec.replicatedJobs[{i}]"
    spec = _job_spec(rjob)
    for problem in names.dns1035_label(rjob.group_name):
        if not names.is_too_long(problem):  # its length is the schema's maxLength
            yield invalid(f"{path}.groupName", rjob.group_name, problem)
    earlier = set(_rjob_names(js)[:i])
    for j, dep in enumerate((rjob.depends_on or []) if i > 0 else []):
        if dep.name not in earlier:
            message = c.DEPENDS_ON_ORDER_MESSAGE.format(rjob=rjob.name, dep=dep.name)
            yield invalid(f"{path}.dependsOn[{j}].name", dep.name, message)
    yield from _in_place_restart_job(js, path, spec, gates)


def _in_place_restart_job(
    js: JobSet, path: str, spec: Mapping[str, Any], gates: FeatureGates
) -> Iterator[FieldError]:
    policy = js.spec.failure_policy
    if not gates.enabled(Feature.IN_PLACE_RESTART) or policy is None:
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


def success_policy_problems(js: JobSet) -> Iterator[FieldError]:
    """successPolicy targets that are not replicated jobs."""
    policy = js.spec.success_policy
    known = set(_rjob_names(js))
    for k, target in enumerate(policy.target_replicated_jobs if policy else []):
        if target not in known:
            yield invalid(
                f"spec.successPolicy.targetReplicatedJobs[{k}]",
                target,
                c.UNKNOWN_TARGET_MESSAGE.format(name=target),
            )


def failure_policy_problems(js: JobSet, gates: FeatureGates) -> Iterator[FieldError]:
    """RestartJob actions without their gate or over too many replicas, rule names, targets and
    failure reasons."""
    policy = js.spec.failure_policy
    if policy is None:
        return
    path = "spec.failurePolicy.rules"
    restart_job = [k for k, r in enumerate(policy.rules) if r.action in _RESTART_JOB_ACTIONS]
    if restart_job and not gates.enabled(Feature.RESTART_JOB):
        for k in restart_job:
            yield forbidden(
                f"{path}[{k}].action",
                f"{policy.rules[k].action} requires the {Feature.RESTART_JOB} feature gate",
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
    """Rule names used twice (their length and pattern are the schema's)."""
    rules = js.spec.failure_policy.rules if js.spec.failure_policy else []
    by_name: dict[str, list[int]] = {}
    for k, rule in enumerate(rules):
        by_name.setdefault(rule.name, []).append(k)
    for name, indices in by_name.items():
        if len(indices) > 1:
            shown = "[" + " ".join(str(k) for k in indices) + "]"
            yield invalid(
                f"spec.failurePolicy.rules[{indices[-1]}].name",
                name,
                c.DUPLICATE_RULE_NAMES_MESSAGE.format(indices=shown, name=name),
            )


def coordinator_problems(js: JobSet) -> Iterator[FieldError]:
    """A coordinator job that is not Indexed with completions, or a pod index out of range (that
    the job exists and the job index fits, and the label's length, are CEL rules)."""
    coordinator = js.spec.coordinator
    if coordinator is None:
        return
    path = "spec.coordinator"
    rjob = next((r for r in js.spec.replicated_jobs if r.name == coordinator.replicated_job), None)
    if rjob is None:
        return
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


def volume_claim_policy_problems(
    js: JobSet, js_name: str, existing: Mapping[str, Mapping[str, Any]]
) -> Iterator[FieldError]:
    """Templates without a name, named twice, not a subdomain, not mounted, clashing with a
    volume, or unlike an existing PVC (the PVC name's length is a CEL rule)."""
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
