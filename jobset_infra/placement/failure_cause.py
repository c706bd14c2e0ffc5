"""Why a child Job failed: its cause from the evidence its pods and nodes leave (pure; no I/O).

The runtime gathers the evidence once, when it first sees a Job failing: the Job's pods (what
`pod_failure_from_manifest` keeps of each) and the Nodes they ran on, as its Node cache has them
(None for a Node that is gone). The Job's own failure condition and the Nodes of the pool it
held complete it. `diagnose` names one `Cause` with a sentence saying what showed it; the most
specific evidence wins, in this order:

1. a Node the pods ran on is gone (`node_deleted`), NotReady (`node_not_ready`) or reports a
   device problem (`tpu_device_error`); the pool's other Nodes count for the last two;
2. a pod's DisruptionTarget condition: `preempted` (the scheduler preempted it), else
   `pod_disrupted` (taint eviction, pod garbage collection, the kubelet, the Eviction API);
3. the Job condition's own words (a podFailurePolicy FailJob rule names the exit code or the
   pod condition) and DeadlineExceeded;
4. the containers' exit: `oom_killed`, `signal` (code above 128), `user_exit` (1 to 128);
5. `unknown`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jobset_infra.api.resilience import Cause
from jobset_infra.placement.nodes import SlimNode

__all__ = ["Diagnosis", "FailureEvidence", "PodFailure", "diagnose", "pod_failure_from_manifest"]

_PREEMPTION = "PreemptionByScheduler"
_DEADLINE = "DeadlineExceeded"
_OOM = "OOMKilled"
# What the Job controller writes when a podFailurePolicy FailJob rule matched.
_EXIT_RULE = re.compile(r"failed with exit code (\d+)")
_CONDITION_RULE = re.compile(r"has condition (\w+)")
_SIGNALLED_ABOVE = 128


@dataclass(frozen=True, slots=True)
class PodFailure:
    """What one pod of a failed Job tells: where it ran, how it was stopped, how it exited."""

    name: str
    node: str = ""
    disruption: str = ""
    """The reason of its DisruptionTarget=True condition ("" when it has none)."""
    exit_codes: tuple[int, ...] = ()
    """Non-zero exit codes of its terminated containers."""
    exit_reasons: tuple[str, ...] = ()
    """Their terminated reasons (OOMKilled, Error, ...)."""


@dataclass(frozen=True, slots=True)
class FailureEvidence:
    """The pods of a failed Job and the Nodes they ran on (None: that Node is gone)."""

    pods: tuple[PodFailure, ...] = ()
    nodes: Mapping[str, SlimNode | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """A failure's cause and the evidence for it, in words."""

    cause: Cause
    detail: str


def pod_failure_from_manifest(pod: Mapping[str, Any]) -> PodFailure:
    """Return what a Pod manifest tells about a failure; never raises on odd shapes."""
    meta, spec, status = (_mapping(pod.get(part)) for part in ("metadata", "spec", "status"))
    disruption = ""
    for entry in _list(status.get("conditions")):
        cond = _mapping(entry)
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            disruption = str(cond.get("reason") or "DisruptionTarget")
    codes, reasons = [], []
    statuses = [*_list(status.get("initContainerStatuses")),
                *_list(status.get("containerStatuses"))]
    for container in statuses:
        done = _mapping(_mapping(_mapping(container).get("state")).get("terminated"))
        code = done.get("exitCode")
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            codes.append(code)
            reasons.append(str(done.get("reason") or ""))
    return PodFailure(
        name=str(meta.get("name", "")),
        node=str(spec.get("nodeName") or ""),
        disruption=disruption,
        exit_codes=tuple(codes),
        exit_reasons=tuple(reasons),
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def diagnose(
    reason: str,
    message: str,
    evidence: FailureEvidence | None = None,
    pool: Sequence[SlimNode] = (),
    pool_name: str = "",
) -> Diagnosis:
    """Return the cause of a Job failure (its Failed/FailureTarget `reason` and `message`)."""
    evidence = evidence or FailureEvidence()
    return (
        _from_nodes(evidence, pool, pool_name)
        or _from_disruption(evidence.pods)
        or _from_job_condition(reason, message)
        or _from_exits(evidence.pods)
        or Diagnosis(Cause.UNKNOWN, _unknown(reason, evidence))
    )


def _from_nodes(
    evidence: FailureEvidence, pool: Sequence[SlimNode], pool_name: str
) -> Diagnosis | None:
    ran_on = sorted({p.node for p in evidence.pods if p.node})
    for name in ran_on:
        if name in evidence.nodes and evidence.nodes[name] is None:
            return Diagnosis(Cause.NODE_DELETED, f"node {name} no longer exists")
    seen = [n for name in ran_on if (n := evidence.nodes.get(name)) is not None]
    where = f" (pool {pool_name})" if pool_name else ""
    nodes = _unique([*seen, *(n for n in pool if not n.placeholder)])
    for node in nodes:
        if not node.ready:
            return Diagnosis(Cause.NODE_NOT_READY, f"node {node.name}{where} is NotReady")
    for node in nodes:
        if node.problems:
            return Diagnosis(
                Cause.TPU_DEVICE_ERROR, f"node {node.name}{where}: {'; '.join(node.problems)}"
            )
    return None


def _unique(nodes: Iterable[SlimNode]) -> list[SlimNode]:
    found: dict[str, SlimNode] = {}
    for node in nodes:
        found.setdefault(node.name, node)
    return list(found.values())


def _from_disruption(pods: Sequence[PodFailure]) -> Diagnosis | None:
    for pod in pods:
        if pod.disruption == _PREEMPTION:
            return Diagnosis(Cause.PREEMPTED, f"pod {pod.name} was preempted ({pod.disruption})")
    for pod in pods:
        if pod.disruption:
            said = f"pod {pod.name} was disrupted ({pod.disruption})"
            return Diagnosis(Cause.POD_DISRUPTED, said)
    return None


def _from_job_condition(reason: str, message: str) -> Diagnosis | None:
    if reason == _DEADLINE:
        return Diagnosis(Cause.DEADLINE_EXCEEDED, message or reason)
    found = _CONDITION_RULE.search(message)
    if found and found.group(1) == "DisruptionTarget":
        return Diagnosis(Cause.POD_DISRUPTED, message)
    if found := _EXIT_RULE.search(message):
        return Diagnosis(_exit_cause(int(found.group(1)), ""), message)
    return None


def _from_exits(pods: Sequence[PodFailure]) -> Diagnosis | None:
    exits = [(pod.name, code, why) for pod in pods
             for code, why in zip(pod.exit_codes, pod.exit_reasons, strict=False)]
    if not exits:
        return None
    # The most telling exit first: OOM, then a signal, then the program's own code.
    rank = {Cause.OOM_KILLED: 0, Cause.SIGNAL: 1, Cause.USER_EXIT: 2}
    name, code, why = min(exits, key=lambda e: (rank[_exit_cause(e[1], e[2])], e[0]))
    cause = _exit_cause(code, why)
    said = f" ({why})" if why else ""
    return Diagnosis(cause, f"pod {name} exited with code {code}{said}")


def _exit_cause(code: int, reason: str) -> Cause:
    if reason == _OOM:
        return Cause.OOM_KILLED
    return Cause.SIGNAL if code > _SIGNALLED_ABOVE else Cause.USER_EXIT


def _unknown(reason: str, evidence: FailureEvidence) -> str:
    seen = f"{len(evidence.pods)} pod(s) left" if evidence.pods else "no pod left to read"
    return f"{reason or 'failed'}; {seen}, and their nodes are healthy"
