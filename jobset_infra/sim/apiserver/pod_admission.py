"""The Priority and DefaultTolerationSeconds admission plugins, as kube-apiserver 1.37 runs them
on a Pod's create (after ServiceAccount, `service_accounts`), and the two system
PriorityClasses the API server creates at start.

Priority: a Pod's `priorityClassName` must name a PriorityClass (403 `no PriorityClass with
name x was found`); without one it takes the highest-valued `globalDefault` class, or priority 0.
`spec.priority` and `spec.preemptionPolicy` are set from the class (PreemptLowerPriority when it
says nothing), and a Pod that sends other values is refused, as the plugin refuses it.
DefaultTolerationSeconds: a Pod that does not tolerate them gets NoExecute tolerations of the
not-ready and unreachable Node taints for 300 s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobset_infra.sim.apiserver.errors import ForbiddenError
from jobset_infra.sim.apiserver.resources import GVR

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.resources import ResourceInfo
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
PODS = GVR("", "v1", "pods")
PRIORITY_CLASSES = GVR("scheduling.k8s.io", "v1", "priorityclasses")
PREEMPT = "PreemptLowerPriority"
TOLERATION_SECONDS = 300
NOT_READY, UNREACHABLE = "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"
SYSTEM_CLASSES = (
    ("system-node-critical", 2000001000,
     "Used for system critical pods that must not be moved from their current node."),
    ("system-cluster-critical", 2000000000,
     "Used for system critical pods that must run in the cluster, but can be moved to another "
     "node if necessary."),
)


def install(store: Store) -> None:
    store.admission.setdefault(PODS, []).append(_PodAdmission(store))
    for name, value, description in SYSTEM_CLASSES:
        store.create(PRIORITY_CLASSES, {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "description": description,
            "preemptionPolicy": PREEMPT}, field_manager="kube-apiserver")


def _forbidden(pod: JsonObj, why: str) -> ForbiddenError:
    name = pod["metadata"].get("name", "")
    return ForbiddenError(403, "Forbidden", f'pods "{name}" is forbidden: {why}',
                          details={"name": name, "kind": "pods"})


class _PodAdmission:
    def __init__(self, store: Store) -> None:
        self.store = store

    def __call__(self, info: ResourceInfo, pod: JsonObj, old: JsonObj | None) -> JsonObj:
        if old is None:
            spec = pod.setdefault("spec", {})
            self._priority(pod, spec)
            _default_tolerations(spec)
        return pod

    def _class(self, pod: JsonObj, name: str) -> JsonObj | None:
        if not name:
            defaults = [c for c in self.store.iter_objects(PRIORITY_CLASSES)
                        if c.get("globalDefault")]
            return max(defaults, key=lambda c: int(c.get("value") or 0), default=None)
        found = self.store.peek(PRIORITY_CLASSES, "", name)
        if found is None:
            raise _forbidden(pod, f"no PriorityClass with name {name} was found")
        return found

    def _priority(self, pod: JsonObj, spec: JsonObj) -> None:
        chosen = self._class(pod, str(spec.get("priorityClassName") or ""))
        value = int(chosen.get("value") or 0) if chosen else 0
        policy = str((chosen or {}).get("preemptionPolicy") or PREEMPT)
        if chosen is not None:
            spec["priorityClassName"] = chosen["metadata"]["name"]
        if spec.get("priority") is not None and spec["priority"] != value:
            raise _forbidden(pod, f"the integer value of priority ({spec['priority']}) must not "
                             f"be provided in pod spec; priority admission controller computed "
                             f"{value} from the given PriorityClass name")
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise _forbidden(pod, f"the string value of PreemptionPolicy "
                             f"({spec['preemptionPolicy']}) must not be provided in pod spec; "
                             f"priority admission controller computed {policy} from the given "
                             "PriorityClass name")
        spec["priority"], spec["preemptionPolicy"] = value, policy


def _tolerates(tolerations: list[JsonObj], key: str) -> bool:
    return any(t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)
               for t in tolerations)


def _default_tolerations(spec: JsonObj) -> None:
    tolerations = list(spec.get("tolerations") or ())
    added = [{"key": key, "operator": "Exists", "effect": "NoExecute",
              "tolerationSeconds": TOLERATION_SECONDS}
             for key in (NOT_READY, UNREACHABLE) if not _tolerates(tolerations, key)]
    if added:
        spec["tolerations"] = tolerations + added
