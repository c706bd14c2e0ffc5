"""ServiceAccounts as a cluster keeps them: every namespace gets its `default` ServiceAccount
when it is created (kube-controller-manager's serviceaccount controller), and a Pod is admitted
as kube-apiserver's ServiceAccount admission plugin admits it (checked against 1.37 by the
conformance corpus, `service-account-admission`):

- no `spec.serviceAccountName`: the deprecated `spec.serviceAccount`, else `default`; both
  fields are then set;
- the ServiceAccount must exist: 403 `pods "p" is forbidden: error looking up service account
  ns/name: serviceaccount "name" not found` (a Job's Pods then fail to be created, as on a
  real cluster);
- the ServiceAccount's imagePullSecrets when the Pod names none;
- unless the Pod (or, when the Pod does not say, the ServiceAccount) turns
  automountServiceAccountToken off: a projected `kube-api-access-xxxxx` volume (token, the
  namespace's `kube-root-ca.crt`, the namespace) mounted read-only at MOUNT_PATH in every
  container and init container that does not mount something there already.

Mirror Pods (the kubelet's static Pods) are left alone, as the plugin leaves them. The sim
publishes no `kube-root-ca.crt` ConfigMap: the volume names it as the real plugin does.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from jobset_infra.sim.apiserver.errors import ForbiddenError
from jobset_infra.sim.apiserver.resources import GVR

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.resources import ResourceInfo
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
PODS = GVR("", "v1", "pods")
SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
NAMESPACES = GVR("", "v1", "namespaces")
DEFAULT = "default"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
TOKEN_SECONDS = 3607  # the plugin's bound token lifetime: one hour and seven seconds
_SUFFIX_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def install(store: Store) -> None:
    store.observers.append(_default_account)
    store.admission.setdefault(PODS, []).append(_PodAdmission(store))


def _default_account(store: Store, event: str, info: ResourceInfo, obj: JsonObj) -> None:
    """A new namespace gets its `default` ServiceAccount, as the controller-manager makes it."""
    if info.gvr != NAMESPACES or event != "ADDED":
        return
    namespace = obj["metadata"]["name"]
    if store.peek(SERVICE_ACCOUNTS, namespace, DEFAULT) is None:
        store.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                        "metadata": {"name": DEFAULT}}, namespace)


def not_found(pod: str, namespace: str, account: str) -> ForbiddenError:
    return ForbiddenError(
        403, "Forbidden", f'pods "{pod}" is forbidden: error looking up service account '
        f'{namespace}/{account}: serviceaccount "{account}" not found',
        details={"name": pod, "kind": "pods"})


class _PodAdmission:
    def __init__(self, store: Store) -> None:
        self.store = store

    def __call__(self, info: ResourceInfo, pod: JsonObj, old: JsonObj | None) -> JsonObj:
        meta = pod["metadata"]
        if old is not None or MIRROR_ANNOTATION in (meta.get("annotations") or {}):
            return pod
        spec = pod.setdefault("spec", {})
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT
        spec["serviceAccountName"] = spec["serviceAccount"] = name
        namespace = meta.get("namespace", "")
        account = self.store.peek(SERVICE_ACCOUNTS, namespace, name)
        if account is None:
            raise not_found(meta.get("name", ""), namespace, name)
        if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [dict(s) for s in account["imagePullSecrets"]]
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = account.get("automountServiceAccountToken")
        if automount is not False:
            _mount_token(spec, self.store.rng)
        return pod


def _mount_token(spec: JsonObj, rng: random.Random) -> None:
    containers = [c for key in ("initContainers", "containers") for c in spec.get(key) or ()]
    needing = [c for c in containers if not any(
        m.get("mountPath") == MOUNT_PATH for m in c.get("volumeMounts") or ())]
    if not needing:
        return
    volume = "kube-api-access-" + "".join(rng.choice(_SUFFIX_CHARS) for _ in range(5))
    spec.setdefault("volumes", []).append({"name": volume, "projected": {
        "defaultMode": 0o644, "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt",
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]}})
    for container in needing:
        container.setdefault("volumeMounts", []).append(
            {"name": volume, "readOnly": True, "mountPath": MOUNT_PATH})
