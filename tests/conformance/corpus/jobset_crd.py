"""The JobSet CRD as the API server serves it: defaulting, pruning, schema errors, and every
CEL rule of the CRD once satisfied and once broken (transition rules on updates)."""

from __future__ import annotations

import copy
from typing import Any

JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/$ns/jobsets"
MERGE = {"Content-Type": "application/merge-patch+json"}
JsonObj = dict[str, Any]


def rjob(name: str, replicas: int = 1, **template_spec: Any) -> JsonObj:
    spec = {**template_spec, "template": {"spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "busybox:1"}]}}}
    return {"name": name, "replicas": replicas, "template": {"spec": spec}}


def jobset(name: str = "js", *jobs: JsonObj, **spec: Any) -> JsonObj:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name},
            "spec": {"replicatedJobs": list(jobs) or [rjob("r")], **spec}}


def create(body: JsonObj) -> JsonObj:
    return {"method": "POST", "path": JOBSETS, "body": body}


def patch(name: str, body: JsonObj) -> JsonObj:
    return {"method": "PATCH", "path": f"{JOBSETS}/{name}", "headers": MERGE, "body": body}


def with_meta(body: JsonObj, **meta: Any) -> JsonObj:
    out = copy.deepcopy(body)
    out["metadata"].update(meta)
    return out


# Create-time rules: (id, a JobSet that satisfies the rule, one that breaks it).
CREATE_RULES: list[tuple[str, JsonObj, JsonObj]] = [
    ("managed-by-format", jobset("ok", managedBy="example.com/ctl"),
     jobset("bad", managedBy="no-slash")),
    ("subdomain-dns-1035", jobset("ok", network={"subdomain": "sub"}),
     jobset("bad", network={"subdomain": "9sub"})),
    ("replicas-times-parallelism", jobset("ok", rjob("r", 2, parallelism=4)),
     jobset("bad", rjob("r", 2, parallelism=2147483647))),
    ("volume-claim-template-namespace", jobset("ok", volumeClaimPolicies=[{"templates": [
        {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}]),
     jobset("bad", volumeClaimPolicies=[{"templates": [{"metadata": {
         "name": "data", "namespace": "x"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}])),
    ("startup-order-and-depends-on", jobset("ok", rjob("a"), {**rjob("b"), "dependsOn": [
        {"name": "a", "status": "Ready"}]}),
     jobset("bad", rjob("a"), {**rjob("b"), "dependsOn": [{"name": "a", "status": "Ready"}]},
            startupPolicy={"startupPolicyOrder": "InOrder"})),
    ("depends-on-not-first", jobset("ok", rjob("a"), rjob("b")),
     jobset("bad", {**rjob("a"), "dependsOn": [{"name": "b", "status": "Complete"}]},
            rjob("b"))),
    ("coordinator-names-a-job", jobset("ok", rjob("a", 2),
                                       coordinator={"replicatedJob": "a", "jobIndex": 1}),
     jobset("bad", rjob("a", 2), coordinator={"replicatedJob": "a", "jobIndex": 2})),
    ("name-too-long-for-jobs", jobset("n" * 50, rjob("r", 9)),
     jobset("n" * 55, rjob("workers", 10))),
    ("name-too-long-for-pods", jobset("p" * 40, rjob(
        "r", 1, completionMode="Indexed", completions=9, parallelism=9)),
     jobset("p" * 50, rjob("r", 1, completionMode="Indexed", completions=100,
                           parallelism=100))),
    ("coordinator-label-too-long", jobset("c" * 20, rjob("r"),
                                          coordinator={"replicatedJob": "r"}),
     jobset("c" * 40, rjob("r" * 20), coordinator={"replicatedJob": "r" * 20},
            network={"subdomain": "s" * 20})),
    ("pvc-name-too-long", jobset("v" * 20, volumeClaimPolicies=[{"templates": [
        {"metadata": {"name": "d" * 20}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}]),
     jobset("v" * 40, volumeClaimPolicies=[{"templates": [
         {"metadata": {"name": "d" * 30}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}])),
]

# Transition rules: (id, the JobSet, an allowed change, a forbidden change), as merge patches.
SUSPENDED = jobset("js", rjob("a"), rjob("b"), suspend=True)
RUNNING = jobset("js", rjob("a"), rjob("b"), managedBy="example.com/ctl",
                 failurePolicy={"maxRestarts": 1}, network={"enableDNSHostnames": True},
                 startupPolicy={"startupPolicyOrder": "AnyOrder"},
                 successPolicy={"operator": "All"})
TRANSITION_RULES: list[tuple[str, JsonObj, JsonObj, JsonObj]] = [
    ("failure-policy-immutable", RUNNING, {"metadata": {"labels": {"a": "b"}}},
     {"spec": {"failurePolicy": {"maxRestarts": 3}}}),
    ("network-immutable", RUNNING, {"spec": {"suspend": False}},
     {"spec": {"network": {"enableDNSHostnames": False}}}),
    ("startup-policy-immutable", RUNNING, {"spec": {"suspend": False}},
     {"spec": {"startupPolicy": {"startupPolicyOrder": "InOrder"}}}),
    ("success-policy-immutable", RUNNING, {"spec": {"suspend": False}},
     {"spec": {"successPolicy": {"operator": "Any"}}}),
    ("managed-by-immutable", RUNNING, {"spec": {"managedBy": "example.com/ctl"}},
     {"spec": {"managedBy": "example.com/other"}}),
    ("replicated-job-names-fixed", SUSPENDED,
     {"spec": {"replicatedJobs": [rjob("a", 2), rjob("b")]}},
     {"spec": {"replicatedJobs": [rjob("a"), rjob("c")]}}),
    ("replicated-jobs-fixed-while-running", RUNNING, {"spec": {"suspend": True}},
     {"spec": {"replicatedJobs": [rjob("a", 3), rjob("b")]}}),
    ("depends-on-immutable", jobset("js", rjob("a"), {**rjob("b"), "dependsOn": [
        {"name": "a", "status": "Ready"}]}, suspend=True),
     {"spec": {"suspend": False}},
     {"spec": {"replicatedJobs": [rjob("a"), {**rjob("b"), "dependsOn": [
         {"name": "a", "status": "Complete"}]}]}}),
    ("volume-claim-policies-immutable", jobset("js", volumeClaimPolicies=[{"templates": [
        {"metadata": {"name": "d"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}]),
     {"metadata": {"labels": {"a": "b"}}},
     {"spec": {"volumeClaimPolicies": [{"templates": [
         {"metadata": {"name": "e"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}]}}),
]

SCHEMA_CASES: list[tuple[str, JsonObj]] = [
    ("defaults-filled", jobset("defaulted")),
    ("unknown-fields-pruned", with_meta(jobset("pruned", bogus=1), labels={"a": "b"})
     | {"extra": True}),
    ("enum-refused", jobset("enum", successPolicy={"operator": "Some"})),
    ("required-missing", jobset("required", {"replicas": 1})),
    ("type-mismatch", jobset("types", rjob("r"), suspend="yes")),
    ("max-items", jobset("many", *[rjob(f"r{i}") for i in range(51)])),
    ("negative-replicas", jobset("neg", rjob("r", -1))),
    ("bad-job-template", jobset("tmpl", {"name": "r", "template": {"spec": {
        "parallelism": "x", "template": {"spec": {"containers": []}}}}})),
    ("duplicate-replicated-job-names", jobset("dups", rjob("a"), rjob("a"))),
    ("status-on-create-dropped", jobset("st") | {"status": {"restarts": 3}}),
]

SEQUENCES: list[JsonObj] = [
    {"id": f"cel-{rule}", "steps": [create(good), create(bad)]}
    for rule, good, bad in CREATE_RULES
] + [
    {"id": f"cel-transition-{rule}", "steps": [create(base), patch("js", allowed),
                                               patch("js", forbidden)]}
    for rule, base, allowed, forbidden in TRANSITION_RULES
] + [{"id": f"crd-{case}", "steps": [create(body)]} for case, body in SCHEMA_CASES]
