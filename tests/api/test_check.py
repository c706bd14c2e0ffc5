"""check_jobset: one verdict from the CRD schema, the models and upstream's rules."""

from __future__ import annotations

from jobset_infra.api import constants as c
from jobset_infra.api.check import check_jobset
from jobset_infra.api.errors import FieldError
from jobset_infra.testing.jobsets import make_jobset


def test_valid_jobset_comes_back_defaulted() -> None:
    result = check_jobset(make_jobset("js").replicated_job("w").obj())
    assert result.ok
    assert result.jobset is not None
    assert result.jobset.spec.success_policy is not None


def test_a_problem_found_by_several_layers_is_reported_once() -> None:
    manifest = make_jobset("js").replicated_job("w", replicas=-1).obj()
    errors = check_jobset(manifest).errors
    assert [e.path for e in errors] == ["spec.replicatedJobs[0].replicas"]


def test_unknown_fields_are_errors() -> None:
    manifest = make_jobset("js").replicated_job("w").spec_field("replicatedJob", []).obj()
    assert (
        FieldError("spec.replicatedJob", 'unknown field "replicatedJob"')
        in check_jobset(manifest).errors
    )


def test_update_rules_apply_with_an_old_object() -> None:
    old = make_jobset("js").replicated_job("w").obj()
    new = make_jobset("js").replicated_job("w", replicas=2).obj()
    errors = check_jobset(new, old).errors
    assert any(
        e.path == "spec.replicatedJobs" and c.FIELD_IMMUTABLE_MESSAGE in e.message for e in errors
    )
    assert check_jobset(old, old).ok


def test_an_immutable_field_found_by_the_cel_rule_and_the_webhook_is_reported_once() -> None:
    old = make_jobset("js").replicated_job("w").obj()
    new = make_jobset("js").replicated_job("w", replicas=2).obj()
    at_path = [e for e in check_jobset(new, old).errors if e.path == "spec.replicatedJobs"]
    assert len(at_path) == 1
    assert c.FIELD_IMMUTABLE_MESSAGE in at_path[0].message


def test_an_invalid_old_object_is_reported_as_such() -> None:
    new = make_jobset("js").replicated_job("w").obj()
    old = make_jobset("js").replicated_job("w").spec_field("suspend", "yes").obj()
    errors = check_jobset(new, old).errors
    assert errors
    assert all("old object" in e.message or e.path.startswith("spec") for e in errors)


def test_not_a_mapping_and_wrong_kind() -> None:
    assert check_jobset([1]).errors[0].message.startswith("a JobSet manifest must be a mapping")
    assert check_jobset({"apiVersion": "v1", "kind": "Pod"}).errors[0].path == "apiVersion"
