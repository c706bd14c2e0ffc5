"""What the Pods of an InPlaceRestart JobSet need to run upstream's in-place restart agent.

KEP-467 leaves these to the user (upstream documents them as an example): the agent reads its
JobSet (get, list, watch; its cache watches the one JobSet by name) and server-side-applies one
annotation, `jobset.sigs.k8s.io/in-place-restart-attempt`, to its own Pod (patch). A
ValidatingAdmissionPolicy narrows that patch permission to that one annotation: a Pod update
made by the agent's ServiceAccount that changes the spec, the labels or any other annotation is
refused. `agent_objects(namespace)` renders the ServiceAccount, Role, RoleBinding, policy and
binding for one namespace; pods name the account in `serviceAccountName`. Pure.
"""

from __future__ import annotations

from typing import Final

from jobset_infra.api import constants as c
from jobset_infra.api.rbac import IN_PLACE_RESTART_AGENT_RULES
from jobset_infra.manifests.meta import Manifest

__all__ = ["AGENT_ACCOUNT", "agent_objects", "agent_role_rules"]

AGENT_ACCOUNT: Final = "jobset-in-place-restart"
_POLICY_API: Final = "admissionregistration.k8s.io/v1"
_KEY: Final = c.IN_PLACE_RESTART_ATTEMPT_KEY
_ONLY_THE_ATTEMPT: Final = (
    f"variables.old.all(k, k == '{_KEY}' || (k in variables.new && variables.new[k] == "
    f"variables.old[k])) && variables.new.all(k, k == '{_KEY}' || k in variables.old)"
)


def agent_role_rules() -> list[dict[str, list[str]]]:
    """The agent's permissions in its namespace: read its JobSet, patch its Pod."""
    return [rule.to_dict() for rule in IN_PLACE_RESTART_AGENT_RULES]


def agent_objects(namespace: str, account: str = AGENT_ACCOUNT) -> list[Manifest]:
    """ServiceAccount, Role and RoleBinding in `namespace`, and the admission policy (with its
    binding) that lets that account change nothing of a Pod but the attempt annotation."""
    meta = {"name": account, "namespace": namespace}
    policy = f"{account}.{namespace}"
    user = f"system:serviceaccount:{namespace}:{account}"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta,
         "rules": agent_role_rules()},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account}},
        {"apiVersion": _POLICY_API, "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": policy},
         "spec": {
             "failurePolicy": "Fail",
             "matchConstraints": {"resourceRules": [{
                 "apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                 "resources": ["pods"]}]},
             "matchConditions": [{"name": "the-agents-account",
                                  "expression": f"request.userInfo.username == '{user}'"}],
             "variables": [
                 {"name": "old", "expression": "has(oldObject.metadata.annotations) ? "
                                               "oldObject.metadata.annotations : {}"},
                 {"name": "new", "expression": "has(object.metadata.annotations) ? "
                                               "object.metadata.annotations : {}"},
             ],
             "validations": [{
                 "expression": "object.spec == oldObject.spec && "
                               "(has(object.metadata.labels) ? object.metadata.labels : {}) == "
                               "(has(oldObject.metadata.labels) ? oldObject.metadata.labels : "
                               "{}) && " + _ONLY_THE_ATTEMPT,
                 "message": f"{user} may change only the Pod annotation "
                            f"{c.IN_PLACE_RESTART_ATTEMPT_KEY}",
             }],
         }},
        {"apiVersion": _POLICY_API, "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": policy},
         "spec": {"policyName": policy, "validationActions": ["Deny"]}},
    ]
