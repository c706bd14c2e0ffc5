"""The Pods of the simulated Job controller: how they are named, built and move through phases.

Pure; no I/O. `pod_manifest` builds the Pod the Kubernetes Job controller would create for one
completion index of a Job (name `<job>-<index>-<5 chars>`, hostname `<job>-<index>`, the index as
annotation, label and `JOB_COMPLETION_INDEX` env var, the Job's labels and an owner reference,
everything else, nodeSelector and tolerations included, copied from the template).
`running_status` and `finished_status` are what the kubelet would report; `PodView` is the slim
view `job_sync.sync_job` decides on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from jobset_infra.api.constants import JOB_COMPLETION_INDEX_KEY

JsonObj = dict[str, Any]

# --- Kubernetes' own strings for Job Pods (k8s.io/api/batch/v1, pkg/controller/job) ------------

# Labels the API server puts into a Job's pod template; the Job controller's Pods carry them.
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
# Env var pointing at the completion-index annotation through the downward API.
COMPLETION_INDEX_ENV: Final = "JOB_COMPLETION_INDEX"
# Pod phases.
PENDING: Final = "Pending"
RUNNING: Final = "Running"
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
# generateName leaves room for the API server's 5 random characters (63 - 5).
_MAX_GENERATE_NAME: Final = 58
# The alphabet of Kubernetes' generated name suffixes (no vowels, no look-alikes).
_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


def timestamp(now: datetime) -> str:
    """RFC 3339 in UTC with second precision, as Kubernetes serialises metav1.Time."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_timestamp(value: str) -> datetime:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def copy_json(value: Any) -> Any:
    """Deep copy of JSON-like data, several times faster than copy.deepcopy on Pod templates."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) for v in value]
    return value


# --- View -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodView:
    """What the Job controller needs of a Pod; `index` is None for NonIndexed Jobs."""

    name: str
    uid: str
    index: int | None
    phase: str
    ready: bool
    node_name: str
    deleting: bool
    started: str | None
    # For failed Pods only (podFailurePolicy): (container, exit code) of terminated containers,
    # and the Pod's conditions as (type, status).
    exit_codes: tuple[tuple[str, int], ...] = ()
    conditions: frozenset[tuple[str, str]] = frozenset()
    # Container restarts so far (restartPolicy OnFailure restarts failed containers in place).
    restarts: int = 0

    @property
    def terminal(self) -> bool:
        return self.phase in (SUCCEEDED, FAILED)

    @property
    def live(self) -> bool:
        """Counted in `active`: not finished and not being deleted."""
        return not self.terminal and not self.deleting


def pod_view(pod: JsonObj) -> PodView:
    meta = pod.get("metadata", {})
    status = pod.get("status") or {}
    raw_index = (meta.get("annotations") or {}).get(JOB_COMPLETION_INDEX_KEY)
    conditions = status.get("conditions") or ()
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    phase = status.get("phase", PENDING)
    failed = phase == FAILED
    return PodView(
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        index=int(raw_index) if raw_index is not None and str(raw_index).isdigit() else None,
        phase=phase,
        ready=ready,
        node_name=(pod.get("spec") or {}).get("nodeName") or "",
        deleting=bool(meta.get("deletionTimestamp")),
        started=status.get("startTime"),
        restarts=sum(int(c.get("restartCount", 0)) for c in status.get("containerStatuses") or ()),
        exit_codes=_exit_codes(status) if failed else (),
        conditions=frozenset(
            (str(c.get("type")), str(c.get("status"))) for c in conditions
        ) if failed else frozenset(),
    )


def _exit_codes(status: JsonObj) -> tuple[tuple[str, int], ...]:
    out = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.get(key) or ():
            terminated = (c.get("state") or {}).get("terminated")
            if terminated is not None:
                out.append((str(c.get("name", "")), int(terminated.get("exitCode", 0))))
    return tuple(out)


# --- Pods --------------------------------------------------------------------------------------


def pod_name(job: JsonObj, index: int | None, attempt: int) -> str:
    """`<job>-<index>-<suffix>`, the suffix derived from (uid, index, attempt) so it is stable.

    A replay of the same decision on a stale view creates the same name, which the API server
    refuses with AlreadyExists instead of starting a second Pod for the same index.
    """
    meta = job["metadata"]
    name: str = meta["name"]
    tail = "-" if index is None else f"-{index}-"
    prefix = name[: _MAX_GENERATE_NAME - len(tail)] + tail
    digest = hashlib.sha1(f"{meta.get('uid', '')}/{index}/{attempt}".encode()).digest()
    suffix = "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])
    return prefix + suffix


def pod_manifest(job: JsonObj, index: int | None, name: str) -> JsonObj:
    """The Pod the Job controller creates from the Job's template for one completion index."""
    meta = job["metadata"]
    template = (job.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    annotations = dict(tmeta.get("annotations") or {})
    labels.update({
        CONTROLLER_UID_LABEL: meta.get("uid", ""), JOB_NAME_LABEL: meta["name"],
        LEGACY_CONTROLLER_UID_LABEL: meta.get("uid", ""), LEGACY_JOB_NAME_LABEL: meta["name"],
    })
    spec: JsonObj = copy_json(template.get("spec") or {})
    if index is not None:
        labels[JOB_COMPLETION_INDEX_KEY] = str(index)
        annotations[JOB_COMPLETION_INDEX_KEY] = str(index)
        spec["hostname"] = f"{meta['name']}-{index}"
        for container in [*spec.get("initContainers", ()), *spec.get("containers", ())]:
            container["env"] = [*container.get("env", ()), _index_env()]
    owner = {
        "apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta.get("uid", ""),
        "controller": True, "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "generateName": name[:-5], "namespace": meta.get("namespace", "default"),
            "labels": labels, "annotations": annotations, "ownerReferences": [owner],
        },
        "spec": spec,
        "status": {"phase": PENDING},
    }


def _index_env() -> JsonObj:
    path = f"metadata.annotations['{JOB_COMPLETION_INDEX_KEY}']"
    return {"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def running_status(pod: JsonObj, now: datetime) -> JsonObj:
    """What the kubelet reports once every container of a bound Pod runs and is ready."""
    at = timestamp(now)
    old = pod.get("status") or {}
    kept = [c for c in old.get("conditions") or () if c.get("type") == "PodScheduled"]
    if not kept:
        kept = [_pod_condition("PodScheduled", "True", at)]
    containers = (pod.get("spec") or {}).get("containers") or ()
    return {
        **old,
        "phase": RUNNING,
        "conditions": [
            *kept,
            *(_pod_condition(kind, "True", at) for kind in (
                "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")),
        ],
        "startTime": old.get("startTime") or at,
        "podIP": old.get("podIP") or _pod_ip(pod),
        "containerStatuses": [
            _container_status(pod, c, ready=True, state={"running": {"startedAt": at}})
            for c in containers
        ],
    }


def finished_status(
    pod: JsonObj, now: datetime, *, succeeded: bool, exit_code: int | None = None,
    reason: str | None = None, message: str | None = None,
) -> JsonObj:
    """A terminated Pod: phase Succeeded or Failed, containers terminated with `exit_code`."""
    at = timestamp(now)
    old = pod.get("status") or {}
    code = (0 if succeeded else 1) if exit_code is None else exit_code
    ended = "Completed" if succeeded else "Error"
    conditions = [c for c in old.get("conditions") or () if c.get("type") in (
        "PodScheduled", "Initialized")]
    conditions += [
        _pod_condition(kind, "False", at, "PodCompleted" if succeeded else "PodFailed")
        for kind in ("PodReadyToStartContainers", "ContainersReady", "Ready")
    ]
    containers = (pod.get("spec") or {}).get("containers") or ()
    status: JsonObj = {
        **old,
        "phase": SUCCEEDED if succeeded else FAILED,
        "conditions": conditions,
        "startTime": old.get("startTime") or at,
        "containerStatuses": [
            _container_status(pod, c, ready=False, state={"terminated": {
                "exitCode": code, "reason": ended, "startedAt": old.get("startTime") or at,
                "finishedAt": at}})
            for c in containers
        ],
    }
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return status


def restarted_status(pod: JsonObj, now: datetime, *, exit_code: int = 1) -> JsonObj:
    """The kubelet restarted the Pod's first container after it exited with `exit_code`
    (restartPolicy OnFailure): the Pod stays Running, the restart count grows."""
    at = timestamp(now)
    old = pod.get("status") or {}
    containers = [dict(c) for c in old.get("containerStatuses") or ()]
    if containers:
        first = containers[0]
        started = ((first.get("state") or {}).get("running") or {}).get("startedAt", at)
        first["lastState"] = {"terminated": {"exitCode": exit_code, "reason": "Error",
                                             "startedAt": started, "finishedAt": at}}
        first["state"] = {"running": {"startedAt": at}}
        first["restartCount"] = int(first.get("restartCount", 0)) + 1
    return {**old, "containerStatuses": containers}


def _pod_ip(pod: JsonObj) -> str:
    """A stable address in the cluster's Pod range, derived from the uid (nothing is routed)."""
    digest = hashlib.sha256(str((pod.get("metadata") or {}).get("uid", "")).encode()).digest()
    return f"10.{64 + digest[0] % 64}.{digest[1]}.{1 + digest[2] % 254}"


def _container_status(pod: JsonObj, container: JsonObj, *, ready: bool,
                      state: JsonObj) -> JsonObj:
    """One containerStatuses entry with every field the API requires (clients such as the
    official one refuse a status without `imageID`), keeping the restarts counted so far."""
    name, image = container.get("name", ""), container.get("image", "")
    before: JsonObj = next((c for c in (pod.get("status") or {}).get("containerStatuses") or ()
                   if c.get("name") == name), {})
    repository, _, tag = image.rpartition(":")
    if not repository or "/" in tag:  # no tag, or the ":" belongs to a registry port
        repository = image
    uid = (pod.get("metadata") or {}).get("uid", "")
    return {
        "name": name, "image": image,
        "imageID": f"{repository}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
        "containerID": "containerd://" + hashlib.sha256(f"{uid}/{name}".encode()).hexdigest(),
        "ready": ready, "started": ready, "restartCount": int(before.get("restartCount", 0)),
        "state": state,
    }


def _pod_condition(kind: str, status: str, at: str, reason: str | None = None) -> JsonObj:
    out: JsonObj = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": at}
    if reason:
        out["reason"] = reason
    return out


def due_for_completion(pods: Iterable[PodView], now: datetime, after_seconds: float) -> list[str]:
    """Names of running Pods that have run for `after_seconds` (the demo's auto-complete)."""
    return [
        p.name for p in pods
        if p.live and p.phase == RUNNING and p.started is not None
        and (now - parse_timestamp(p.started)).total_seconds() >= after_seconds
    ]


# --- Completed-index strings ("1,3-5,7") -------------------------------------------------------


def format_indexes(indexes: Iterable[int]) -> str:
    """Kubernetes' compressed form: runs of three or more become `first-last`."""
    parts: list[str] = []
    run: list[int] = []
    for i in sorted(set(indexes)):
        if run and i != run[-1] + 1:
            parts.extend(_render_run(run))
            run = []
        run.append(i)
    if run:
        parts.extend(_render_run(run))
    return ",".join(parts)


def _render_run(run: list[int]) -> list[str]:
    return [f"{run[0]}-{run[-1]}"] if len(run) >= 3 else [str(i) for i in run]


def parse_indexes(text: str | None) -> set[int]:
    out: set[int] = set()
    for part in (text or "").split(","):
        if "-" in part:
            first, last = part.split("-", 1)
            out.update(range(int(first), int(last) + 1))
        elif part.strip():
            out.add(int(part))
    return out
