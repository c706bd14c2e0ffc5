"""What upstream's mutating webhook defaults that a CRD's structural defaults cannot.

Structural defaults apply only to an absent field, so two of upstream's webhook defaults have no
CRD form: a failure-policy rule whose `name` is present but empty (every Go client sends an
unnamed rule as `"name": ""`: upstream's Go field has no omitempty) and a pod template whose
`restartPolicy` is `""`. Both are named here once, as a MutatingAdmissionPolicy (Kubernetes'
in-process admission CEL, GA in 1.36: still no webhook server), run on CREATE as upstream's
webhook is, so a cluster stores the same object upstream's install stores.

Without the policy (Kubernetes before 1.36, or `defaulting_policy=False`) the CRD still admits
the empty values and the controller applies the same defaults whenever it reads a JobSet
(`defaults.default`, `controller.core.failure_policy`); only the stored object keeps `""`.
"""

from __future__ import annotations

from typing import Any, Final

from jobset_infra.api import constants as c

__all__ = ["POLICY_API_VERSION", "POLICY_NAME", "defaulting_policy", "defaulting_policy_binding"]

POLICY_API_VERSION: Final = "admissionregistration.k8s.io/v1"
POLICY_NAME: Final = "jobset-defaults"

_RULES: Final = "object.spec.failurePolicy.rules"
_POD_SPEC: Final = "r.template.spec.template.spec"
# transformList(i, v, filter, transform): Kubernetes' CEL two-variable comprehensions (1.33+).
_UNNAMED_RULES: Final = (
    f"(has(object.spec.failurePolicy) && has({_RULES}) ? {_RULES}.transformList(i, r, "
    "!has(r.name) || r.name == '', "
    "JSONPatch{op: 'add', path: '/spec/failurePolicy/rules/' + string(i) + '/name', "
    f"value: '{c.DEFAULT_RULE_NAME_PREFIX}' + string(i)}}) : [])"
)
_EMPTY_RESTART_POLICIES: Final = (
    "(has(object.spec.replicatedJobs) ? object.spec.replicatedJobs.transformList(i, r, "
    "has(r.template.spec) && has(r.template.spec.template) && "
    f"has(r.template.spec.template.spec) && has({_POD_SPEC}.restartPolicy) && "
    f"{_POD_SPEC}.restartPolicy == '', "
    "JSONPatch{op: 'replace', path: '/spec/replicatedJobs/' + string(i) + "
    f"'/template/spec/template/spec/restartPolicy', value: '{c.RESTART_POLICY_ON_FAILURE}'}}) "
    ": [])"
)


def defaulting_policy() -> dict[str, Any]:
    """The MutatingAdmissionPolicy naming unnamed rules and filling empty restart policies."""
    return {
        "apiVersion": POLICY_API_VERSION,
        "kind": "MutatingAdmissionPolicy",
        "metadata": {"name": POLICY_NAME},
        "spec": {
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [c.GROUP],
                        "apiVersions": [c.VERSION],
                        "operations": ["CREATE"],  # upstream's webhook defaults on create only
                        "resources": [c.PLURAL],
                    }
                ]
            },
            # The controller applies the same defaults when it reads a JobSet, so a policy that
            # cannot run must not keep JobSets from being created.
            "failurePolicy": "Ignore",
            "reinvocationPolicy": "Never",
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {"expression": f"{_UNNAMED_RULES} + {_EMPTY_RESTART_POLICIES}"},
                }
            ],
        },
    }


def defaulting_policy_binding() -> dict[str, Any]:
    """Its binding: every JobSet in every namespace."""
    return {
        "apiVersion": POLICY_API_VERSION,
        "kind": "MutatingAdmissionPolicyBinding",
        "metadata": {"name": POLICY_NAME},
        "spec": {"policyName": POLICY_NAME},
    }
