"""Small builders of the Kubernetes objects the sim tests create."""

from __future__ import annotations

from typing import Any

from jobset_infra.sim.apiserver.resources import GVR

JsonObj = dict[str, Any]
JOBS = GVR("batch", "v1", "jobs")
PODS = GVR("", "v1", "pods")
DEPLOYMENTS = GVR("apps", "v1", "deployments")
CONFIGMAPS = GVR("", "v1", "configmaps")
NAMESPACES = GVR("", "v1", "namespaces")
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
WIDGETS = GVR("example.com", "v1", "widgets")


def job(name: str, *, labels: dict[str, str] | None = None, suspend: bool | None = None,
        namespace: str | None = None) -> JsonObj:
    spec: JsonObj = {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox:1"}]}}}
    if suspend is not None:
        spec["suspend"] = suspend
    meta: JsonObj = {"name": name, "labels": labels or {}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}


def owner_ref(owner: JsonObj, *, block: bool = True) -> JsonObj:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"],
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": block}


def pod(name: str, *, owner: JsonObj | None = None, finalizers: list[str] | None = None,
        labels: dict[str, str] | None = None, block: bool = True) -> JsonObj:
    meta: JsonObj = {"name": name, "labels": labels or {}}
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner, block=block)]
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}


def deployment(name: str) -> JsonObj:
    """A Deployment whose template has one container "c" (a template's containers may change
    after create; a Pod's may not)."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}


def configmap(name: str, data: dict[str, str] | None = None, *,
              owner: JsonObj | None = None) -> JsonObj:
    meta: JsonObj = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


def widget_crd(*, status: bool = True, columns: bool = True) -> JsonObj:
    """A small CRD (example.com/v1 Widget) with a status subresource and a printer column."""
    version: JsonObj = {
        "name": "v1", "served": True, "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "default": 1},
                "color": {"type": "string"}}},
            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}}},
    }
    if status:
        version["subresources"] = {"status": {}}
    if columns:
        version["additionalPrinterColumns"] = [
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready"}]
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                               "shortNames": ["wd"]},
                     "versions": [version]}}


def widget(name: str, **spec: Any) -> JsonObj:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec}
