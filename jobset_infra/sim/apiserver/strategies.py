"""Per-kind behaviour of built-in resources that clients can observe: defaults applied on create,
status reset on create, and the immutability rules a controller can trip over.

Only behaviour Kubernetes really has is modelled; everything else is stored as sent. The defaults
matter because a controller that compares its desired object with the stored one must tolerate
them, or it loops forever against a real cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jobset_infra.sim.apiserver import job_status
from jobset_infra.sim.apiserver.errors import field_cause, invalid

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.resources import ResourceInfo
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
KEEPS_STATUS_ON_CREATE = frozenset({"Node"})
# (group, resource) whose DELETE answers with the deleted object rather than a Success Status
# (their registries set ReturnDeletedObject; checked against kube-apiserver 1.37)
RETURNS_DELETED = frozenset({
    ("", "pods"), ("", "services"), ("", "serviceaccounts"), ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"), ("", "resourcequotas"), ("", "podtemplates"),
    ("storage.k8s.io", "storageclasses"), ("storage.k8s.io", "csidrivers"),
})


def prepare(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
    """Generic part: a create through a resource with a status subresource starts with no status."""
    if old is None and info.has_status and info.kind not in KEEPS_STATUS_ON_CREATE:
        obj.pop("status", None)
    return obj


def _pod_spec_defaults(spec: JsonObj) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            image = str(container.get("image", ""))
            latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
            container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})
            for port in container.get("ports") or ():
                port.setdefault("protocol", "TCP")


def _job(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
    spec = obj.setdefault("spec", {})
    if old is not None:
        _check_job_update(info, obj, old)
        _labels_from_template(obj)
        return obj
    meta = obj["metadata"]
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("backoffLimit", 2147483647 if "backoffLimitPerIndex" in spec else 6)
    spec.setdefault("suspend", False)
    policy = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    spec.setdefault("podReplacementPolicy", policy)
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    if not spec.get("manualSelector"):
        uid = meta["uid"]
        spec["manualSelector"] = False
        spec["selector"] = {"matchLabels": {JOB_CONTROLLER_UID: uid}}
        generated = {JOB_CONTROLLER_UID: uid, JOB_NAME: meta["name"],
                     LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: meta["name"]}
        labels.update(generated)
    _labels_from_template(obj)
    pod_spec = template.setdefault("spec", {})
    if pod_spec.get("restartPolicy") not in ("Never", "OnFailure"):
        raise invalid(info.gvr.group, info.kind, meta["name"], [field_cause(
            "FieldValueRequired" if "restartPolicy" not in pod_spec else "FieldValueNotSupported",
            "spec.template.spec.restartPolicy",
            'Required value: valid values: "OnFailure", "Never"')])
    _pod_spec_defaults(pod_spec)
    obj["status"] = {}
    return obj


def _labels_from_template(job: JsonObj) -> None:
    """A Job without labels has its template's (SetDefaults_Job, which runs on every decode,
    so also after a write that dropped them)."""
    template = ((job.get("spec") or {}).get("template") or {}).get("metadata") or {}
    if not job["metadata"].get("labels") and template.get("labels"):
        job["metadata"]["labels"] = dict(template["labels"])


def _check_job_update(info: ResourceInfo, obj: JsonObj, old: JsonObj) -> None:
    spec, old_spec = obj["spec"], old.get("spec", {})
    causes = []
    if spec.get("selector") != old_spec.get("selector"):
        causes.append(field_cause("FieldValueInvalid", "spec.selector",
                                  "Invalid value: ...: field is immutable"))
    suspended_never_started = old_spec.get("suspend") and not (old.get("status") or {}).get(
        "startTime")
    if spec.get("template") != old_spec.get("template") and not suspended_never_started:
        causes.append(field_cause("FieldValueInvalid", "spec.template",
                                  "Invalid value: ...: field is immutable"))
    if spec.get("completionMode") != old_spec.get("completionMode"):
        causes.append(field_cause("FieldValueInvalid", "spec.completionMode",
                                  "Invalid value: ...: field is immutable"))
    causes += job_status.problems(obj, old)
    if causes:
        raise invalid(info.gvr.group, info.kind, old["metadata"]["name"], causes)


def _pod(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
    if not (obj.get("spec") or {}).get("containers"):
        raise invalid(info.gvr.group, info.kind, obj["metadata"]["name"], [field_cause(
            "FieldValueRequired", "spec.containers", "Required value")])
    if old is None:
        spec = obj.setdefault("spec", {})
        _pod_spec_defaults(spec)
        spec.setdefault("enableServiceLinks", True)
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}
    return obj


def _qos_class(spec: JsonObj) -> str:
    """The Pod's QoS class from its containers' cpu and memory, after requests default to
    limits (SetDefaults_Pod); requests equal limits as written (the sim parses no quantities)."""
    containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or ()]
    guaranteed, any_set = True, False
    for container in containers:
        resources = container.setdefault("resources", {})
        limits = resources.get("limits") or {}
        if limits:
            resources["requests"] = {**limits, **(resources.get("requests") or {})}
        requests = resources.get("requests") or {}
        for name in ("cpu", "memory"):
            any_set = any_set or name in requests or name in limits
            guaranteed = guaranteed and name in limits and str(requests.get(name)) == str(
                limits[name])
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _namespace(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
    if old is None:
        name = obj["metadata"]["name"]
        obj["metadata"].setdefault("labels", {})[NAMESPACE_NAME_LABEL] = name
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    return obj


class _ServiceIPs:
    def __init__(self) -> None:
        self.next = 1

    def __call__(self, info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
        spec = obj.setdefault("spec", {})
        if old is not None:
            for key in ("clusterIP", "clusterIPs"):
                if key in old.get("spec", {}):
                    spec.setdefault(key, old["spec"][key])
            return obj
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec.get("clusterIP") != "None":
            spec["clusterIP"] = f"10.96.{self.next // 250}.{self.next % 250 + 1}"
            self.next += 1
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or ():
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
        obj["status"] = {"loadBalancer": {}}
        return obj


def install(store: Store) -> None:
    """Register the built-in strategies (and CRD serving) with a new store."""
    from jobset_infra.sim.apiserver import crds, pod_admission, service_accounts
    from jobset_infra.sim.apiserver.resources import GVR

    table: dict[GVR, Callable[[ResourceInfo, JsonObj, JsonObj | None], JsonObj]] = {
        GVR("batch", "v1", "jobs"): _job,
        GVR("", "v1", "pods"): _pod,
        GVR("", "v1", "namespaces"): _namespace,
        GVR("", "v1", "services"): _ServiceIPs(),
    }
    for gvr, admit in table.items():
        store.admission.setdefault(gvr, []).append(admit)
    crds.install(store)
    service_accounts.install(store)
    pod_admission.install(store)
