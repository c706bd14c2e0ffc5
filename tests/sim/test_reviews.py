"""TokenRequest, TokenReview, SubjectAccessReview and the Self* reviews on the sim, and the RBAC
decisions behind them (the conformance corpus holds the same answers from kube-apiserver)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import pytest

from jobset_infra.sim.apiserver import rbac
from jobset_infra.sim.apiserver.server import Sim

TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SELF_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
SELF_ACCESS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
ACCOUNTS = "/api/v1/namespaces/default/serviceaccounts"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
ADMIN = "s3cret"


@dataclass
class MovingClock:
    at: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))

    def now(self) -> datetime:
        return self.at


@pytest.fixture
def clock() -> MovingClock:
    return MovingClock()


@pytest.fixture
async def http(clock: MovingClock) -> AsyncIterator[aiohttp.ClientSession]:
    async with Sim(token=ADMIN, clock=clock) as sim, aiohttp.ClientSession(
            base_url=sim.url) as session:
        yield session


async def post(http: aiohttp.ClientSession, path: str, body: Any,
               token: str = ADMIN) -> tuple[int, Any]:
    async with http.post(path, data=json.dumps(body), headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"}) as answer:
        return answer.status, await answer.json()


async def token_of(http: aiohttp.ClientSession, account: str, **spec: Any) -> str:
    await post(http, ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                "metadata": {"name": account}})
    code, body = await post(http, f"{ACCOUNTS}/{account}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    assert code == 201, body
    return str(body["status"]["token"])


async def review_token(http: aiohttp.ClientSession, token: str, **spec: Any) -> Any:
    code, body = await post(http, TOKEN_REVIEWS, {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": token, **spec}})
    assert code == 201, body
    return body["status"]


async def test_the_admin_token_is_reviewed_as_the_admin_in_system_masters(
        http: aiohttp.ClientSession) -> None:
    status = await review_token(http, ADMIN)
    assert status["authenticated"] is True
    assert status["user"]["groups"] == ["system:masters", "system:authenticated"]
    assert status["audiences"] == ["https://kubernetes.default.svc.cluster.local"]


@pytest.mark.parametrize(("token", "audiences"), [
    pytest.param("forged", None, id="an unknown token"),
    pytest.param(ADMIN, ["another-audience"], id="the admin token for another audience"),
])
async def test_a_token_the_sim_does_not_know_is_an_invalid_bearer_token(
        http: aiohttp.ClientSession, token: str, audiences: list[str] | None) -> None:
    spec = {"audiences": audiences} if audiences else {}
    status = await review_token(http, token, **spec)
    assert status == {"user": {}, "error": "invalid bearer token"}


async def test_an_issued_token_names_its_service_account_until_the_account_is_deleted(
        http: aiohttp.ClientSession) -> None:
    token = await token_of(http, "scraper")
    user = (await review_token(http, token))["user"]
    assert user["username"] == "system:serviceaccount:default:scraper"
    assert user["groups"] == ["system:serviceaccounts", "system:serviceaccounts:default",
                              "system:authenticated"]
    async with http.delete(f"{ACCOUNTS}/scraper",
                           headers={"Authorization": f"Bearer {ADMIN}"}) as answer:
        assert (await answer.json())["kind"] == "ServiceAccount"  # ReturnDeletedObject
    assert (await review_token(http, token))["error"] == (
        '[invalid bearer token, serviceaccounts "scraper" not found]')


async def test_an_issued_token_expires_and_then_opens_nothing(
        http: aiohttp.ClientSession, clock: MovingClock) -> None:
    token = await token_of(http, "short", expirationSeconds=600)
    async with http.get("/api/v1/namespaces", headers={
            "Authorization": f"Bearer {token}"}) as answer:
        assert answer.status == 200
    clock.at += timedelta(seconds=601)
    assert (await review_token(http, token)).get("authenticated") is None
    async with http.get("/api/v1/namespaces", headers={
            "Authorization": f"Bearer {token}"}) as answer:
        assert answer.status == 401


async def test_a_token_for_its_own_audience_is_reviewed_for_that_audience_only(
        http: aiohttp.ClientSession) -> None:
    token = await token_of(http, "aud", audiences=["metrics"])
    assert (await review_token(http, token, audiences=["metrics", "x"]))["audiences"] == [
        "metrics"]
    assert (await review_token(http, token))["error"] == "invalid bearer token"


async def test_a_token_shorter_than_ten_minutes_is_refused_naming_the_field(
        http: aiohttp.ClientSession) -> None:
    await token_of(http, "quick")
    code, body = await post(http, f"{ACCOUNTS}/quick/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 60}})
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "spec.expirationSeconds"


async def test_self_reviews_answer_for_the_account_whose_token_was_sent(
        http: aiohttp.ClientSession) -> None:
    token = await token_of(http, "me")
    code, body = await post(http, SELF_REVIEWS, {
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, token)
    assert code == 201
    assert body["status"]["userInfo"]["username"] == "system:serviceaccount:default:me"
    spec = {"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": spec}
    assert (await post(http, SELF_ACCESS, review, token))[1]["status"] == {"allowed": False}
    assert (await post(http, SELF_ACCESS, review))[1]["status"] == {"allowed": True}


async def test_metrics_access_follows_a_cluster_role_binding(http: aiohttp.ClientSession) -> None:
    """What a secured metrics endpoint asks: 403 for the account until it is bound."""
    token = await token_of(http, "prometheus")
    user = (await review_token(http, token))["user"]
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": user["username"], "groups": user["groups"],
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}
    assert (await post(http, ACCESS_REVIEWS, review))[1]["status"] == {"allowed": False}
    await post(http, f"{RBAC}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "metrics-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    await post(http, f"{RBAC}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "prometheus"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "default"}]})
    status = (await post(http, ACCESS_REVIEWS, review))[1]["status"]
    assert status == {"allowed": True, "reason": (
        'RBAC: allowed by ClusterRoleBinding "prometheus" of ClusterRole "metrics-reader" to '
        'ServiceAccount "prometheus/default"')}


async def test_reviews_are_created_only(http: aiohttp.ClientSession) -> None:
    async with http.get(ACCESS_REVIEWS, headers={"Authorization": f"Bearer {ADMIN}"}) as answer:
        assert answer.status == 405
    async with http.get("/apis/authorization.k8s.io/v1",
                        headers={"Authorization": f"Bearer {ADMIN}"}) as answer:
        verbs = {r["name"]: r["verbs"] for r in (await answer.json())["resources"]}
    assert verbs["subjectaccessreviews"] == ["create"]


def _attributes(**kw: Any) -> rbac.Attributes:
    return rbac.Attributes(**{"user": "u", "groups": (), "verb": "get"} | kw)


RULES = [
    ("a wildcard verb, group and resource allow anything",
     {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}, _attributes(resource="x"), True),
    ("a subresource needs its own entry", {"verbs": ["get"], "apiGroups": [""],
     "resources": ["pods"]}, _attributes(resource="pods", subresource="log"), False),
    ("*/scale matches the scale of any resource", {"verbs": ["update"], "apiGroups": ["apps"],
     "resources": ["*/scale"]},
     _attributes(verb="update", group="apps", resource="deployments", subresource="scale"), True),
    ("resourceNames limit a rule to those objects", {"verbs": ["get"], "apiGroups": [""],
     "resources": ["configmaps"], "resourceNames": ["a"]},
     _attributes(resource="configmaps", name="b"), False),
    ("a URL rule ending in * matches its prefix", {"verbs": ["get"],
     "nonResourceURLs": ["/metrics/*"]},
     _attributes(path="/metrics/x", resource_request=False), True),
    ("a URL rule does not match resources", {"verbs": ["get"], "nonResourceURLs": ["*"]},
     _attributes(resource="pods"), False),
    ("another API group does not match", {"verbs": ["get"], "apiGroups": ["batch"],
     "resources": ["jobs"]}, _attributes(group="apps", resource="jobs"), False),
]


@pytest.mark.parametrize(("rule", "attributes", "allowed"), [r[1:] for r in RULES],
                         ids=[r[0] for r in RULES])
def test_rule_allows(rule: dict[str, Any], attributes: rbac.Attributes, allowed: bool) -> None:
    assert rbac.rule_allows(attributes, rule) is allowed
