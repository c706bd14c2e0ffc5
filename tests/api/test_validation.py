"""validate(js, old): upstream create (TestValidateCreate) and update (TestValidateUpdate) rules.

Each rule is declared once in `api.rules`: where it is a CEL rule of the CRD (or a schema
constraint), validate reports it with the API server's wording at the rule's path (e.g.
`spec: Invalid value: "object": <message>`); the Python checks keep the webhook's wording.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jobset_infra.api import constants as c
from jobset_infra.api.defaults import default
from jobset_infra.api.errors import FieldError
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.models import JobSet
from jobset_infra.api.rules import Context, webhook_problems
from jobset_infra.api.validation import check_name, crd_problems, validate
from jobset_infra.testing.jobsets import JobSetBuilder, make_jobset

Build = Callable[[JobSetBuilder], JobSetBuilder]
ON = FeatureGates.of({f: True for f in (Feature.RESTART_JOB, Feature.IN_PLACE_RESTART,
                                          Feature.ELASTIC_JOBSET)})


def _base(name: str = "js") -> JobSetBuilder:
    return make_jobset(name, "ns").replicated_job("leader").replicated_job("workers", replicas=3)


def _js(build: Build, name: str = "js") -> JobSet:
    return default(build(_base(name)).model())


def _paths(errors: list[FieldError]) -> list[str]:
    return [e.path for e in errors]


def _in_place(b: JobSetBuilder) -> JobSetBuilder:
    b = b.failure_policy(restart_strategy="InPlaceRestart")
    for rjob in ("leader", "workers"):
        b = b.job_spec(rjob, backoffLimit=c.MAX_INT32, podReplacementPolicy="Failed")
    return b


VALID_CREATE = [
    pytest.param(lambda b: b, None, id="base jobset is valid"),
    pytest.param(
        lambda b: b.replicated_job("w2", replicas=2, parallelism=1000), None, id="pods within limit"
    ),
    pytest.param(
        lambda b: b.success_policy("All", ["workers"]),
        None,
        id="success policy with existing target",
    ),
    pytest.param(lambda b: b.managed_by("example.com/ctl"), None, id="managedBy set and valid"),
    pytest.param(
        lambda b: b.rule(
            "FailJobSet", "good_name:1", targets=["leader"], reasons=["PodFailurePolicy"]
        ),
        None,
        id="rule name valid",
    ),
    pytest.param(
        lambda b: b.replicated_job("third", depends_on=[("leader", "Ready")]),
        None,
        id="depends on an earlier replicated job",
    ),
    pytest.param(
        lambda b: b.replicated_job(
            "third", depends_on=[("leader", "Complete"), ("workers", "Ready")]
        ),
        None,
        id="depends on two earlier replicated jobs",
    ),
    pytest.param(lambda b: b.coordinator("workers", 2, 0), None, id="coordinator valid"),
    pytest.param(
        lambda b: b.volume_claim_policy("data").volume_mount("workers", "data"),
        None,
        id="volume claim policy mounted by a container",
    ),
    pytest.param(
        lambda b: b.volume_claim_policy("init").pod_spec(
            "leader",
            initContainers=[
                {"name": "i", "image": "x", "volumeMounts": [{"name": "init", "mountPath": "/i"}]}
            ],
        ),
        None,
        id="volume claim policy mounted by an init container",
    ),
    pytest.param(lambda b: b.rule("RestartJob"), ON, id="RestartJob with its gate on"),
    pytest.param(_in_place, ON, id="InPlaceRestart with its gate on and a conforming job"),
    pytest.param(
        lambda b: b.startup_policy("AnyOrder").replicated_job(
            "third", depends_on=[("leader", "Ready")]
        ),
        None,
        id="DependsOn and StartupPolicy AnyOrder can be set together",
    ),
]


@pytest.mark.parametrize(("build", "gates"), VALID_CREATE)
def test_valid_create(build: Build, gates: FeatureGates | None) -> None:
    assert validate(_js(build), feature_gates=gates) == []


def test_jobset_with_no_replicated_jobs_is_valid() -> None:
    assert validate(default(make_jobset("js").model())) == []


INVALID_CREATE = [
    pytest.param(
        lambda b: b.replicated_job("big", replicas=70000, parallelism=70000),
        None,
        "spec.replicatedJobs[2]",
        "replicas x parallelism must not exceed",
        id="too many pods",
    ),
    pytest.param(
        lambda b: b.success_policy("All", ["nope"]),
        None,
        "spec.successPolicy.targetReplicatedJobs[0]",
        "does not appear",
        id="success policy with a non-existent replicated job",
    ),
    pytest.param(
        lambda b: b.network(subdomain="a_b"),
        None,
        "spec.network.subdomain",
        "subdomain must be a DNS-1035 label",
        id="invalid DNS subdomain",
    ),
    pytest.param(
        lambda b: b.network(subdomain="a" * 64),
        None,
        "spec.network.subdomain",
        "Too long",
        id="subdomain too long",
    ),
    pytest.param(
        lambda b: b.replicated_job("username.llama65b"),
        None,
        "spec.replicatedJobs[2].name",
        "DNS-1035 label",
        id="replicated job name with a dot is not a DNS-1035 label",
    ),
    pytest.param(
        lambda b: b.replicated_job("g", group_name="Group_B"),
        None,
        "spec.replicatedJobs[2].groupName",
        "DNS-1035 label",
        id="group name is not a DNS-1035 label",
    ),
    pytest.param(
        lambda b: b.replicated_job("g", group_name="g" * 64),
        None,
        "spec.replicatedJobs[2].groupName",
        "Too long: may not be more than 63",
        id="group name too long",
    ),
    pytest.param(
        lambda b: b.managed_by("not-prefixed"),
        None,
        "spec.managedBy",
        "domain-prefixed path",
        id="managedBy not domain-prefixed",
    ),
    pytest.param(
        lambda b: b.managed_by("example.com/" + "x" * 60),
        None,
        "spec.managedBy",
        "Too long",
        id="managedBy too long",
    ),
    pytest.param(
        lambda b: b.rule("FailJobSet", "r", reasons=["OOMKilled"]),
        None,
        "spec.failurePolicy.rules[0].onJobFailureReasons[0]",
        "Unsupported value",
        id="rule with an invalid job failure reason",
    ),
    pytest.param(
        lambda b: b.rule("FailJobSet", "r", targets=["nope"]),
        None,
        "spec.failurePolicy.rules[0].targetReplicatedJobs[0]",
        "does not appear",
        id="rule with an invalid target replicated job",
    ),
    pytest.param(
        lambda b: b.rule("FailJobSet", "r" * 129),
        None,
        "spec.failurePolicy.rules[0].name",
        "Too long: may not be more than 128",
        id="rule name longer than 128",
    ),
    pytest.param(
        lambda b: b.rule("FailJobSet", "r").rule("RestartJobSet", "r"),
        None,
        "spec.failurePolicy.rules[1].name",
        "indices [0 1]",
        id="rule names not unique",
    ),
    pytest.param(
        lambda b: b.rule("FailJobSet", "1rule"),
        None,
        "spec.failurePolicy.rules[0].name",
        "should match",
        id="rule name not starting with a letter",
    ),
    pytest.param(
        lambda b: b.rule("FailJobSet", "rule,"),
        None,
        "spec.failurePolicy.rules[0].name",
        "should match",
        id="rule name with a bad last character",
    ),
    pytest.param(
        lambda b: b.coordinator("nope"),
        None,
        "spec",
        "coordinator must name an existing replicatedJob",
        id="coordinator replicated job missing",
    ),
    pytest.param(
        lambda b: b.coordinator("workers").job_spec("workers", completionMode="NonIndexed"),
        None,
        "spec.coordinator.replicatedJob",
        "Indexed",
        id="coordinator replicated job not indexed",
    ),
    pytest.param(
        lambda b: b.coordinator("workers", job_index=3),
        None,
        "spec",
        "a jobIndex below its replicas",
        id="coordinator bad job index",
    ),
    pytest.param(
        lambda b: b.coordinator("workers", pod_index=1),
        None,
        "spec.coordinator.podIndex",
        "range [0, 1)",
        id="coordinator bad pod index",
    ),
    pytest.param(
        lambda b: b.coordinator("workers").network(subdomain="s" * 50),
        None,
        "",
        "invalid coordinator label value longer than 63",
        id="coordinator label too long via subdomain",
    ),
    pytest.param(
        lambda b: b.replicated_job("big", replicas=1025).rule("RestartJob"),
        ON,
        "spec.replicatedJobs[2].replicas",
        "at most 1024",
        id="RestartJob with more than 1024 replicas",
    ),
    pytest.param(
        lambda b: b.replicated_job("big", replicas=1025).rule("RestartJobAndIgnoreMaxRestarts"),
        ON,
        "spec.replicatedJobs[2].replicas",
        "at most 1024",
        id="RestartJobAndIgnoreMaxRestarts with more than 1024 replicas",
    ),
    pytest.param(
        lambda b: b.rule("RestartJob"),
        None,
        "spec.failurePolicy.rules[0].action",
        "RestartJob feature gate",
        id="RestartJob with its gate off",
    ),
    pytest.param(
        lambda b: b.rule("RestartJobAndIgnoreMaxRestarts"),
        None,
        "spec.failurePolicy.rules[0].action",
        "RestartJob feature gate",
        id="RestartJobAndIgnoreMaxRestarts with its gate off",
    ),
    pytest.param(
        lambda b: b.replicated_job("third", depends_on=[("later", "Ready")]).replicated_job(
            "later"
        ),
        None,
        "spec.replicatedJobs[2].dependsOn[0].name",
        "cannot depend on replicatedJob: later",
        id="depends on a later replicated job",
    ),
    pytest.param(
        lambda b: b.replicated_job(
            "third", depends_on=[("later", "Ready"), ("leader", "Ready")]
        ).replicated_job("later"),
        None,
        "spec.replicatedJobs[2].dependsOn[0].name",
        "cannot depend on",
        id="depends on a later and an earlier replicated job",
    ),
    pytest.param(
        lambda b: b.replicated_job("third", depends_on=[("ghost", "Ready")]),
        None,
        "spec.replicatedJobs[2].dependsOn[0].name",
        "cannot depend on replicatedJob: ghost",
        id="depends on an unknown replicated job",
    ),
    pytest.param(
        lambda b: (
            make_jobset("js").replicated_job("a", depends_on=[("b", "Ready")]).replicated_job("b")
        ),
        None,
        "spec",
        c.FIRST_RJOB_DEPENDS_ON_MESSAGE,
        id="first replicated job has dependsOn",
    ),
    pytest.param(
        lambda b: b.startup_policy("InOrder").replicated_job(
            "third", depends_on=[("leader", "Ready")]
        ),
        None,
        "spec",
        c.STARTUP_POLICY_DEPENDS_ON_EXCLUSIVE_MESSAGE,
        id="DependsOn and StartupPolicy InOrder can't be set together",
    ),
    pytest.param(
        lambda b: b.volume_claim_policy("d", "d").volume_mount("leader", "d"),
        None,
        "spec.volumeClaimPolicies[0].templates[1].metadata.name",
        "Duplicate value",
        id="volume claim template names not unique",
    ),
    pytest.param(
        lambda b: b.volume_claim_policy("Data").volume_mount("leader", "Data"),
        None,
        "spec.volumeClaimPolicies[0].templates[0].metadata.name",
        "RFC 1123",
        id="volume claim template name uppercase",
    ),
    pytest.param(
        lambda b: b.volume_claim_policy("d" * 62).volume_mount("leader", "d" * 62),
        None,
        "",
        "PVC names <template>-<jobset> must be no more than 63",
        id="volume claim PVC name too long",
    ),
    pytest.param(
        lambda b: b.volume_claim_policy("data"),
        None,
        "spec.volumeClaimPolicies[0].templates[0].metadata.name",
        "don't have a matching volumeMount",
        id="volume claim with no matching mount",
    ),
    pytest.param(
        lambda b: (
            b.volume_claim_policy("data")
            .volume_mount("leader", "data")
            .pod_spec("leader", volumes=[{"name": "data", "emptyDir": {}}])
        ),
        None,
        "spec.volumeClaimPolicies[0].templates[0].metadata.name",
        "conflicts",
        id="volume claim conflicts with a pod volume",
    ),
    pytest.param(
        _in_place,
        None,
        "spec.failurePolicy.restartStrategy",
        "InPlaceRestart feature gate",
        id="InPlaceRestart with its gate off",
    ),
    pytest.param(
        lambda b: _in_place(b).job_spec("leader", backoffLimit=6),
        ON,
        "spec.replicatedJobs[0].template.spec.backoffLimit",
        "2147483647",
        id="InPlaceRestart with backoffLimit not MaxInt32",
    ),
    pytest.param(
        lambda b: _in_place(b).job_spec("leader", podReplacementPolicy="TerminatingOrFailed"),
        ON,
        "spec.replicatedJobs[0].template.spec.podReplacementPolicy",
        "Failed",
        id="InPlaceRestart with podReplacementPolicy not Failed",
    ),
    pytest.param(
        lambda b: _in_place(b).job_spec("leader", completions=2),
        ON,
        "spec.replicatedJobs[0].template.spec.completions",
        "equal parallelism",
        id="InPlaceRestart with completions different from parallelism",
    ),
]


@pytest.mark.parametrize(("build", "gates", "want_path", "want_message"), INVALID_CREATE)
def test_invalid_create(
    build: Build, gates: FeatureGates | None, want_path: str, want_message: str
) -> None:
    errors = validate(_js(build), feature_gates=gates)
    assert any(e.path == want_path and want_message in e.message for e in errors), errors


def test_in_place_restart_needs_completions_and_parallelism() -> None:
    js = _js(lambda b: _in_place(b).job_spec("leader", completions=None, parallelism=None))
    spec = _js(lambda b: b).spec.replicated_jobs[0].template["spec"]
    assert "completions" in spec
    paths = _paths(validate(_strip_pc(js), feature_gates=ON))
    assert "spec.replicatedJobs[0].template.spec.parallelism" in paths
    assert "spec.replicatedJobs[0].template.spec.completions" in paths


def _strip_pc(js: JobSet) -> JobSet:
    manifest = js.to_manifest()
    spec = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]
    spec.pop("completions", None)
    spec.pop("parallelism", None)
    return JobSet.model_validate(manifest)


@pytest.mark.parametrize(
    ("name", "build", "want_path", "want_message"),
    [
        pytest.param(
            "j" * 58,
            lambda b: b,
            "",
            c.JOB_NAME_TOO_LONG_MESSAGE,
            id="JobSet name too long for job names",
        ),
        pytest.param(
            "j" * 48,
            lambda b: b.job_spec("workers", parallelism=100, completions=100),
            "",
            c.POD_NAME_TOO_LONG_MESSAGE,
            id="JobSet name too long for pod names",
        ),
        pytest.param(
            "j" * 54,
            lambda b: b.coordinator("leader"),
            "",
            "invalid coordinator label value",
            id="coordinator label too long via the JobSet name",
        ),
        pytest.param(
            "js",
            lambda b: b.replicated_job("r" * 56).coordinator("r" * 56),
            "",
            "invalid coordinator label value",
            id="coordinator label too long via the replicated job name",
        ),
    ],
)
def test_long_names(name: str, build: Build, want_path: str, want_message: str) -> None:
    errors = validate(_js(build, name))
    assert any(e.path == want_path and want_message in e.message for e in errors), errors


def test_an_empty_rule_name_is_accepted_as_the_unset_name_go_clients_send() -> None:
    # Upstream's Go type has no omitempty: every Go client sends an unnamed rule as "". The CRD
    # admits it and default() names it as upstream's webhook does (failurePolicyRule<i>).
    js = _base().rule("FailJobSet", "").model()
    assert validate(js) == []
    defaulted = default(js)
    assert defaulted.spec.failure_policy is not None
    assert defaulted.spec.failure_policy.rules[0].name == "failurePolicyRule0"
    assert validate(defaulted) == []


def test_coordinator_job_without_completions_is_rejected() -> None:
    manifest = _js(lambda b: b.coordinator("workers")).to_manifest()
    del manifest["spec"]["replicatedJobs"][1]["template"]["spec"]["completions"]
    errors = validate(JobSet.model_validate(manifest))
    assert [e.path for e in errors] == ["spec.coordinator.replicatedJob"]
    assert "have completions set" in errors[0].message


def test_generate_name_is_checked_with_a_five_character_suffix() -> None:
    js = default(_base().generate_name("g" * 50).model())
    errors = validate(js)
    assert any(e.path == "" and c.JOB_NAME_TOO_LONG_MESSAGE in e.message for e in errors), errors
    pvc = default(
        _base()
        .generate_name("g" * 55)
        .volume_claim_policy("data")
        .volume_mount("leader", "data")
        .model()
    )
    assert any(e.path == "" and "PVC names" in e.message for e in validate(pvc))


def _pvc(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-js"},
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("when_deleted", "same_spec", "want"),
    [
        pytest.param("Retain", True, [], id="existing PVC matching the template with Retain"),
        pytest.param(
            "Delete", True, [c.VCP_RETAIN_MESSAGE], id="existing PVC with a non-Retain policy"
        ),
        pytest.param("Retain", False, ["different spec"], id="existing PVC with another spec"),
    ],
)
def test_existing_pvcs(when_deleted: str, same_spec: bool, want: list[str]) -> None:
    js = _js(
        lambda b: b.volume_claim_policy("data", when_deleted=when_deleted).volume_mount(
            "leader", "data"
        )
    )
    spec = dict(js.spec.volume_claim_policies[0].templates[0]["spec"])  # type: ignore[index]
    if not same_spec:
        spec["accessModes"] = ["ReadWriteMany"]
    errors = validate(js, existing_pvcs={"data-js": _pvc(spec)})
    assert [m for m in want if not any(m in e.message for e in errors)] == []
    assert len(errors) == len(want)


# --- update ------------------------------------------------------------------------------------


def _update(old: Build, new: Build, gates: FeatureGates | None = None) -> list[FieldError]:
    return validate(_js(new), _js(old), feature_gates=gates)


def _labels(value: str) -> Build:
    return lambda b: b.pod_metadata("workers", labels={"kueue": value})


def _suspended(*more: Build) -> Build:
    def build(b: JobSetBuilder) -> JobSetBuilder:
        b = b.suspend(True)
        for step in more:
            b = step(b)
        return b

    return build


def _scaled(p: int, cmpl: int) -> Build:
    return lambda b: b.job_spec("workers", parallelism=p, completions=cmpl)


VALID_UPDATE = [
    pytest.param(lambda b: b, lambda b: b.suspend(True), None, id="suspend a jobset"),
    pytest.param(lambda b: b.suspend(True), lambda b: b.suspend(False), None, id="resume a jobset"),
    pytest.param(lambda b: b, lambda b: b.label("team", "b"), None, id="update labels"),
    pytest.param(
        _suspended(),
        _suspended(
            _labels("x"),
            lambda b: b.pod_spec(
                "workers",
                nodeSelector={"pool": "a"},
                tolerations=[{"key": "t", "operator": "Exists"}],
                schedulingGates=[{"name": "g"}],
            ),
        ),
        None,
        id="pod template scheduling fields updatable while suspended",
    ),
    pytest.param(
        lambda b: b,
        _suspended(_labels("x")),
        None,
        id="pod template updatable in the update that suspends",
    ),
    pytest.param(
        _suspended(),
        lambda b: _labels("x")(b.suspend(False)),
        None,
        id="pod template updatable in the update that resumes",
    ),
    pytest.param(
        lambda b: b,
        lambda b: b.ttl_after_finished(5).coordinator("leader"),
        None,
        id="ttl and coordinator have no immutability rule",
    ),
]


@pytest.mark.parametrize(("old", "new", "gates"), VALID_UPDATE)
def test_valid_update(old: Build, new: Build, gates: FeatureGates | None) -> None:
    assert _update(old, new, gates) == []


INVALID_UPDATE = [
    pytest.param(
        lambda b: b,
        _labels("x"),
        None,
        "spec.replicatedJobs",
        c.FIELD_IMMUTABLE_MESSAGE,
        id="pod template not updatable while running",
    ),
    pytest.param(
        lambda b: b,
        lambda b: b.pod_spec("workers", schedulingGates=[{"name": "g"}]),
        None,
        "spec.replicatedJobs",
        c.FIELD_IMMUTABLE_MESSAGE,
        id="scheduling gates not updatable while running",
    ),
    pytest.param(
        _suspended(),
        _suspended(lambda b: b.pod_spec("workers", priority=5)),
        None,
        "spec.replicatedJobs",
        c.FIELD_IMMUTABLE_MESSAGE,
        id="other pod fields stay immutable while suspended",
    ),
    pytest.param(
        _suspended(),
        _suspended(lambda b: b.replicated_job("extra")),
        None,
        "spec.replicatedJobs",
        "cannot be added, removed, renamed or reordered",
        id="adding a replicated job while suspended is rejected",
    ),
    pytest.param(
        lambda b: b.managed_by("a.io/x"),
        lambda b: b.managed_by("b.io/x"),
        None,
        "spec.managedBy",
        c.FIELD_IMMUTABLE_MESSAGE,
        id="managedBy is immutable",
    ),
    pytest.param(
        lambda b: b.success_policy("All"),
        lambda b: b.success_policy("Any"),
        None,
        "spec.successPolicy",
        c.VALUE_IMMUTABLE_MESSAGE,
        id="success policy is immutable",
    ),
    pytest.param(
        lambda b: b.failure_policy(1),
        lambda b: b.failure_policy(2),
        None,
        "spec.failurePolicy",
        c.VALUE_IMMUTABLE_MESSAGE,
        id="failure policy is immutable",
    ),
    pytest.param(
        lambda b: b.network(subdomain="a"),
        lambda b: b.network(subdomain="b"),
        None,
        "spec.network",
        c.VALUE_IMMUTABLE_MESSAGE,
        id="network is immutable",
    ),
    pytest.param(
        lambda b: b.startup_policy("AnyOrder"),
        lambda b: b.startup_policy("InOrder"),
        None,
        "spec.startupPolicy",
        c.VALUE_IMMUTABLE_MESSAGE,
        id="startup policy is immutable",
    ),
    pytest.param(
        lambda b: b.replicated_job("third", depends_on=[("leader", "Ready")]),
        lambda b: b.replicated_job("third", depends_on=[("leader", "Complete")]),
        None,
        "spec.replicatedJobs[2].dependsOn",
        c.VALUE_IMMUTABLE_MESSAGE,
        id="dependsOn is immutable",
    ),
    pytest.param(
        lambda b: b.volume_claim_policy("a").volume_mount("leader", "a"),
        lambda b: b.volume_claim_policy("a", storage="2Gi").volume_mount("leader", "a"),
        None,
        "spec.volumeClaimPolicies",
        c.VALUE_IMMUTABLE_MESSAGE,
        id="volume claim policies are immutable",
    ),
    pytest.param(
        lambda b: b,
        _scaled(4, 5),
        ON,
        "spec.replicatedJobs[1].template.spec.completions",
        c.ELASTIC_EQUAL_MESSAGE,
        id="elastic scaling fails when parallelism and completions differ",
    ),
    pytest.param(
        lambda b: b,
        _scaled(0, 0),
        ON,
        "spec.replicatedJobs[1].template.spec.parallelism",
        c.ELASTIC_MIN_MESSAGE,
        id="elastic scaling fails below one",
    ),
    pytest.param(
        lambda b: b,
        _scaled(4, 4),
        None,
        "spec.replicatedJobs",
        c.FIELD_IMMUTABLE_MESSAGE,
        id="scaling fails with the elastic gate off",
    ),
    pytest.param(
        lambda b: b.job_spec("workers", completionMode="NonIndexed"),
        lambda b: _scaled(4, 4)(b.job_spec("workers", completionMode="NonIndexed")),
        ON,
        "spec.replicatedJobs[1].template.spec",
        "can change only for Indexed replicated jobs",
        id="NonIndexed jobs stay immutable with the elastic gate on",
    ),
    pytest.param(
        lambda b: b,
        lambda b: _scaled(4, 4)(b.pod_spec("workers", priority=1)),
        ON,
        "spec.replicatedJobs",
        c.FIELD_IMMUTABLE_MESSAGE,
        id="other fields stay immutable during an elastic scale",
    ),
    pytest.param(
        lambda b: b,
        lambda b: (
            make_jobset("js", "ns").replicated_job("leader").replicated_job("renamed", replicas=3)
        ),
        None,
        "spec.replicatedJobs",
        c.FIELD_IMMUTABLE_MESSAGE,
        id="replicated job name cannot change",
    ),
]


@pytest.mark.parametrize(("old", "new", "gates", "want_path", "want_message"), INVALID_UPDATE)
def test_invalid_update(
    old: Build, new: Build, gates: FeatureGates | None, want_path: str, want_message: str
) -> None:
    errors = _update(old, new, gates)
    assert any(e.path == want_path and want_message in e.message for e in errors), errors


@pytest.mark.parametrize(
    "terminal",
    [
        pytest.param(c.CONDITION_COMPLETED, id="cannot scale when Completed"),
        pytest.param(c.CONDITION_FAILED, id="cannot scale when Failed"),
    ],
)
def test_elastic_scaling_of_a_finished_jobset_is_rejected(terminal: str) -> None:
    old = default(_base().condition(terminal).terminal_state(terminal).model())
    new = _js(_scaled(4, 4))
    errors = validate(new, old, feature_gates=ON)
    assert any(
        e.path == "spec.replicatedJobs" and c.ELASTIC_TERMINAL_MESSAGE in e.message for e in errors
    ), errors


def test_reordering_replicated_jobs_is_evaluated_by_name_and_rejected() -> None:
    old = _js(lambda b: b)
    new = default(
        make_jobset("js", "ns")
        .replicated_job("workers", replicas=3)
        .job_spec("workers", parallelism=4, completions=4)
        .replicated_job("leader")
        .model()
    )
    errors = validate(new, old, feature_gates=ON)
    assert {e.path for e in errors} == {"spec.replicatedJobs"}
    assert any("cannot be added, removed, renamed or reordered" in e.message for e in errors)


def test_elastic_scaling_passes_the_crd_rendered_with_its_gate_and_not_the_default_one() -> None:
    # Upstream's webhook allows it with ElasticJobSet: so does the CRD an install renders with
    # the gate on; the committed CRD (gates at their defaults) refuses it, as upstream does.
    old, new = _js(lambda b: b), _js(_scaled(4, 4))
    context = Context(check_name(new), ON, {}, old)
    assert webhook_problems(new, context) == []
    assert crd_problems(new, old, ON) == []
    assert [e.path for e in crd_problems(new, old)] == ["spec.replicatedJobs"]


def test_create_checks_are_not_rerun_on_update() -> None:
    old = _js(lambda b: b, name="j" * 58)
    assert validate(old)  # too long for a create
    assert validate(old, old) == []
