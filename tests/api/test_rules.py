"""Every CEL rule of the generated JobSet CRD, compiled by celpy and exercised valid and invalid."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.crd.cel import compile_expression
from jobset_infra.api.crd.generate import generate_crd
from jobset_infra.api.crd.schema import CrdSchema
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset

Build = Callable[[JobSetBuilder], JobSetBuilder]


def _rules(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    for rule in schema.get("x-kubernetes-validations", []):
        yield path, rule
    for key, sub in schema.get("properties", {}).items():
        yield from _rules(sub, f"{path}.{key}" if path else key)
    if isinstance(schema.get("items"), dict):
        yield from _rules(schema["items"], f"{path}.[]")


@pytest.fixture(scope="module")
def jobset_schema() -> CrdSchema:
    return CrdSchema.from_crd(generate_crd(), c.VERSION, strict=True)


ALL_RULES = list(_rules(generate_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]))


def _base(name: str = "js") -> JobSetBuilder:
    return make_jobset(name, "ns").replicated_job("leader").replicated_job("workers", replicas=3)


def _same(b: JobSetBuilder) -> JobSetBuilder:
    return b


# (schema path, distinctive message part, old (None: create), valid new, invalid new)
CASES: list[Any] = [
    pytest.param(
        "spec.network",
        c.VALUE_IMMUTABLE_MESSAGE,
        lambda b: b.network(subdomain="a"),
        lambda b: b.network(subdomain="a"),
        lambda b: b.network(subdomain="b"),
        id="network is immutable",
    ),
    pytest.param(
        "spec.successPolicy",
        c.VALUE_IMMUTABLE_MESSAGE,
        lambda b: b.success_policy("All"),
        lambda b: b.success_policy("All"),
        lambda b: b.success_policy("Any"),
        id="successPolicy is immutable",
    ),
    pytest.param(
        "spec.failurePolicy",
        c.VALUE_IMMUTABLE_MESSAGE,
        lambda b: b.failure_policy(1),
        lambda b: b.failure_policy(1),
        lambda b: b.failure_policy(2),
        id="failurePolicy is immutable",
    ),
    pytest.param(
        "spec.startupPolicy",
        c.VALUE_IMMUTABLE_MESSAGE,
        lambda b: b.startup_policy("AnyOrder"),
        lambda b: b.startup_policy("AnyOrder"),
        lambda b: b.startup_policy("InOrder"),
        id="startupPolicy is immutable",
    ),
    pytest.param(
        "spec.volumeClaimPolicies",
        c.VALUE_IMMUTABLE_MESSAGE,
        lambda b: b.volume_claim_policy("a"),
        lambda b: b.volume_claim_policy("a"),
        lambda b: b.volume_claim_policy("a", storage="2Gi"),
        id="volumeClaimPolicies are immutable",
    ),
    pytest.param(
        "spec.replicatedJobs.[].dependsOn",
        c.VALUE_IMMUTABLE_MESSAGE,
        lambda b: b.replicated_job("c", depends_on=[("leader", "Ready")]),
        lambda b: b.replicated_job("c", depends_on=[("leader", "Ready")]),
        lambda b: b.replicated_job("c", depends_on=[("leader", "Complete")]),
        id="dependsOn is immutable",
    ),
    pytest.param(
        "spec",
        c.STARTUP_POLICY_DEPENDS_ON_EXCLUSIVE_MESSAGE,
        None,
        lambda b: b.startup_policy("AnyOrder").replicated_job(
            "c", depends_on=[("leader", "Ready")]
        ),
        lambda b: b.startup_policy("InOrder").replicated_job("c", depends_on=[("leader", "Ready")]),
        id="InOrder startup and dependsOn are mutually exclusive",
    ),
    pytest.param(
        "spec.volumeClaimPolicies.[]",
        c.VCP_NAMESPACE_MESSAGE,
        None,
        lambda b: b.volume_claim_policy("a"),
        lambda b: _with_pvc_namespace(b.volume_claim_policy("a")),
        id="PVC templates cannot set a namespace",
    ),
    pytest.param(
        "",
        c.JOB_NAME_TOO_LONG_MESSAGE,
        None,
        lambda b: make_jobset("j" * 45).replicated_job("workers", replicas=10),
        lambda b: make_jobset("j" * 55).replicated_job("workers", replicas=10),
        id="generated job names fit 63 characters",
    ),
    pytest.param(
        "",
        c.POD_NAME_TOO_LONG_MESSAGE,
        None,
        lambda b: (
            make_jobset("j" * 40)
            .replicated_job("w", parallelism=10)
            .job_spec("w", completionMode="Indexed")
        ),
        lambda b: (
            make_jobset("j" * 55)
            .replicated_job("w", parallelism=10)
            .job_spec("w", completionMode="Indexed")
        ),
        id="generated pod names fit 63 characters",
    ),
    pytest.param(
        "",
        "coordinator label",
        None,
        lambda b: b.coordinator("workers", 2, 0),
        lambda b: b.coordinator("workers", 2, 0).network(subdomain="s" * 50),
        id="coordinator label value fits 63 characters",
    ),
    pytest.param(
        "",
        "PVC names",
        None,
        lambda b: b.volume_claim_policy("d" * 20),
        lambda b: b.volume_claim_policy("d" * 61),
        id="PVC names fit 63 characters",
    ),
    pytest.param(
        "spec",
        c.FIRST_RJOB_DEPENDS_ON_MESSAGE,
        None,
        lambda b: b.replicated_job("c", depends_on=[("leader", "Ready")]),
        lambda b: (
            make_jobset("js").replicated_job("a", depends_on=[("b", "Ready")]).replicated_job("b")
        ),
        id="the first replicated job has no dependsOn",
    ),
    pytest.param(
        "spec",
        "coordinator must name",
        None,
        lambda b: b.coordinator("workers", 2),
        lambda b: b.coordinator("workers", 3),
        id="coordinator names an existing job index",
    ),
    pytest.param(
        "spec",
        c.FIELD_IMMUTABLE_MESSAGE,
        lambda b: b.managed_by("a.io/x"),
        lambda b: b.managed_by("a.io/x"),
        lambda b: b.managed_by("b.io/x"),
        id="managedBy is immutable",
    ),
    pytest.param(
        "spec",
        "cannot be added, removed",
        _same,
        _same,
        lambda b: b.replicated_job("extra").suspend(True),
        id="replicated jobs cannot be added while suspended",
    ),
    pytest.param(
        "spec",
        "only change",
        _same,
        lambda b: b.suspend(True).pod_metadata("workers", labels={"q": "a"}),
        lambda b: b.pod_metadata("workers", labels={"q": "a"}),
        id="replicated jobs change only around suspension",
    ),
    pytest.param(
        "spec.network.subdomain",
        "DNS-1035",
        None,
        lambda b: b.network(subdomain="my-svc"),
        lambda b: b.network(subdomain="my.svc"),
        id="subdomain is a DNS-1035 label",
    ),
    pytest.param(
        "spec.managedBy",
        "domain-prefixed",
        None,
        lambda b: b.managed_by("kueue.x-k8s.io/multikueue"),
        lambda b: b.managed_by("multikueue"),
        id="managedBy is a domain-prefixed path",
    ),
    pytest.param(
        "spec.replicatedJobs.[]",
        "replicas x parallelism",
        None,
        lambda b: b.replicated_job("big", replicas=2, parallelism=1000),
        lambda b: b.replicated_job("big", replicas=70000, parallelism=70000),
        id="pods per replicated job fit int32",
    ),
]


def _with_pvc_namespace(b: JobSetBuilder) -> JobSetBuilder:
    templates = b.obj()["spec"]["volumeClaimPolicies"][0]["templates"]
    templates[0]["metadata"]["namespace"] = "other"
    return b.spec_field("volumeClaimPolicies", [{"templates": templates}])


def _admit(schema: CrdSchema, build: Build, old: Build | None) -> list[str]:
    new_obj, _ = schema.admit(build(_base()).obj())
    old_obj = schema.admit(old(_base()).obj())[0] if old is not None else None
    return [str(e) for e in schema.validate(new_obj, old_obj)]


@pytest.mark.parametrize(("path", "message", "old", "valid", "invalid"), CASES)
def test_rule_accepts_valid_and_rejects_invalid(
    jobset_schema: CrdSchema,
    *,
    path: str,
    message: str,
    old: Build | None,
    valid: Build,
    invalid: Build,
) -> None:
    assert _admit(jobset_schema, valid, old) == []
    errors = _admit(jobset_schema, invalid, old)
    assert any(message in e for e in errors), errors


@pytest.mark.parametrize(
    ("path", "rule"),
    [pytest.param(p, r, id=f"{p or '<root>'}: {r['message'][:40]}") for p, r in ALL_RULES],
)
def test_every_rule_compiles_and_has_a_case(path: str, rule: dict[str, Any]) -> None:
    compile_expression(rule["rule"])
    covered = [case.values for case in CASES if case.values[0] == path]
    assert any(values[1] in rule["message"] for values in covered), (
        f"no test case exercises the rule at {path!r}: {rule['message']}"
    )


def test_rules_are_not_evaluated_when_their_field_is_absent(jobset_schema: CrdSchema) -> None:
    obj = jobset_schema.admit(make_jobset("js").obj())[0]
    assert jobset_schema.validate(obj, obj) == []


def test_many_replicated_jobs_validate_in_linear_time(jobset_schema: CrdSchema) -> None:
    # Regression: errors inside CEL macros once made this exponential (minutes at 40 jobs).
    builder = make_jobset("js", "ns")
    for i in range(40):
        mode = c.COMPLETION_MODE_NON_INDEXED if i % 2 else c.COMPLETION_MODE_INDEXED
        builder = builder.replicated_job(f"r{i}", replicas=8, parallelism=4, completion_mode=mode)
    obj = jobset_schema.admit(builder.obj())[0]
    start = time.perf_counter()
    assert jobset_schema.validate(obj) == []
    assert time.perf_counter() - start < 5.0
