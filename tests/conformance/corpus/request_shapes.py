"""Request shapes outside the happy path, where the sim once answered otherwise than the real
server (issue 31): a body of the wrong kind for its path, a content type no decoder takes,
pathologically deep JSON around the 10,000-level limit, and watches from versions the server
has not reached yet or has just reached."""

from __future__ import annotations

from typing import Any

CONFIGMAPS = "/api/v1/namespaces/$ns/configmaps"
JOBS = "/apis/batch/v1/namespaces/$ns/jobs"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/$ns/jobsets"
CONTAINER = {"name": "c", "image": "busybox:1"}
POD_TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [CONTAINER]}}


def configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"a": "b"}, **extra}


def job(name: str) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"suspend": True, "template": POD_TEMPLATE}}


def jobset(name: str, api_version: str = "jobset.x-k8s.io/v1alpha2") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "JobSet", "metadata": {"name": name},
            "spec": {"suspend": True, "replicatedJobs": [
                {"name": "r", "template": {"spec": {"template": POD_TEMPLATE}}}]}}


def nested(name: str, depth: int) -> str:
    """A ConfigMap whose unknown field `x` nests arrays so the document is `depth` levels deep
    (the outer object is the first level)."""
    head = f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"x":'
    return head + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def nested_objects(name: str, depth: int) -> str:
    """The same with objects: `x` holds `{"a":{"a":...{}}}`."""
    head = f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"x":'
    return head + '{"a":' * (depth - 2) + "{}" + "}" * (depth - 2) + "}"


def _post(path: str, body: Any, **extra: Any) -> dict[str, Any]:
    return {"method": "POST", "path": path, "body": body, **extra}


def _raw(path: str, text: str, content_type: str = "application/json") -> dict[str, Any]:
    return {"method": "POST", "path": path, "raw": text, "headers": {"Content-Type": content_type}}


WRONG_KIND = [
    _post(JOBSETS, job("a-job")),
    _post(JOBS, configmap("a-configmap")),
    _post(JOBSETS, configmap("cm-as-jobset")),
    _post(CONFIGMAPS, jobset("a-jobset")),
    _post(JOBSETS, jobset("old-version", "jobset.x-k8s.io/v1alpha1")),
    _post(JOBSETS, jobset("other-group", "batch/v1")),
    _post(CONFIGMAPS, {"metadata": {"name": "no-type-meta"}, "data": {"a": "b"}}),
    _post(JOBSETS, {"metadata": {"name": "no-type-meta"},
                    "spec": jobset("x")["spec"]}),
    _post(JOBSETS, {**jobset("cm-kind"), "kind": "ConfigMap"}),
    _post(JOBSETS, {k: v for k, v in jobset("no-kind").items() if k != "kind"}),
    _post(JOBSETS, {k: v for k, v in jobset("no-version").items() if k != "apiVersion"}),
    _post(CONFIGMAPS, {**configmap("v2"), "apiVersion": "v2"}),
    _post(CONFIGMAPS, {"kind": "Secret", "metadata": {"name": "secret-kind"}}),
    _post(JOBS, {**job("jobset-kind"), "kind": "JobSet"}),
    _post(CONFIGMAPS, configmap("cm")),
    {"method": "PUT", "path": f"{CONFIGMAPS}/cm",
     "body": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "cm"}}},
    {"method": "GET", "path": f"{CONFIGMAPS}/a-jobset"},
    {"method": "GET", "path": f"{JOBSETS}/a-job"},
]

CONTENT_TYPES = [
    _raw(CONFIGMAPS, '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"plain"}}',
         "text/plain"),
    _raw(CONFIGMAPS, '<ConfigMap name="xml"/>', "application/xml"),
    _raw(CONFIGMAPS, '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"form"}}',
         "application/x-www-form-urlencoded"),
    _raw(CONFIGMAPS, '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"charset"}}',
         "application/json; charset=utf-8"),
    _raw(JOBSETS, '{"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet",'
         '"metadata":{"name":"plain"}}', "text/plain"),
    {"method": "GET", "path": f"{CONFIGMAPS}/plain"},
    {"method": "GET", "path": f"{CONFIGMAPS}/charset"},
]

DEEP_BODIES = [
    _raw(CONFIGMAPS, nested("deep-9999", 9_999)),
    _raw(CONFIGMAPS, nested("deep-10000", 10_000)),
    _raw(CONFIGMAPS, nested("deep-10001", 10_001)),
    _raw(CONFIGMAPS, nested_objects("objects-10000", 10_000)),
    _raw(CONFIGMAPS, nested_objects("objects-10001", 10_001)),
    _raw(JOBSETS, nested("deep-10000", 10_000).replace(
        '"apiVersion":"v1","kind":"ConfigMap"',
        '"apiVersion":"jobset.x-k8s.io/v1alpha2","kind":"JobSet"')),
    _raw(CONFIGMAPS, ""),
    _raw(CONFIGMAPS, "null"),
    _raw(CONFIGMAPS, "[]"),
    _raw(CONFIGMAPS, '"a string"'),
    _raw(CONFIGMAPS, '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"tail"}} x'),
    {"method": "GET", "path": f"{CONFIGMAPS}/deep-9999"},
]

# Watches from a version no object has reached yet: the real server sends nothing for them,
# not even for objects written while it waits (their versions are older than the one asked for),
# and ends the watch at timeoutSeconds. A watch from the current version (the control) does get
# the objects written while it is open.
WATCH_EDGES = [
    _post(CONFIGMAPS, configmap("w1"), save={"rv": "metadata.resourceVersion"}),
    {"method": "GET", "path": CONFIGMAPS, "watch": 1,
     "query": {"watch": "true", "resourceVersion": "${rv}", "timeoutSeconds": "2"},
     "during": [_post(CONFIGMAPS, configmap("w2"))]},
    {"method": "GET", "path": CONFIGMAPS, "watch": 1,
     "query": {"watch": "true", "resourceVersion": "9999999999", "timeoutSeconds": "2"},
     "during": [_post(CONFIGMAPS, configmap("w3")),
                {"method": "PUT", "path": f"{CONFIGMAPS}/w1", "body": configmap("w1", data={})}]},
    {"method": "GET", "path": CONFIGMAPS, "watch": 1,
     "query": {"watch": "true", "resourceVersion": "9999999999", "timeoutSeconds": "1"}},
    {"method": "GET", "path": JOBSETS, "watch": 1,
     "query": {"watch": "true", "resourceVersion": "9999999999", "timeoutSeconds": "1"}},
    {"method": "GET", "path": CONFIGMAPS, "watch": 1,
     "query": {"watch": "true", "resourceVersion": "${rv}", "timeoutSeconds": "1"}},
    {"method": "GET", "path": f"{CONFIGMAPS}/w1"},
    {"method": "GET", "path": CONFIGMAPS, "watch": 1,
     "query": {"watch": "true", "resourceVersion": "-1", "timeoutSeconds": "1"}},
]

SEQUENCES = [
    {"id": "wrong-kind-for-the-path", "steps": WRONG_KIND},
    {"id": "content-types", "steps": CONTENT_TYPES},
    {"id": "deep-and-odd-bodies", "steps": DEEP_BODIES},
    {"id": "watch-from-future-versions", "steps": WATCH_EDGES},
]
