"""A Job's `podFailurePolicy`, as the Kubernetes Job controller applies it (pure; no I/O).

For each Pod that failed, the rules are tried in order and the first that matches decides:
`FailJob` fails the whole Job (reason `PodFailurePolicy`, with Kubernetes' message naming the
container and exit code, or the Pod condition, and the rule's index), `Ignore` does not count the
failure against `backoffLimit` (the Pod is still replaced), `Count` counts it as usual. A rule
matches on exit codes of terminated containers (`In` / `NotIn`, optionally one container) or on
Pod conditions (type and status, e.g. `DisruptionTarget=True`). No match counts the failure.
`FailIndex` needs `backoffLimitPerIndex`, which the sim does not model, so it counts too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from jobset_infra.sim.cluster.job_pods import PodView

FAIL_JOB: Final = "FailJob"
IGNORE: Final = "Ignore"
COUNT: Final = "Count"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one failed Pod means for its Job: counted or not, and a FailJob message if any."""

    counts: bool = True
    fail_job: str | None = None


COUNTED: Final = Outcome()


def failures(job: Mapping[str, Any], failed: Sequence[PodView]) -> tuple[int, str | None]:
    """How many of the newly failed Pods count, and the first FailJob message, if any."""
    rules = rules_of(job)
    if not rules:
        return len(failed), None
    namespace = (job.get("metadata") or {}).get("namespace", "")
    outcomes = [
        classify(rules, f"{namespace}/{p.name}", p.exit_codes, p.conditions) for p in failed
    ]
    fail_job = next((o.fail_job for o in outcomes if o.fail_job), None)
    return sum(o.counts for o in outcomes), fail_job


def rules_of(job: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    policy = (job.get("spec") or {}).get("podFailurePolicy") or {}
    rules: Sequence[Mapping[str, Any]] = policy.get("rules") or ()
    return rules


def classify(
    rules: Sequence[Mapping[str, Any]],
    pod: str,
    exit_codes: Sequence[tuple[str, int]],
    conditions: frozenset[tuple[str, str]],
) -> Outcome:
    """Apply `rules` to a failed Pod (`pod` is "<namespace>/<name>" for messages)."""
    for index, rule in enumerate(rules):
        action = rule.get("action")
        if rule.get("onExitCodes") is not None:
            matched = _matching_exit_code(rule["onExitCodes"], exit_codes)
            if matched is None:
                continue
            message = (f"Container {matched[0]} for pod {pod} failed with exit code {matched[1]} "
                       f"matching {FAIL_JOB} rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            kind = _matching_condition(rule["onPodConditions"], conditions)
            if kind is None:
                continue
            message = f"Pod {pod} has condition {kind} matching {FAIL_JOB} rule at index {index}"
        else:
            continue
        if action == FAIL_JOB:
            return Outcome(counts=True, fail_job=message)
        if action == IGNORE:
            return Outcome(counts=False)
        if action == COUNT:
            return COUNTED
    return COUNTED


def _matching_exit_code(
    requirement: Mapping[str, Any], exit_codes: Sequence[tuple[str, int]]
) -> tuple[str, int] | None:
    container = requirement.get("containerName")
    values = set(requirement.get("values") or ())
    inside = requirement.get("operator") == "In"
    for name, code in exit_codes:
        if code == 0 or (container and name != container):
            continue
        if (code in values) == inside:
            return name, code
    return None


def _matching_condition(
    patterns: Sequence[Mapping[str, Any]], conditions: frozenset[tuple[str, str]]
) -> str | None:
    for pattern in patterns:
        kind = str(pattern.get("type", ""))
        if (kind, str(pattern.get("status", "True"))) in conditions:
            return kind
    return None
