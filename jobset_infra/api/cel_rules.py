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
_RJOBS: Final = "(has(self.spec) && has(self.spec.replicatedJobs) ? self.spec.replicatedJobs : [])"
_SUSPENDED: Final = "(has({0}.suspend) ? {0}.suspend : false)"


def _rule(rule: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"rule": rule, "message": message, **extra}


def _when(condition: str, then: str, otherwise: str = "true") -> str:
    """`condition ? then : otherwise`: the guard form CEL engines never evaluate past.

    `!has(x) || f(x)` also holds in Kubernetes' CEL, but engines without short-circuiting
    (celpy) evaluate f(x) anyway and, inside macros, pay for the errors; a conditional is lazy.
    """
    return f"({condition} ? {then} : {otherwise})"


def _longest(items: str) -> str:
    """The largest of a list of ints, 0 for an empty list (Kubernetes' lists library `max`)."""
    return f"({items} + [0]).max()"


def _root_rules() -> list[dict[str, Any]]:
    # Lengths are summed per replicated job inside the macro and compared once outside it, so
    # each iteration stays small (celpy interprets every node; the apiserver's cost is lower).
    job_suffix = "size(r.name) + size(string(r.replicas - 1))"
    spec = "r.template.spec"
    indexed = _when(
        f"has(r.template.spec) && has({spec}.completionMode) && has({spec}.completions)",
        f"{spec}.completionMode == '{c.COMPLETION_MODE_INDEXED}'",
        "false",
    )
    pod_suffix = f"{job_suffix} + size(string({spec}.completions - 1))"
    coord = "self.spec.coordinator"
    subdomain = _when(
        "has(self.spec.network) && has(self.spec.network.subdomain)",
        _when("size(self.spec.network.subdomain) > 0", "self.spec.network.subdomain", _NAME),
        _NAME,
    )
    coordinator = (
        f"size({_NAME}) + size({coord}.replicatedJob) + "
        f"size(string(has({coord}.jobIndex) ? {coord}.jobIndex : 0)) + "
        f"size(string(has({coord}.podIndex) ? {coord}.podIndex : 0)) + 4 + size({subdomain})"
    )
    pvc = _when("has(t.metadata) && has(t.metadata.name)", "size(t.metadata.name)", "0")
    return [
        _rule(
            f"size({_NAME}) + 2 + {_longest(f'{_RJOBS}.map(r, {job_suffix})')} <= 63",
            c.JOB_NAME_TOO_LONG_MESSAGE,
        ),
        _rule(
            f"size({_NAME}) + 9 + "
            f"{_longest(f'{_RJOBS}.filter(r, {indexed}).map(r, {pod_suffix})')} <= 63",
            c.POD_NAME_TOO_LONG_MESSAGE,
        ),
        _rule(
            _when(f"has(self.spec) && has({coord})", f"{coordinator} <= 63"),
            "spec will lead to an invalid coordinator label value longer than 63 characters "
            "(long JobSet / ReplicatedJob / SubDomain name?)",
        ),
        _rule(
            _when(
                "has(self.spec) && has(self.spec.volumeClaimPolicies)",
                f"size({_NAME}) + 1 + "
                + _longest(
                    "self.spec.volumeClaimPolicies.map(p, "
                    + _when("has(p.templates)", _longest(f"p.templates.map(t, {pvc})"), "0")
                    + ")"
                )
                + " <= 63",
            ),
            "PVC names <template>-<jobset> must be no more than 63 characters",
        ),
    ]


def _spec_rules() -> list[dict[str, Any]]:
    rjobs = "(has(self.replicatedJobs) ? self.replicatedJobs : [])"
    old_rjobs = "(has(oldSelf.replicatedJobs) ? oldSelf.replicatedJobs : [])"
    coord = "self.coordinator"
    job_index = f"(has({coord}.jobIndex) ? {coord}.jobIndex : 0)"
    return [
        _rule(
            _when(f"size({rjobs}) > 0", f"!has({rjobs}[0].dependsOn)"),
            c.FIRST_RJOB_DEPENDS_ON_MESSAGE,
        ),
        _rule(
            _when(
                f"has({coord})",
                f"{rjobs}.exists(r, r.name == {coord}.replicatedJob && {job_index} < r.replicas)",
            ),
            "coordinator must name an existing replicatedJob and a jobIndex below its replicas",
        ),
        _rule(
            "has(self.managedBy) == has(oldSelf.managedBy) && "
            + _when("has(self.managedBy)", "self.managedBy == oldSelf.managedBy"),
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
                _when(
                    "has(self.template.spec) && has(self.template.spec.parallelism)",
                    "(has(self.replicas) ? self.replicas : 1) * self.template.spec.parallelism "
                    f"<= {c.MAX_INT32}",
                ),
                f"replicas x parallelism must not exceed {c.MAX_INT32}",
            )
        ],
        "spec.volumeClaimPolicies.[]": [
            _rule(
                _when(
                    "has(self.templates)",
                    "self.templates.all(t, "
                    + _when(
                        "has(t.metadata) && has(t.metadata.namespace)",
                        "size(t.metadata.namespace) == 0",
                    )
                    + ")",
                ),
                c.VCP_NAMESPACE_MESSAGE,
            )
        ],
    }
