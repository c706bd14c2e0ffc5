"""The review kinds, answered as kube-apiserver 1.37 answers them and never stored: TokenReview
and SelfSubjectReview (authentication.k8s.io/v1); SubjectAccessReview, LocalSubjectAccessReview
and SelfSubjectAccessReview (authorization.k8s.io/v1, decided by `rbac`). A review is 201 with
the request's spec and its status filled in; any other method is 405.

TokenRequest (POST serviceaccounts/<name>/token) issues a ServiceAccount token (`tokens`).
A TokenReview authenticates the sim's admin token (`Sim(token=...)`) as ADMIN_USER and an issued
token as its ServiceAccount, for the API audience or the token's; any other token is "invalid
bearer token". The Self* reviews answer for the requester: the ServiceAccount whose token it
sent, else the admin (the sim serves every other request as its admin).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from jobset_infra.sim.apiserver import managed_fields, rbac
from jobset_infra.sim.apiserver.errors import bad_request, field_cause, invalid
from jobset_infra.sim.apiserver.resources import GVR, ResourceInfo
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.apiserver.tokens import ADMIN_USER, API_AUDIENCE, Tokens, account_user
from jobset_infra.sim.apiserver.updates import namespace_of, new_uid

JsonObj = dict[str, Any]
SERVICE_ACCOUNTS = GVR("", "v1", "serviceaccounts")
DEFAULT_EXPIRATION = 3600
_EXACTLY_ONE = "exactly one of nonResourceAttributes or resourceAttributes must be specified"


@dataclass(frozen=True)
class Context:
    """What a review is answered from besides its body."""

    store: Store
    tokens: Tokens
    requester: JsonObj  # the user who sent it
    manager: str

    @property
    def now(self) -> str:
        return self.store.now()


def answer(info: ResourceInfo, body: JsonObj, namespace: str | None, ctx: Context) -> JsonObj:
    """The created review: `body` with its status, and the Update entry of its manager."""
    kind, api_version, now = info.kind, info.gvr.api_version, ctx.now
    if kind == "SelfSubjectReview":
        return {"kind": kind, "apiVersion": api_version, "metadata": {"creationTimestamp": now},
                "status": {"userInfo": dict(ctx.requester)}}
    meta = {k: v for k, v in (body.get("metadata") or {}).items() if k != "namespace"}
    if info.namespaced:
        meta["namespace"] = namespace_of(info, namespace, body)
    review: JsonObj = {"kind": kind, "apiVersion": api_version, "metadata": meta,
                       "spec": body.get("spec") or {}}
    meta["managedFields"] = _owned(review, ctx.manager, now)
    if kind == "TokenReview":
        review["status"] = _token_status(review["spec"], ctx)
        return review
    _check_access_review(info, review)
    spec = review["spec"]
    if kind == "SelfSubjectAccessReview":
        spec = spec | {"user": ctx.requester["username"], "groups": ctx.requester["groups"]}
    decision = rbac.authorize(ctx.store, rbac.Attributes.of_spec(spec))
    review["status"] = {"allowed": decision.allowed} | (
        {"reason": decision.reason} if decision.reason else {})
    return review


def _owned(review: JsonObj, manager: str, now: str, subresource: str | None = None
           ) -> list[JsonObj]:
    """The create's Update entry; an empty metadata owns nothing, as in structured-merge-diff."""
    entry = managed_fields.record_update(None, review, manager=manager, now=now,
                                         api_version=review["apiVersion"],
                                         subresource=subresource)[0]
    if entry["fieldsV1"].get("f:metadata") == {}:
        del entry["fieldsV1"]["f:metadata"]
    return [entry]


def who_sent(tokens: Tokens, store: Store, token: str | None) -> JsonObj:
    """The requester: the ServiceAccount of an issued token, else the sim's admin."""
    issued = tokens.issued(token or "", store.clock.now())
    return account_user(issued) if issued is not None else dict(ADMIN_USER)


def _token_status(spec: JsonObj, ctx: Context) -> JsonObj:
    given = spec.get("token")
    if not isinstance(given, str) or not given:
        raise bad_request("token is required for TokenReview in authentication")
    wanted = [str(a) for a in spec.get("audiences") or [API_AUDIENCE]]
    if ctx.tokens.is_admin(given) and API_AUDIENCE in wanted:
        return {"authenticated": True, "user": dict(ADMIN_USER), "audiences": [API_AUDIENCE]}
    issued = ctx.tokens.issued(given, ctx.store.clock.now())
    audiences = [a for a in wanted if issued is not None and a in issued.audiences]
    if issued is None or not audiences:
        return {"user": {}, "error": "invalid bearer token"}
    account = ctx.store.peek(SERVICE_ACCOUNTS, issued.namespace, issued.name)
    why = None
    if account is None:
        why = f'serviceaccounts "{issued.name}" not found'
    elif account["metadata"]["uid"] != issued.uid:
        why = (f"service account UID ({account['metadata']['uid']}) does not match claim "
               f"({issued.uid})")
    if why is not None:
        return {"user": {}, "error": f"[invalid bearer token, {why}]"}
    return {"authenticated": True, "user": account_user(issued), "audiences": audiences}


def token_request(body: JsonObj, namespace: str, name: str, ctx: Context) -> JsonObj:
    """POST serviceaccounts/<name>/token: a token of that ServiceAccount (404 without it)."""
    account = ctx.store.get(SERVICE_ACCOUNTS, name, namespace)
    spec = dict(body.get("spec") or {})
    spec.setdefault("expirationSeconds", DEFAULT_EXPIRATION)
    seconds = spec["expirationSeconds"]
    if not isinstance(seconds, int) or isinstance(seconds, bool) or seconds < 600 \
            or seconds > 2**32:
        words = "less than 10 minutes" if isinstance(seconds, int) and seconds < 600 \
            else "larger than 2^32 seconds"
        raise invalid("authentication.k8s.io", "TokenRequest", "", [field_cause(
            "FieldValueInvalid", "spec.expirationSeconds",
            f"Invalid value: {json.dumps(seconds)}: may not specify a duration {words}")])
    owned_spec = dict(spec)
    spec["audiences"] = [str(a) for a in spec.get("audiences") or [API_AUDIENCE]]
    spec.setdefault("boundObjectRef", None)
    now = ctx.store.clock.now()
    expires = now + timedelta(seconds=seconds)
    token = ctx.tokens.issue(account, tuple(spec["audiences"]), expires, new_uid(ctx.store.rng))
    review: JsonObj = {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                       "metadata": {"name": name, "namespace": namespace},
                       "spec": owned_spec}
    meta = review["metadata"]
    meta["managedFields"] = _owned(review, ctx.manager, ctx.now, "token")
    meta.update(uid=new_uid(ctx.store.rng), creationTimestamp=ctx.now)
    review["spec"] = spec
    review["status"] = {"token": token,
                        "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return review


def _go_value(value: Any) -> str:
    """How field.Invalid prints a value: JSON, Go field names for the attribute structs."""
    if isinstance(value, dict):
        return json.dumps({k[:1].upper() + k[1:]: value.get(k, "") for k in ("path", "verb")},
                          separators=(",", ":"))
    return json.dumps(value)


def _check_access_review(info: ResourceInfo, review: JsonObj) -> None:
    """ValidateSubjectAccessReview and its Local and Self variants, in the server's order."""
    spec, meta = review["spec"], review["metadata"]
    resource, other = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes = []
    if (resource is None) == (other is None):
        causes.append(field_cause("FieldValueInvalid", "spec",
                                  f"Invalid value: {_go_value(other)}: {_EXACTLY_ONE}"))
    if info.kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        causes.append(field_cause("FieldValueInvalid", "spec.user", 'Invalid value: "": at '
                                  "least one of user or group must be specified"))
    local = info.kind == "LocalSubjectAccessReview"
    extra = {k: v for k, v in meta.items() if k not in ("managedFields", "namespace")
             or (k == "namespace" and not local)}
    if extra:
        shown = json.dumps(meta, separators=(",", ":"))
        causes.append(field_cause("FieldValueInvalid", "metadata", f"Invalid value: {shown}: "
                                  f"must be empty{' except for namespace' if local else ''}"))
    if local and isinstance(resource, dict) and resource.get("namespace") != meta.get("namespace"):
        causes.append(field_cause(
            "FieldValueInvalid", "spec.resourceAttributes.namespace",
            f"Invalid value: {json.dumps(resource.get('namespace') or '')}: "
            "must match metadata.namespace"))
    if local and other is not None:
        causes.append(field_cause("FieldValueInvalid", "spec.nonResourceAttributes",
                                  f"Invalid value: {_go_value(other)}: disallowed on this kind "
                                  "of request"))
    if causes:
        raise invalid(info.gvr.group, "", "", causes)
