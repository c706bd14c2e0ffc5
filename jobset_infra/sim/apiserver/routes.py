"""The Kubernetes REST surface over the store: URL parsing, authentication, request hooks,
content negotiation and discovery; resource verbs live in `verbs`, watches in `streaming`.
`jobset_infra.sim.apiserver.server.Sim` mounts `ApiHandler.handle` for every path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from jobset_infra.sim.apiserver import (
    bodies,
    decode_errors,
    discovery,
    openapi,
    patch,
    reviews,
)
from jobset_infra.sim.apiserver.errors import (
    StatusError,
    internal,
    method_not_allowed,
    not_acceptable,
    unsupported_media_type,
)
from jobset_infra.sim.apiserver.hooks import ApiRequest, InterceptLike, RequestHook, Stats
from jobset_infra.sim.apiserver.resources import GVR, ResourceInfo
from jobset_infra.sim.apiserver.responses import (
    JSON,
    dumps,
    error_response,
    json_response,
    with_warnings,
)
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.apiserver.streaming import serve_watch
from jobset_infra.sim.apiserver.tokens import Tokens
from jobset_infra.sim.apiserver.updates import decoded_body
from jobset_infra.sim.apiserver.verbs import VERBS, Call, as_object, field_validation

JsonObj = dict[str, Any]
_log = logging.getLogger(__name__)
# Kubernetes' protobuf encoding: no client of the sim needs it (ours, kubectl's apply and the
# official Python client send JSON), so a protobuf body is refused with 415 (docs/sim.md).
PROTOBUF = "application/vnd.kubernetes.protobuf"
_VERB_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch"}
_HEALTH = ("/healthz", "/readyz", "/livez")


def parse_request(method: str, path: str, query: Mapping[str, str]) -> ApiRequest:
    """Name a request the way Kubernetes' RequestInfo does ("discovery" for non-resource URLs)."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[1:]
    elif parts[:1] == ["apis"] and len(parts) >= 2:
        group, rest = parts[1], parts[2:]
    else:
        return ApiRequest("discovery", method=method, path=path)
    if len(rest) < 2:
        return ApiRequest("discovery", group=group, version=rest[0] if rest else "",
                          method=method, path=path)
    version, rest = rest[0], rest[1:]
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and not (
            len(rest) == 3 and rest[2] in ("status", "finalize")):
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if name is None:
        watching = query.get("watch") in ("true", "1")
        verb = {"GET": "watch" if watching else "list", "POST": "create",
                "DELETE": "deletecollection"}.get(method, method.lower())
    else:
        verb = {"GET": "get", "DELETE": "delete"}.get(method) or _VERB_BY_METHOD.get(
            method, method.lower())
    return ApiRequest(verb, group, version, resource, namespace, name, sub, method, path,
                      dry_run=query.get("dryRun") == "All")


# What kube-apiserver decodes (and names in a 415); the sim decodes the first two.
BODY_TYPES = ("application/json", "application/yaml", PROTOBUF)
PATCH_TYPES = (patch.JSON_PATCH, patch.MERGE_PATCH, patch.STRATEGIC_PATCH, patch.APPLY_PATCH,
               patch.APPLY_PATCH_CBOR)
CUSTOM_PATCH_TYPES = (patch.JSON_PATCH, patch.MERGE_PATCH, patch.APPLY_PATCH)


def check_patch_type(content_type: str, custom: bool) -> None:
    """415 for a PATCH whose Content-Type is no patch type, or one the resource does not take
    (strategic merge for a custom resource)."""
    if content_type not in PATCH_TYPES:
        raise unsupported_media_type()
    if custom and content_type not in CUSTOM_PATCH_TYPES:
        raise unsupported_media_type(CUSTOM_PATCH_TYPES)


async def read_body(request: web.Request, kind: str | None = None,
                    expected: str = "Object", custom: bool = False) -> Any:
    """JSON or YAML within the API server's bounds (`bodies`); any other type is 415.
    `expected` is the type the body should be, named in refusals; a `custom` resource's object
    must name its kind (the unstructured decoder finds no kind to default to)."""
    content_type = request.headers.get("Content-Type", JSON).split(";")[0].strip()
    raw = await bodies.read_capped(request)
    if content_type not in (*BODY_TYPES[:2], *PATCH_TYPES):  # text/plain, CBOR, protobuf
        raise unsupported_media_type(BODY_TYPES)
    an_object = kind is not None or custom  # a create or update: the body is the object
    if not raw:
        if an_object:
            raise decode_errors.unrecognized(expected, "couldn't get version/kind; json parse "
                                             "error: unexpected end of JSON input", raw)
        return None
    body = await bodies.decode(raw, content_type, kind or expected)
    if body is None and an_object:
        return {}  # JSON null decodes to the zero object (validation then names what is missing)
    if kind is not None and not isinstance(body, dict):
        raise decode_errors.not_an_object(kind, raw, body)
    if custom and isinstance(body, dict) and not body.get("kind"):
        text = raw.decode(errors="replace")
        raise decode_errors.unrecognized(expected, f"Object 'Kind' is missing in '{text}'", raw)
    return body


def _accepted(accept: str) -> list[str]:
    return [a.split(";")[0].strip() for a in accept.split(",") if a.strip()]


def _check_accept(accept: str) -> None:
    kinds = _accepted(accept)
    usable = ("application/json", "application/yaml", "*/*", "application/*", "")
    if kinds and not any(k in usable for k in kinds):
        raise not_acceptable(accept)


def _bearer(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _token_request(api: ApiRequest) -> bool:
    return (api.group, api.resource, api.subresource) == ("", "serviceaccounts", "token")


class ApiHandler:
    """Serves one Store over HTTP; hooks run before every request, `stats` counts them."""

    def __init__(
        self,
        store: Store,
        stats: Stats,
        hooks: list[RequestHook],
        *,
        latency: float = 0.0,
        bookmark_interval: float = 5.0,
        server_address: Callable[[], str] = lambda: "127.0.0.1:0",
        token: str | None = None,
    ) -> None:
        self.store, self.stats, self.hooks = store, stats, hooks
        self.latency, self.bookmark_interval = latency, bookmark_interval
        self.server_address, self.token = server_address, token
        self.tokens = Tokens(token)

    def _intercept(self, request: ApiRequest) -> InterceptLike | None:
        for hook in self.hooks:
            result = hook(request)
            if result is not None:
                return result
        return None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        api = parse_request(request.method, request.path, request.query)
        try:
            if self.token is not None and not self._authorized(request):
                return error_response(StatusError(401, "Unauthorized", "Unauthorized"))
            self.stats.record(api)
            if self.latency:
                await asyncio.sleep(self.latency)
            intercept = self._intercept(api)
            if intercept is not None and intercept.delay:
                await asyncio.sleep(intercept.delay)
            if intercept is not None and intercept.error is not None:
                return error_response(intercept.error)
            _check_accept(request.headers.get("Accept", ""))
            return await self._dispatch(request, api, intercept)
        except StatusError as error:
            return error_response(error)
        except ConnectionResetError:
            # The client went away mid-body (a crashed controller replica): the answer reaches
            # nobody, and it is no fault of the server's, so nothing is logged as one.
            return error_response(internal("the client closed the connection mid-request"))
        except Exception as exc:  # a bug here must still answer like an API server
            _log.exception("sim: %s %s failed", request.method, request.path)
            return error_response(internal(f"{type(exc).__name__}: {exc}"))

    async def _dispatch(self, request: web.Request, api: ApiRequest,
                        intercept: InterceptLike | None) -> web.StreamResponse:
        if api.verb == "discovery":
            return self._discovery(request, api)
        if api.verb == "watch":
            return await serve_watch(request, api, self.store, intercept,
                                     self.bookmark_interval)
        info = self.store.registry.get(GVR(api.group, api.version, api.resource))
        if info is not None and (info.create_only or _token_request(api)):
            return await self._review(request, api, info)
        handler = VERBS.get(api.verb)
        if handler is None:
            raise method_not_allowed(f"{request.method} is not supported")
        if api.verb == "patch":
            check_patch_type(request.headers.get("Content-Type", "").split(";")[0].strip(),
                             custom=info is not None and info.crd is not None)
        custom = info is not None and info.crd is not None and api.verb in ("create", "update")
        body = None if api.verb in ("get", "list") else await read_body(
            request, self._builtin_kind(api), self._kind(api), custom)
        return await handler(Call(self.store, api, request.query, request.headers, body))

    def _kind(self, api: ApiRequest) -> str:
        info = self.store.registry.get(GVR(api.group, api.version, api.resource or ""))
        return info.kind if info is not None else "Object"

    async def _review(self, request: web.Request, api: ApiRequest,
                      info: ResourceInfo) -> web.Response:
        """The review kinds and TokenRequest: answered, never stored (`reviews`)."""
        if api.verb != "create" or (api.name and not _token_request(api)):
            raise method_not_allowed()
        body = decoded_body(as_object(await read_body(request, self._builtin_kind(api))))
        call = Call(self.store, api, request.query, request.headers, body)
        ctx = reviews.Context(self.store, self.tokens, reviews.who_sent(
            self.tokens, self.store, _bearer(request)), call.field_manager)
        if _token_request(api):
            return json_response(reviews.token_request(
                body, api.namespace or "", api.name or "", ctx), 201)
        body, warnings = field_validation(call)
        review = reviews.answer(info, as_object(body), api.namespace, ctx)
        return with_warnings(json_response(review, 201), warnings)

    def _builtin_kind(self, api: ApiRequest) -> str | None:
        """The built-in kind this create or update's body must be (None: a custom resource's,
        or no body), named when the body is not an object."""
        info = self.store.registry.get(GVR(api.group, api.version, api.resource))
        if info is None or info.crd is not None or api.verb not in ("create", "update"):
            return None
        if _token_request(api):
            return "TokenRequest"
        return "Binding" if api.subresource == "binding" else info.kind

    def _authorized(self, request: web.Request) -> bool:
        token = _bearer(request)
        return token is not None and self.tokens.known(token, self.store.clock.now())

    def _discovery(self, request: web.Request, api: ApiRequest) -> web.Response:
        path = api.path.rstrip("/") or "/"
        registry = self.store.registry
        if path in _HEALTH:
            return web.Response(text="ok")
        if path in ("/api", "/apis") and discovery.wants_aggregated(
                request.headers.get("Accept", "")):
            body = discovery.aggregated(registry, core=path == "/api")
            return web.Response(body=dumps(body),
                                headers={"Content-Type": discovery.AGGREGATED})
        if path == "/version":
            return json_response(discovery.version_info())
        if path == "/api":
            return json_response(discovery.api_versions(self.server_address()))
        if path == "/apis":
            return json_response(discovery.api_group_list(registry))
        if path == "/openapi/v3":
            return json_response(openapi.index(registry))
        if path.startswith("/openapi/v3/"):
            rest = [*path.removeprefix("/openapi/v3/").split("/"), "", ""]
            group, version = ("", rest[1]) if rest[0] == "api" else (rest[1], rest[2])
            return json_response(openapi.document(registry, group, version))
        if path.startswith("/apis/") and not api.version:
            return json_response(discovery.api_group(registry, api.group))
        if path.startswith(("/api/", "/apis/")):
            return json_response(discovery.resource_list(registry, api.group, api.version))
        raise discovery.not_found()
