"""Whether a user may do something, as kube-apiserver's authorizers decide it for a
SubjectAccessReview: the `system:masters` group is allowed everything (reason ""), then RBAC
over the stored ClusterRoleBindings and the RoleBindings of the request's namespace, each
binding's subjects matched against the user and its role's rules against the request.

The sim does not authorize its own requests (it serves every one as its admin) and holds none
of the real server's bootstrap roles (cluster-admin, system:discovery, ...), so a review answers
from the RBAC objects created in it. Aggregated ClusterRoles count with the rules they hold, as
the sim runs no aggregation controller.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jobset_infra.sim.apiserver.resources import GVR
from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
PRIVILEGED_GROUP = "system:masters"
_RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = GVR(_RBAC, "v1", "clusterroles")
CLUSTER_ROLE_BINDINGS = GVR(_RBAC, "v1", "clusterrolebindings")
ROLES = GVR(_RBAC, "v1", "roles")
ROLE_BINDINGS = GVR(_RBAC, "v1", "rolebindings")


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


@dataclass(frozen=True)
class Attributes:
    """A SubjectAccessReview's spec as the authorizer sees it."""

    user: str
    groups: tuple[str, ...]
    verb: str
    namespace: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""  # a non-resource request's URL path
    resource_request: bool = True

    @classmethod
    def of_spec(cls, spec: JsonObj) -> Attributes:
        user = str(spec.get("user") or "")
        groups = tuple(str(g) for g in spec.get("groups") or ())
        resource = spec.get("resourceAttributes")
        if isinstance(resource, dict):
            return cls(user, groups, verb=str(resource.get("verb") or ""),
                       namespace=str(resource.get("namespace") or ""),
                       group=str(resource.get("group") or ""),
                       resource=str(resource.get("resource") or ""),
                       subresource=str(resource.get("subresource") or ""),
                       name=str(resource.get("name") or ""))
        other = spec.get("nonResourceAttributes") or {}
        return cls(user, groups, verb=str(other.get("verb") or ""),
                   path=str(other.get("path") or ""), resource_request=False)


def authorize(store: Store, attributes: Attributes) -> Decision:
    if PRIVILEGED_GROUP in attributes.groups:
        return Decision(True)
    errors: list[str] = []
    for source, rules in _rules_for(store, attributes, errors):
        if any(rule_allows(attributes, rule) for rule in rules):
            return Decision(True, f"RBAC: allowed by {source}")
    if not errors:
        return Decision(False)
    shown = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return Decision(False, f"rbac: RBAC: {shown}")  # a denial's reason names its authorizer


def _rules_for(store: Store, attributes: Attributes,
               errors: list[str]) -> Iterator[tuple[str, list[JsonObj]]]:
    """(who granted it, rules) for every binding whose subjects include the user, cluster
    bindings first; a binding whose role is missing adds the lister's error to `errors`."""
    bindings = [(b, "") for b in _sorted(store.iter_objects(CLUSTER_ROLE_BINDINGS))]
    if attributes.namespace:
        bindings += [(b, attributes.namespace)
                     for b in _sorted(store.iter_objects(ROLE_BINDINGS, attributes.namespace))]
    for binding, namespace in bindings:
        subject = next((s for s in binding.get("subjects") or ()
                        if _applies(s, attributes, namespace)), None)
        if subject is None:
            continue
        ref = binding.get("roleRef") or {}
        kind, role_name = str(ref.get("kind", "")), str(ref.get("name", ""))
        role = store.peek(ROLES, namespace, role_name) if kind == "Role" else store.peek(
            CLUSTER_ROLES, "", role_name)
        if role is None:
            errors.append(f'{kind.lower()}.{_RBAC} "{role_name}" not found')
            continue
        name = binding["metadata"]["name"]
        what = "ClusterRoleBinding" if not namespace else "RoleBinding"
        shown = f"{name}/{namespace}" if namespace else name
        yield (f'{what} "{shown}" of {kind} "{role_name}" to '
               f"{_describe(subject, namespace)}", list(role.get("rules") or ()))


def _sorted(objects: Iterator[JsonObj]) -> list[JsonObj]:
    return sorted(objects, key=lambda o: str(o["metadata"]["name"]))


def _applies(subject: JsonObj, attributes: Attributes, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return attributes.user == name
    if kind == "Group":
        return name in attributes.groups
    if kind == "ServiceAccount":
        namespace = str(subject.get("namespace") or binding_namespace)
        return bool(namespace) and attributes.user == f"system:serviceaccount:{namespace}:{name}"
    return False


def _describe(subject: JsonObj, binding_namespace: str) -> str:
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "ServiceAccount":
        name = f"{name}/{subject.get('namespace') or binding_namespace}"
    return f'{kind} "{name}"'


def rule_allows(attributes: Attributes, rule: JsonObj) -> bool:
    """RBAC's RuleAllows: verbs, then API groups, resources and names, or non-resource URLs."""
    verbs = rule.get("verbs") or ()
    if "*" not in verbs and attributes.verb not in verbs:
        return False
    if not attributes.resource_request:
        return any(_url_matches(url, attributes.path) for url in rule.get("nonResourceURLs") or ())
    groups = rule.get("apiGroups") or ()
    if "*" not in groups and attributes.group not in groups:
        return False
    names = rule.get("resourceNames") or ()
    return _resource_matches(rule.get("resources") or (), attributes) and (
        not names or attributes.name in names)


def _resource_matches(resources: Any, attributes: Attributes) -> bool:
    sub = attributes.subresource
    combined = f"{attributes.resource}/{sub}" if sub else attributes.resource
    return any(r in ("*", combined) or (bool(sub) and r == f"*/{sub}") for r in resources)


def _url_matches(rule_url: str, path: str) -> bool:
    if rule_url in ("*", path):
        return True
    return rule_url.endswith("*") and path.startswith(rule_url[:-1])
