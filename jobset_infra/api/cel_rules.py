"""CEL `x-kubernetes-validations` the CRD carries besides the per-field ones in `models`.

They state upstream's webhook checks (reference §4.2-4.3) that CEL can express cheaply, so the
API server enforces them without an admission webhook. Each rule is O(1) per object or per list
item (sizes and comparisons, no regexes under unbounded lists, no nested iteration), which keeps
the apiserver's estimated CEL cost bounded. Checks that need more (name charsets inside lists,
uniqueness of rule names, references between list items) stay in `validation.validate`, which
`jobset-infra validate`, the Pulumi component and the controller run.

Every rule is compiled and exercised, valid and invalid, in tests/api/test_cel_rules.py.
"""

from __future__ import annotations

from typing import Any, Final

from jobset_infra.api import constants as c

# A DNS-1035 label (Service names); subdomain must be one (upstream checks DNS-1123 and 1035).
DNS1035_REGEX: Final = "^[a-z]([-a-z0-9]*[a-z0-9])?$"
# <dns-1123 subdomain>/<http path>, as apimachinery's IsDomainPrefixedPath.
DOMAIN_PREFIXED_PATH_REGEX: Final = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
    r"/[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$"
)

_NAME: Final = "(has(self.metadata.name) ? self.metadata.name : '')"
_RJOBS: Final = "(has(self.spec.replicatedJobs) ? self.spec.replicatedJobs : [])"
_SUSPENDED: Final = "(has({0}.suspend) && {0}.suspend)"


def _rule(rule: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"rule": rule, "message": message, **extra}


def _root_rules() -> list[dict[str, Any]]:
    job = f"size({_NAME}) + size(r.name) + size(string(r.replicas - 1)) + 2"
    indexed = (
        "has(r.template.spec) && has(r.template.spec.completionMode) && "
        f"r.template.spec.completionMode == '{c.COMPLETION_MODE_INDEXED}' && "
        "has(r.template.spec.completions)"
    )
    pod = f"{job} + size(string(r.template.spec.completions - 1)) + 7"
    coord = "self.spec.coordinator"
    coordinator = (
        f"size({_NAME}) + size({coord}.replicatedJob) + "
        f"size(string(has({coord}.jobIndex) ? {coord}.jobIndex : 0)) + "
        f"size(string(has({coord}.podIndex) ? {coord}.podIndex : 0)) + 4 + "
        "size(has(self.spec.network) && has(self.spec.network.subdomain) && "
        f"size(self.spec.network.subdomain) > 0 ? self.spec.network.subdomain : {_NAME})"
    )
    return [
        _rule(f"{_RJOBS}.all(r, {job} <= 63)", c.JOB_NAME_TOO_LONG_MESSAGE),
        _rule(f"{_RJOBS}.all(r, !({indexed}) || {pod} <= 63)", c.POD_NAME_TOO_LONG_MESSAGE),
        _rule(
            f"!has({coord}) || {coordinator} <= 63",
            "spec will lead to an invalid coordinator label value longer than 63 characters "
            "(long JobSet / ReplicatedJob / SubDomain name?)",
        ),
        _rule(
            "!has(self.spec.volumeClaimPolicies) || self.spec.volumeClaimPolicies.all(p, "
            "!has(p.templates) || p.templates.all(t, !has(t.metadata) || !has(t.metadata.name) "
            f"|| size(t.metadata.name) + 1 + size({_NAME}) <= 63))",
            "PVC names <template>-<jobset> must be no more than 63 characters",
        ),
    ]


def _spec_rules() -> list[dict[str, Any]]:
    rjobs = "(has(self.replicatedJobs) ? self.replicatedJobs : [])"
    old_rjobs = "(has(oldSelf.replicatedJobs) ? oldSelf.replicatedJobs : [])"
    return [
        _rule(f"size({rjobs}) == 0 || !has({rjobs}[0].dependsOn)", c.FIRST_RJOB_DEPENDS_ON_MESSAGE),
        _rule(
            f"!has(self.coordinator) || {rjobs}.exists(r, r.name == "
            "self.coordinator.replicatedJob && (has(self.coordinator.jobIndex) ? "
            "self.coordinator.jobIndex : 0) < r.replicas)",
            "coordinator must name an existing replicatedJob and a jobIndex below its replicas",
        ),
        _rule(
            "has(self.managedBy) == has(oldSelf.managedBy) && "
            "(!has(self.managedBy) || self.managedBy == oldSelf.managedBy)",
            c.FIELD_IMMUTABLE_MESSAGE,
            fieldPath=".managedBy",
        ),
        _rule(
            f"{rjobs}.map(r, r.name) == {old_rjobs}.map(r, r.name)",
            "replicatedJobs cannot be added, removed, renamed or reordered",
            fieldPath=".replicatedJobs",
        ),
        _rule(
            f"{_SUSPENDED.format('self')} || {_SUSPENDED.format('oldSelf')} || "
            f"{rjobs} == {old_rjobs}",
            c.FIELD_IMMUTABLE_MESSAGE
            + ": replicatedJobs can only change (pod template labels, annotations, "
            "nodeSelector, tolerations, schedulingGates) while the JobSet is suspended",
            fieldPath=".replicatedJobs",
        ),
    ]


def extra_rules() -> dict[str, list[dict[str, Any]]]:
    """Schema path -> CEL rules to append there (`[]` steps into list items)."""
    return {
        "": _root_rules(),
        "spec": _spec_rules(),
        "spec.network.subdomain": [
            _rule(f"self.matches('{DNS1035_REGEX}')", "subdomain must be a DNS-1035 label")
        ],
        "spec.managedBy": [
            _rule(
                f'self.matches(r"{DOMAIN_PREFIXED_PATH_REGEX}")',
                c.DOMAIN_PREFIXED_PATH_MESSAGE,
            )
        ],
        "spec.replicatedJobs.[]": [
            _rule(
                "!has(self.template.spec) || !has(self.template.spec.parallelism) || "
                "(has(self.replicas) ? self.replicas : 1) * self.template.spec.parallelism "
                f"<= {c.MAX_INT32}",
                f"replicas x parallelism must not exceed {c.MAX_INT32}",
            )
        ],
        "spec.volumeClaimPolicies.[]": [
            _rule(
                "!has(self.templates) || self.templates.all(t, !has(t.metadata) || "
                "!has(t.metadata.namespace) || size(t.metadata.namespace) == 0)",
                c.VCP_NAMESPACE_MESSAGE,
            )
        ],
    }
