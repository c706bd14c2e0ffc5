"""The cases `record.py` sends to a real kube-apiserver, and builders of the objects sent.

Keys are sentence ids; the recorded answers (`answers.json`) and our checks are compared by them.
"""

from __future__ import annotations

from typing import Any

_NAME = "case"

METADATA_CASES: dict[str, dict[str, Any]] = {
    "valid labels, annotations and finalizers pass": {
        "labels": {"example.com/a-b_c.d": "", "x": "Y.z-1"},
        "annotations": {"UPPER.example.com/Key": "any value"},
        "finalizers": ["example.com/cleanup"],
    },
    "a label key with a space and a bang is refused": {"labels": {"bad key!": "v"}},
    "a 70-character label value is refused": {"labels": {"k": "v" * 70}},
    "a label key with two slashes is refused": {"labels": {"a/b/c": "v"}},
    "a label key starting with a dash is refused": {"labels": {"-x": "v"}},
    "a label value with dashes at both ends is refused": {"labels": {"k": "-v-"}},
    "a label key with an empty name part is refused": {"labels": {"example.com/": "v"}},
    "an empty label key is refused": {"labels": {"": "v"}},
    "a label key with an empty prefix is refused": {"labels": {"/x": "v"}},
    "a label key with an uppercase prefix is refused": {"labels": {"UPPER.com/x": "v"}},
    "a label key prefix over 253 bytes is refused": {"labels": {"p" * 254 + "/x": "v"}},
    "a 64-character label key name is refused": {"labels": {"x" * 64: "v"}},
    "a long label value of bad characters gets both errors": {"labels": {"k": "!" * 70}},
    "a label value of 32 two-byte characters is refused": {"labels": {"k": "é" * 32}},
    "annotations over 256 KiB in total are refused": {"annotations": {"big": "x" * 262142}},
    "annotations of exactly 256 KiB pass": {"annotations": {"big": "x" * 262141}},
    "annotations are counted together": {"annotations": {"a": "x" * 131072, "b": "x" * 131072}},
    "an annotation key with a space is refused": {"annotations": {"bad key!": "x"}},
    "bad finalizer names are refused": {
        "finalizers": ["bad finalizer!", "kubernetes", "example.com/ok", "noslash", "a/b/c"]
    },
    "a finalizer with an uppercase prefix is refused": {"finalizers": ["Example.com/x"]},
    "labels, annotations and finalizers are all reported": {
        "labels": {"bad key!": "v"},
        "annotations": {"bad key!": "v"},
        "finalizers": ["bad finalizer!"],
    },
}


def _container(**fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "busybox", **fields}


JOB_CASES: dict[str, dict[str, Any]] = {
    "a valid pod template passes": {"containers": [_container(ports=[{"containerPort": 80}])]},
    "no containers is refused": {"containers": []},
    "a missing containers list is refused": {},
    "an uppercase container name is refused": {"containers": [_container(name="Main")]},
    "a container without a name is refused": {"containers": [{"image": "busybox"}]},
    "a container without an image is refused": {"containers": [{"name": "main"}]},
    "two containers with one name are refused": {"containers": [_container(), _container()]},
    "an init container named like a container is refused": {
        "containers": [_container()],
        "initContainers": [_container()],
    },
    "container port 99999 is refused": {
        "containers": [_container(ports=[{"containerPort": 99999}])]
    },
    "container port 0 is refused": {"containers": [_container(ports=[{"containerPort": 0}])]},
    "host port 70000 is refused": {
        "containers": [_container(ports=[{"containerPort": 80, "hostPort": 70000}])]
    },
    "a negative cpu request is refused": {
        "containers": [_container(resources={"requests": {"cpu": "-1"}})]
    },
    "a negative memory limit is refused": {
        "containers": [_container(resources={"limits": {"memory": "-1Gi"}})]
    },
    "a request above its limit is refused": {
        "containers": [_container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}})]
    },
    "an init container without an image is refused": {
        "containers": [_container()],
        "initContainers": [{"name": "init"}],
    },
    "an unparsable quantity is refused": {
        "containers": [_container(resources={"requests": {"cpu": "lots"}})]
    },
}


def configmap(meta: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": _NAME, **meta}}


def jobset(meta: dict[str, Any], pod_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    pod = pod_spec if pod_spec is not None else {"containers": [_container()]}
    template = {"spec": {"template": {"spec": pod}}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": _NAME, **meta},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": template}]},
    }


def job(pod_spec: dict[str, Any]) -> dict[str, Any]:
    pod = {"restartPolicy": "OnFailure", **pod_spec}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": _NAME},
        "spec": {"template": {"spec": pod}},
    }
