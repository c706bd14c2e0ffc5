"""fieldValidation Strict / Warn / Ignore (and unset) for every verb, on a ConfigMap, a Job and
a JobSet, each with a misspelt field."""

from __future__ import annotations

from typing import Any

MODES = ("Strict", "Warn", "Ignore", None)
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/$ns/jobsets"
CONFIGMAPS = "/api/v1/namespaces/$ns/configmaps"
JOBS = "/apis/batch/v1/namespaces/$ns/jobs"
APPLY = {"Content-Type": "application/apply-patch+yaml"}
MERGE = {"Content-Type": "application/merge-patch+json"}


def configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"a": "b"}, **extra}


def job(name: str, container: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"suspend": True, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", **container}]}}}}


def jobset(name: str, jobs_key: str = "replicatedJobs") -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name},
            "spec": {"suspend": True, jobs_key: [{"name": "r", "template": {"spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox:1"}]}}}}}]}}


def _query(mode: str | None, **more: str) -> dict[str, str]:
    return ({"fieldValidation": mode} if mode else {}) | more


def _sequence(mode: str | None) -> dict[str, Any]:
    tag = (mode or "unset").lower()
    q = _query(mode)
    steps: list[dict[str, Any]] = [
        {"method": "POST", "path": CONFIGMAPS, "query": q, "body": configmap("cm", bogus=1)},
        {"method": "POST", "path": CONFIGMAPS, "query": q, "body": configmap("good")},
        {"method": "PUT", "path": f"{CONFIGMAPS}/good", "query": q,
         "body": configmap("good", bogus=2)},
        {"method": "PATCH", "path": f"{CONFIGMAPS}/good", "query": q, "headers": MERGE,
         "body": {"bogus": 3, "data": {"c": "d"}}},
        {"method": "PATCH", "path": f"{CONFIGMAPS}/good", "headers": APPLY,
         "query": _query(mode, fieldManager="fv"), "body": configmap("good", bogus=4)},
        {"method": "PATCH", "path": f"{CONFIGMAPS}/applied", "headers": APPLY,
         "query": _query(mode, fieldManager="fv"), "body": configmap("applied", bogus=5)},
        {"method": "POST", "path": CONFIGMAPS, "query": q,
         "body": configmap("dup") | {"metadata": {"name": "dup", "labelz": {"a": "b"}}}},
        {"method": "POST", "path": JOBS, "query": q,
         "body": job("imag", {"imag": "busybox:1", "image": "busybox:1"})},
        {"method": "POST", "path": JOBS, "query": q, "body": job("good", {"image": "busybox:1"})},
        {"method": "PATCH", "path": f"{JOBS}/good", "query": q, "headers": MERGE,
         "body": {"spec": {"template": {"spec": {"containers": [
             {"name": "c", "image": "busybox:1", "imag": "x"}]}}}}},
        {"method": "PATCH", "path": f"{JOBS}/good", "query": q,
         "headers": {"Content-Type": "application/strategic-merge-patch+json"},
         "body": {"spec": {"bogus": True}}},
        {"method": "POST", "path": JOBSETS, "query": q, "body": jobset("misspelt",
                                                                       "replicatedJob")},
        {"method": "POST", "path": JOBSETS, "query": q, "body": jobset("good")},
        {"method": "PATCH", "path": f"{JOBSETS}/good", "query": q, "headers": MERGE,
         "body": {"spec": {"replicatedJob": []}}},
        {"method": "PATCH", "path": f"{JOBSETS}/good", "headers": APPLY,
         "query": _query(mode, fieldManager="fv"), "body": jobset("good", "replicatedJob")},
        {"method": "PATCH", "path": f"{JOBSETS}/applied", "headers": APPLY,
         "query": _query(mode, fieldManager="fv"), "body": jobset("applied", "replicatedJob")},
        {"method": "GET", "path": f"{JOBSETS}/good", "save": {"rv": "metadata.resourceVersion"}},
        {"method": "PUT", "path": f"{JOBSETS}/good", "query": q,
         "body": jobset("good", "replicatedJob") | {"metadata": {
             "name": "good", "resourceVersion": "${rv}"}}},
    ]
    return {"id": f"field-validation-{tag}", "steps": steps}


SEQUENCES = [_sequence(mode) for mode in MODES] + [{
    "id": "field-validation-bad-mode",
    "steps": [{"method": "POST", "path": CONFIGMAPS, "query": {"fieldValidation": "Loud"},
               "body": configmap("x")}],
}]
