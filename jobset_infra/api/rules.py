"""The registry of upstream's webhook rules: every rule once, as CEL or as a Python check.

A `Rule` has an id (a sentence), the field path it is about, its message and either a CEL
expression (`cel`, with an optional `field_path`) or a Python `check` where CEL cannot express it
cheaply (feature gates, references between list items, name charsets inside lists, uniqueness,
existing PVCs). Every consumer reads this one list, so a message exists once by construction:

- the CRD generator puts each CEL rule at its schema path (`crd_rules`), so the API server
  enforces it without an admission webhook;
- `validation.validate` (the Pulumi component, `jobset-infra validate` through `check`, and the
  controller's InvalidSpec condition) evaluates the CRD's CEL rules with celpy and runs the
  Python checks (`webhook_problems`);
- `check.check_jobset` admits the manifest through the CRD schema (its CEL rules included) and
  adds `webhook_problems`, so nothing is reported twice.

CEL rules are O(1) per object or per list item (sizes and comparisons, no regexes under
unbounded lists, no nested iteration), which keeps the apiserver's estimated CEL cost bounded.
Field-level CEL rules that belong to one field's schema (immutability, the startup policy's
exclusion with dependsOn) are declared on that field in `models`. Every CEL rule is compiled and
exercised, valid and invalid, in tests/api/test_rules.py; tests/architecture checks that no
Python check restates a CEL rule's message.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

from jobset_infra.api import constants as c
from jobset_infra.api import validation as checks
from jobset_infra.api import validation_update as update_checks
from jobset_infra.api.errors import FieldError
from jobset_infra.api.features import Feature, FeatureGates
from jobset_infra.api.models import JobSet
from jobset_infra.api.names import DNS1035_LABEL_MESSAGE, DOMAIN_PREFIXED_PATH_MESSAGE
from jobset_infra.api.rule_base import Check, Context, Rule, when
from jobset_infra.api.rules_update import all_but_sizes_unchanged, replicated_job_update_rules

__all__ = [
    "DNS1035_REGEX",
    "DOMAIN_PREFIXED_PATH_REGEX",
    "RULES",
    "Check",
    "Context",
    "Rule",
    "children_refused",
    "crd_rules",
    "webhook_problems",
]

# A DNS-1035 label (Service names); subdomain must be one (upstream checks DNS-1123 and 1035).
DNS1035_REGEX: Final = "^[a-z]([-a-z0-9]*[a-z0-9])?$"
# <dns-1123 subdomain>/<http path>, as apimachinery's IsDomainPrefixedPath.
DOMAIN_PREFIXED_PATH_REGEX: Final = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
    r"/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$"
)

_NAME: Final = "(has(self.metadata.name) ? self.metadata.name : '')"
_RJOBS: Final = "(has(self.spec) && has(self.spec.replicatedJobs) ? self.spec.replicatedJobs : [])"
_SUSPENDED: Final = "(has({0}.suspend) ? {0}.suspend : false)"


def _longest(items: str) -> str:
    """The largest of a list of ints, 0 for an empty list (Kubernetes' lists library `max`)."""
    return f"({items} + [0]).max()"


def _root_rules() -> list[Rule]:
    # Lengths are summed per replicated job inside the macro and compared once outside it, so
    # each iteration stays small (celpy interprets every node; the apiserver's cost is lower).
    job_suffix = "size(r.name) + size(string(r.replicas - 1))"
    spec = "r.template.spec"
    indexed = when(
        f"has(r.template.spec) && has({spec}.completionMode) && has({spec}.completions)",
        f"{spec}.completionMode == '{c.COMPLETION_MODE_INDEXED}'",
        "false",
    )
    pod_suffix = f"{job_suffix} + size(string({spec}.completions - 1))"
    coord = "self.spec.coordinator"
    subdomain = when(
        "has(self.spec.network) && has(self.spec.network.subdomain)",
        when("size(self.spec.network.subdomain) > 0", "self.spec.network.subdomain", _NAME),
        _NAME,
    )
    coordinator = (
        f"size({_NAME}) + size({coord}.replicatedJob) + "
        f"size(string(has({coord}.jobIndex) ? {coord}.jobIndex : 0)) + "
        f"size(string(has({coord}.podIndex) ? {coord}.podIndex : 0)) + 4 + size({subdomain})"
    )
    pvc = when("has(t.metadata) && has(t.metadata.name)", "size(t.metadata.name)", "0")
    return [
        Rule(
            "every Job name fits in 63 characters",
            "",
            c.JOB_NAME_TOO_LONG_MESSAGE,
            cel=f"size({_NAME}) + 2 + {_longest(f'{_RJOBS}.map(r, {job_suffix})')} <= 63",
            children=True,
        ),
        Rule(
            "every Indexed Job's pod name fits in 63 characters",
            "",
            c.POD_NAME_TOO_LONG_MESSAGE,
            cel=f"size({_NAME}) + 9 + "
            f"{_longest(f'{_RJOBS}.filter(r, {indexed}).map(r, {pod_suffix})')} <= 63",
            children=True,
        ),
        Rule(
            "the coordinator's label value fits in 63 characters",
            "",
            "spec will lead to an invalid coordinator label value longer than 63 characters "
            "(long JobSet / ReplicatedJob / SubDomain name?)",
            cel=when(f"has(self.spec) && has({coord})", f"{coordinator} <= 63"),
            children=True,
        ),
        Rule(
            "every PVC name <template>-<jobset> fits in 63 characters",
            "",
            "PVC names <template>-<jobset> must be no more than 63 characters",
            cel=when(
                "has(self.spec) && has(self.spec.volumeClaimPolicies)",
                f"size({_NAME}) + 1 + "
                + _longest(
                    "self.spec.volumeClaimPolicies.map(p, "
                    + when("has(p.templates)", _longest(f"p.templates.map(t, {pvc})"), "0")
                    + ")"
                )
                + " <= 63",
            ),
            children=True,
        ),
    ]


def _spec_rules() -> list[Rule]:
    rjobs = "(has(self.replicatedJobs) ? self.replicatedJobs : [])"
    old_rjobs = "(has(oldSelf.replicatedJobs) ? oldSelf.replicatedJobs : [])"
    suspended = f"{_SUSPENDED.format('self')} || {_SUSPENDED.format('oldSelf')}"
    coord = "self.coordinator"
    job_index = f"(has({coord}.jobIndex) ? {coord}.jobIndex : 0)"
    return [
        Rule(
            "the first replicated job depends on nothing",
            "spec",
            c.FIRST_RJOB_DEPENDS_ON_MESSAGE,
            cel=when(f"size({rjobs}) > 0", f"!has({rjobs}[0].dependsOn)"),
        ),
        Rule(
            "the coordinator names a replicated job and a job index it has",
            "spec",
            "coordinator must name an existing replicatedJob and a jobIndex below its replicas",
            cel=when(
                f"has({coord})",
                f"{rjobs}.exists(r, r.name == {coord}.replicatedJob && {job_index} < r.replicas)",
            ),
        ),
        Rule(
            "managedBy never changes",
            "spec",
            c.FIELD_IMMUTABLE_MESSAGE,
            cel="has(self.managedBy) == has(oldSelf.managedBy) && "
            + when("has(self.managedBy)", "self.managedBy == oldSelf.managedBy"),
            field_path=".managedBy",
        ),
        Rule(
            "replicated jobs are never added, removed, renamed or reordered",
            "spec",
            "replicatedJobs cannot be added, removed, renamed or reordered",
            cel=f"{rjobs}.map(r, r.name) == {old_rjobs}.map(r, r.name)",
            field_path=".replicatedJobs",
        ),
        Rule(
            "replicated jobs change only while the JobSet is suspended",
            "spec",
            c.FIELD_IMMUTABLE_MESSAGE
            + ": replicatedJobs can only change (pod template labels, annotations, "
            "nodeSelector, tolerations, schedulingGates) while the JobSet is suspended",
            cel=f"{suspended} || {rjobs} == {old_rjobs}",
            field_path=".replicatedJobs",
            gate=Feature.ELASTIC_JOBSET,
            gate_on=False,
        ),
        Rule(
            "replicated jobs change only while suspended, but for scaling (ElasticJobSet)",
            "spec",
            c.FIELD_IMMUTABLE_MESSAGE
            + ": replicatedJobs can only change (pod template labels, annotations, "
            "nodeSelector, tolerations, schedulingGates) while the JobSet is suspended, and "
            "parallelism and completions of Indexed jobs at any time (ElasticJobSet)",
            cel=f"{suspended} || {all_but_sizes_unchanged(rjobs, old_rjobs)}",
            field_path=".replicatedJobs",
            gate=Feature.ELASTIC_JOBSET,
        ),
    ]


def _field_rules() -> list[Rule]:
    return [
        Rule(
            "the subdomain is a DNS-1035 label",
            "spec.network.subdomain",
            "subdomain must be a DNS-1035 label",
            cel=f"self.matches('{DNS1035_REGEX}')",
            children=True,
        ),
        Rule(
            "managedBy is a domain-prefixed path",
            "spec.managedBy",
            DOMAIN_PREFIXED_PATH_MESSAGE,
            cel=f'self.matches(r"{DOMAIN_PREFIXED_PATH_REGEX}")',
        ),
        Rule(
            "replicas x parallelism fits in an int32",
            "spec.replicatedJobs.[]",
            f"replicas x parallelism must not exceed {c.MAX_INT32}",
            cel=when(
                "has(self.template.spec) && has(self.template.spec.parallelism)",
                "(has(self.replicas) ? self.replicas : 1) * self.template.spec.parallelism "
                f"<= {c.MAX_INT32}",
            ),
        ),
        Rule(
            "volume claim policy templates set no namespace",
            "spec.volumeClaimPolicies.[]",
            c.VCP_NAMESPACE_MESSAGE,
            cel=when(
                "has(self.templates)",
                "self.templates.all(t, "
                + when(
                    "has(t.metadata) && has(t.metadata.namespace)",
                    "size(t.metadata.namespace) == 0",
                )
                + ")",
            ),
        ),
    ]


def _each_rjob(js: JobSet, ctx: Context) -> Iterator[FieldError]:
    for i, rjob in enumerate(js.spec.replicated_jobs):
        yield from checks.replicated_job_problems(js, ctx.name, i, rjob, ctx.gates)


def _each_rjob_name(js: JobSet, ctx: Context) -> Iterator[FieldError]:
    for i, rjob in enumerate(js.spec.replicated_jobs):
        yield from checks.child_name_problems(js, ctx.name, i, rjob)


def _python_rules() -> list[Rule]:
    """The rules CEL cannot express cheaply, in upstream's order (ValidateCreate, then Update)."""
    return [
        Rule(
            "InPlaceRestart needs its feature gate",
            "spec.failurePolicy.restartStrategy",
            "InPlaceRestart requires the InPlaceRestart feature gate",
            check=lambda js, ctx: checks.in_place_restart_gate(js, ctx.gates),
        ),
        Rule(
            "replicated job names make valid Job and pod names",
            "spec.replicatedJobs[i].name",
            DNS1035_LABEL_MESSAGE,
            check=_each_rjob_name,
            children=True,
        ),
        Rule(
            "groupName is a DNS-1035 label, dependsOn points backwards, InPlaceRestart fields "
            "are set",
            "spec.replicatedJobs[i]",
            c.DEPENDS_ON_ORDER_MESSAGE,
            check=_each_rjob,
        ),
        Rule(
            "success policy targets exist",
            "spec.successPolicy.targetReplicatedJobs[k]",
            c.UNKNOWN_TARGET_MESSAGE,
            check=lambda js, ctx: checks.success_policy_problems(js),
        ),
        Rule(
            "failure policy rules are gated, named once, target existing jobs and known reasons",
            "spec.failurePolicy.rules[k]",
            c.DUPLICATE_RULE_NAMES_MESSAGE,
            check=lambda js, ctx: checks.failure_policy_problems(js, ctx.gates),
        ),
        Rule(
            "the coordinator is an Indexed job with its pod index in range",
            "spec.coordinator",
            "replicatedJob must be Indexed and have completions set",
            check=lambda js, ctx: checks.coordinator_problems(js),
        ),
        Rule(
            "volume claim policy templates are named once, mounted, and match existing PVCs",
            "spec.volumeClaimPolicies[i].templates[t]",
            c.VCP_NO_MOUNT_MESSAGE,
            check=lambda js, ctx: checks.volume_claim_policy_problems(
                js, ctx.name, ctx.existing_pvcs
            ),
        ),
        Rule(
            "replicated jobs change only in what upstream's ValidateUpdate allows",
            "spec.replicatedJobs",
            c.RJOBS_SUSPENDED_CHANGES_MESSAGE,
            check=lambda js, ctx: update_checks.replicated_jobs_problems(
                js, _old(ctx), ctx.gates
            ),
            on_update=True,
        ),
    ]


def _old(ctx: Context) -> JobSet:
    assert ctx.old is not None
    return ctx.old


RULES: Final[tuple[Rule, ...]] = (
    *_root_rules(),
    *_spec_rules(),
    *replicated_job_update_rules(),
    *_field_rules(),
    *_python_rules(),
)
"""Every webhook rule, once."""


def crd_rules(gates: FeatureGates | None = None) -> dict[str, list[dict[str, Any]]]:
    """Schema path -> the CEL rules to put there (`[]` steps into list items), in order, for an
    install with `gates` (the registry's defaults when None)."""
    gates = gates or FeatureGates()
    out: dict[str, list[dict[str, Any]]] = {}
    for rule in RULES:
        if rule.cel is not None and rule.applies(gates):
            out.setdefault(rule.path, []).append(rule.crd_entry())
    return out


def children_refused(js: JobSet, ctx: Context, crd: Iterable[FieldError]) -> list[FieldError]:
    """The problems of `js` that make the API server refuse its children: the `children` CEL
    rules' errors among `crd` (the CRD's verdict; a rule's message is unique, so it names the
    rule) and what the `children` Python checks find."""
    messages = tuple(r.message for r in RULES if r.children and r.cel is not None)
    found = [e for e in crd if e.message.endswith(messages)]
    return found + [
        error
        for rule in RULES
        if rule.children and rule.check is not None and not rule.on_update
        for error in rule.check(js, ctx)
    ]


def webhook_problems(js: JobSet, ctx: Context) -> list[FieldError]:
    """What the Python rules find in `js` (on update when `ctx.old` is set)."""
    update = ctx.old is not None
    return [
        error
        for rule in RULES
        if rule.check is not None and rule.on_update == update
        for error in rule.check(js, ctx)
    ]
