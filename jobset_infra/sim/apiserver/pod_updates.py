"""What an update of a Pod may change, as ValidatePodUpdate decides it in kube-apiserver 1.37
(the conformance corpus's `pod-updates` holds its answers): only the containers' and init
containers' images, `activeDeadlineSeconds` (set, or lowered), added tolerations (existing ones
only get a new tolerationSeconds), `terminationGracePeriodSeconds` from a negative value to 1, and
removed scheduling gates. Everything else in `spec` is 422 Forbidden; `spec.nodeName` is set by
the binding subresource only (`bind`).

The real message for other changes ends with a diff of the Go struct; the sim's ends at the list
of what may change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobset_infra.sim.apiserver.errors import StatusError, field_cause, invalid
from jobset_infra.sim.apiserver.resources import GVR

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
PODS = GVR("", "v1", "pods")
UPDATABLE = ("pod updates may not change fields other than `spec.containers[*].image`,"
             "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
             "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
             "(allow it to be set to 1 if it was previously negative)")


def check(old: JsonObj, new: JsonObj) -> None:
    """422 when `new`'s spec changes what a Pod update may not change."""
    before, after = old.get("spec") or {}, new.get("spec") or {}
    if before == after:
        return
    causes = [*_containers(before, after), *_deadline(before, after), *_tolerations(before, after)]
    if not causes and _munged(before, after) != before:
        causes.append(field_cause("FieldValueForbidden", "spec", f"Forbidden: {UPDATABLE}"))
    if causes:
        raise invalid("", "Pod", old["metadata"]["name"], causes)


def _containers(before: JsonObj, after: JsonObj) -> list[JsonObj]:
    return [field_cause("FieldValueForbidden", f"spec.{key}",
                        "Forbidden: pod updates may not add or remove containers")
            for key in ("containers", "initContainers")
            if len(before.get(key) or ()) != len(after.get(key) or ())]


def _deadline(before: JsonObj, after: JsonObj) -> list[JsonObj]:
    old, new = before.get("activeDeadlineSeconds"), after.get("activeDeadlineSeconds")
    if isinstance(old, int) and isinstance(new, int) and new > old:
        return [field_cause("FieldValueInvalid", "spec.activeDeadlineSeconds",
                            f"Invalid value: {new}: must be less than or equal to previous "
                            "value")]
    return []


def _same_toleration(a: JsonObj, b: JsonObj) -> bool:
    return {k: v for k, v in a.items() if k != "tolerationSeconds"} == {
        k: v for k, v in b.items() if k != "tolerationSeconds"}


def _tolerations(before: JsonObj, after: JsonObj) -> list[JsonObj]:
    new = list(after.get("tolerations") or ())
    if all(any(_same_toleration(t, n) for n in new) for t in before.get("tolerations") or ()):
        return []
    return [field_cause("FieldValueForbidden", "spec.tolerations",
                        "Forbidden: existing toleration can not be modified except its "
                        "tolerationSeconds")]


def _munged(before: JsonObj, after: JsonObj) -> JsonObj:
    """`after` with what an update may change taken back from `before`."""
    munged = dict(after)
    for key in ("containers", "initContainers"):
        if key in after:
            olds = before.get(key) or []
            munged[key] = [dict(c) | {"image": o.get("image")} if "image" in o or "image" in c
                           else c for c, o in zip(after[key], olds, strict=True)]
    for key in ("activeDeadlineSeconds", "tolerations"):
        munged.pop(key, None)
        if key in before:
            munged[key] = before[key]
    old_grace = before.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and after.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if len(after.get("schedulingGates") or ()) < len(before.get("schedulingGates") or ()):
        munged["schedulingGates"] = before.get("schedulingGates")
    return munged


def bind(store: Store, namespace: str, name: str, node: str) -> JsonObj:
    """pods/<name>/binding: spec.nodeName set once and PodScheduled=True, as the Binding
    subresource writes them (409 when the Pod is bound already)."""
    old = store.get(PODS, name, namespace)
    bound = (old.get("spec") or {}).get("nodeName")
    if bound:
        raise StatusError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding '
                          f'"{name}": pod {name} is already assigned to node "{bound}"',
                          details={"name": name, "kind": "pods/binding"})
    new = _bound(old, node, store.now())
    store.put_raw(store.info(PODS), namespace, new, old)
    return new


def _bound(old: JsonObj, node: str, now: str) -> JsonObj:
    new = dict(old)
    new["metadata"] = dict(old["metadata"])
    new["spec"] = dict(old.get("spec") or {}) | {"nodeName": node}
    status = dict(old.get("status") or {})
    others = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
    status["conditions"] = [*others, {"type": "PodScheduled", "status": "True",
                                      "lastProbeTime": None, "lastTransitionTime": now}]
    new["status"] = status
    return new
