"""The Kubernetes REST surface over the store: URL parsing, verbs, content negotiation, watch
streaming. `jobset_infra.sim.server.Sim` mounts `ApiHandler.handle` for every path.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import yaml
from aiohttp import web

from jobset_infra.sim import discovery, openapi, tables
from jobset_infra.sim.errors import (
    StatusError,
    bad_request,
    gone,
    internal,
    method_not_allowed,
    not_acceptable,
    unsupported_media_type,
)
from jobset_infra.sim.hooks import ApiRequest, InterceptLike, RequestHook, Stats
from jobset_infra.sim.resources import GVR
from jobset_infra.sim.store import Store

JsonObj = dict[str, Any]
_log = logging.getLogger(__name__)
JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
_VERB_BY_METHOD = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def json_response(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=dumps(obj), status=status, content_type=JSON)


def error_response(error: StatusError) -> web.Response:
    response = json_response(error.status, error.code)
    if error.retry_after is not None:
        response.headers["Retry-After"] = str(error.retry_after)
    return response


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
    return ApiRequest(verb, group, version, resource, namespace, name, sub, method, path)


async def read_body(request: web.Request) -> Any:
    content_type = request.headers.get("Content-Type", JSON).split(";")[0].strip()
    raw = await request.read()
    if content_type.startswith(PROTOBUF) or content_type == "application/cbor":
        raise unsupported_media_type(content_type)
    if not raw:
        return None
    try:
        if "yaml" in content_type:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise bad_request(f"error decoding the request body: {exc}") from None


def _check_accept(accept: str) -> None:
    kinds = [a.split(";")[0].strip() for a in accept.split(",") if a.strip()]
    usable = ("application/json", "application/yaml", "*/*", "application/*", "")
    if kinds and not any(k in usable for k in kinds):
        raise not_acceptable(accept)


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
        self.streams: set[asyncio.Task[Any]] = set()

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
            if api.verb == "discovery" and api.path in ("/healthz", "/readyz", "/livez"):
                return web.Response(text="ok")
            if api.verb == "discovery" and api.path.rstrip("/") in ("/api", "/apis") and \
                    discovery.wants_aggregated(request.headers.get("Accept", "")):
                body = discovery.aggregated(self.store.registry, core=api.path.startswith("/api/")
                                            or api.path.rstrip("/") == "/api")
                return web.Response(body=dumps(body), headers={
                    "Content-Type": discovery.AGGREGATED})
            if api.verb == "discovery":
                return json_response(self._discovery(api))
            if api.verb == "watch":
                return await self._watch(request, api, intercept)
            return await self._serve(request, api)
        except StatusError as error:
            return error_response(error)
        except Exception as exc:  # a bug here must still answer like an API server
            _log.exception("sim: %s %s failed", request.method, request.path)
            return error_response(internal(f"{type(exc).__name__}: {exc}"))

    def _authorized(self, request: web.Request) -> bool:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and token.strip() == self.token

    def _discovery(self, api: ApiRequest) -> JsonObj:
        path = api.path.rstrip("/") or "/"
        registry = self.store.registry
        if path == "/version":
            return discovery.version_info()
        if path == "/api":
            return discovery.api_versions(self.server_address())
        if path == "/apis":
            return discovery.api_group_list(registry)
        if path == "/openapi/v3":
            return openapi.index(registry)
        if path.startswith("/openapi/v3/"):
            rest = [*path.removeprefix("/openapi/v3/").split("/"), "", ""]
            group, version = ("", rest[1]) if rest[0] == "api" else (rest[1], rest[2])
            return openapi.document(registry, group, version)
        if path.startswith("/apis/") and not api.version:
            return discovery.api_group(registry, api.group)
        if path.startswith(("/api/", "/apis/")):
            return discovery.resource_list(registry, api.group, api.version)
        raise discovery.not_found()

    async def _serve(self, request: web.Request, api: ApiRequest) -> web.Response:
        gvr = GVR(api.group, api.version, api.resource)
        store, query = self.store, request.query
        dry_run = query.get("dryRun") == "All"
        if api.verb == "get":
            obj = store.get(gvr, api.name or "", api.namespace)
            return self._render(request, gvr, [obj], single=True)
        if api.verb == "list":
            page = store.list(gvr, api.namespace, label_selector=query.get("labelSelector"),
                              field_selector=query.get("fieldSelector"),
                              limit=int(query["limit"]) if query.get("limit") else None,
                              continue_token=query.get("continue") or None)
            return self._render(request, gvr, page.items, page=page)
        body = await read_body(request)
        if (api.verb == "create" and api.subresource == "binding") or (
                api.verb == "create" and api.resource == "pods" and api.name):
            return json_response(self._bind(api, body), 201)
        manager = query.get("fieldManager") or _agent_manager(request)
        warnings = self._field_validation(gvr, body, query.get("fieldValidation"))
        if api.verb == "create":
            obj = store.create(gvr, _object(body), api.namespace, field_manager=manager,
                               dry_run=dry_run)
            return _warn(json_response(obj, 201), warnings)
        if api.verb == "update":
            obj = _object(body)
            if obj.get("metadata", {}).get("name", api.name) != api.name:
                raise bad_request("the name of the object does not match the name on the URL")
            obj.setdefault("metadata", {})["name"] = api.name
            obj = store.update(gvr, obj, api.namespace, field_manager=manager,
                               subresource=api.subresource, dry_run=dry_run)
            return _warn(json_response(obj), warnings)
        if api.verb == "patch":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            obj = store.patch(gvr, api.name or "", api.namespace, content_type, body,
                              subresource=api.subresource,
                              field_manager=query.get("fieldManager") if "apply" in content_type
                              else manager,
                              force=query.get("force") in ("true", "1"), dry_run=dry_run)
            return json_response(obj)
        if api.verb in ("delete", "deletecollection"):
            return self._delete(api, gvr, body or {}, query)
        raise method_not_allowed(f"{request.method} is not supported")

    def _field_validation(self, gvr: GVR, body: Any, mode: str | None) -> list[str]:
        """Unknown fields of a custom resource body: 400 under Strict (kubectl's default),
        Warning headers under Warn, silently pruned under Ignore."""
        schema = self.store.schemas.get(gvr)
        if schema is None or mode not in ("Strict", "Warn") or not isinstance(body, dict):
            return []
        unknown = [f'unknown field "{path}"' for path in schema.pruned_fields(body)]
        if unknown and mode == "Strict":
            raise bad_request("strict decoding error: " + ", ".join(unknown))
        return unknown

    def _delete(self, api: ApiRequest, gvr: GVR, options: JsonObj,
                query: Mapping[str, str]) -> web.Response:
        propagation = options.get("propagationPolicy") or query.get("propagationPolicy")
        if propagation is None and options.get("orphanDependents") is not None:
            propagation = "Orphan" if options["orphanDependents"] else "Background"
        if api.verb == "deletecollection":
            items = self.store.delete_collection(
                gvr, api.namespace, label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"), propagation=propagation)
            info = self.store.info(gvr)
            return json_response({"kind": info.list_kind, "apiVersion": gvr.api_version,
                                  "metadata": {}, "items": items})
        obj, done = self.store.delete(
            gvr, api.name or "", api.namespace, propagation=propagation,
            preconditions=options.get("preconditions"),
            dry_run=query.get("dryRun") == "All" or options.get("dryRun") == ["All"])
        if not done:
            return json_response(obj, 202)
        meta = obj["metadata"]
        return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Success", "details": {
                                  "name": meta["name"], "group": gvr.group,
                                  "kind": gvr.resource, "uid": meta["uid"]}})

    def _bind(self, api: ApiRequest, body: Any) -> JsonObj:
        binding = _object(body)
        target = (binding.get("target") or {}).get("name")
        if not target:
            raise bad_request("a binding needs target.name")
        pod = self.store.get(GVR("", "v1", "pods"), api.name or "", api.namespace)
        if pod.get("spec", {}).get("nodeName"):
            raise StatusError(409, "Conflict", f'Operation cannot be fulfilled on pods/binding '
                              f'"{api.name}": pod {api.name} is already assigned to node '
                              f'"{pod["spec"]["nodeName"]}"')
        bound = dict(pod) | {"spec": dict(pod["spec"]) | {"nodeName": target}}
        self.store.replace(self.store.info(GVR("", "v1", "pods")), pod, bound)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "code": 201}

    def _render(self, request: web.Request, gvr: GVR, items: list[JsonObj], *,
                single: bool = False, page: Any = None) -> web.Response:
        info = self.store.info(gvr)
        if "as=Table" in request.headers.get("Accept", ""):
            rv = str(self.store.resource_version)
            return json_response(tables.table(info, items, rv,
                                              request.query.get("includeObject", "Metadata")))
        if single:
            return json_response(items[0])
        meta: JsonObj = {"resourceVersion": page.resource_version}
        if page.continue_token:
            meta["continue"] = page.continue_token
            meta["remainingItemCount"] = page.remaining
        return json_response({"kind": info.list_kind, "apiVersion": gvr.api_version,
                              "metadata": meta, "items": items})

    async def _watch(self, request: web.Request, api: ApiRequest,
                     intercept: InterceptLike | None) -> web.StreamResponse:
        gvr, query = GVR(api.group, api.version, api.resource), request.query
        send_initial = query.get("sendInitialEvents") in ("true", "1")
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        _check_watch_list(send_initial, bookmarks, query.get("resourceVersionMatch"))
        timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
        if intercept is not None and intercept.drop_after is not None:
            timeout = min(timeout or intercept.drop_after, intercept.drop_after)
        response = web.StreamResponse(headers={"Content-Type": JSON})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            stream = self.store.watch(
                gvr, api.namespace, query.get("resourceVersion"),
                label_selector=query.get("labelSelector"),
                field_selector=query.get("fieldSelector"), send_initial_events=send_initial,
                bookmark_interval=self.bookmark_interval if bookmarks else None)
        except StatusError as error:
            if error.code != 410:
                raise
            await _send(response, "ERROR", error.status)
            return response
        if intercept is not None and intercept.expire:
            stream.fail(gone("too old resource version: injected (forced by a fault)"))
        as_table = "as=Table" in request.headers.get("Accept", "")
        include = query.get("includeObject", "Metadata")
        await self._pump(response, stream, timeout, bookmarks,
                         self._tabulate(gvr, include) if as_table else None)
        return response

    def _tabulate(self, gvr: GVR, include: str) -> Callable[[JsonObj], JsonObj]:
        info = self.store.info(gvr)
        return lambda obj: tables.table(info, [obj], obj["metadata"]["resourceVersion"], include)

    async def _pump(self, response: web.StreamResponse, stream: Any, timeout: float | None,
                    bookmarks: bool, tabulate: Callable[[JsonObj], JsonObj] | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    break
                try:
                    kind, obj = await asyncio.wait_for(anext(stream), remaining)
                except (StopAsyncIteration, TimeoutError):
                    break
                if kind == "BOOKMARK" and not bookmarks:
                    continue
                if tabulate is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
                    obj = tabulate(obj)
                await _send(response, kind, obj)
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            stream.close()
            with contextlib.suppress(ConnectionResetError, RuntimeError):
                await response.write_eof()


async def _send(response: web.StreamResponse, kind: str, obj: JsonObj) -> None:
    await response.write(dumps({"type": kind, "object": obj}) + b"\n")


def _check_watch_list(send_initial: bool, bookmarks: bool, rv_match: str | None) -> None:
    if not send_initial:
        return
    causes = []
    if not bookmarks:
        causes.append({"reason": "FieldValueForbidden", "field": "allowWatchBookmarks",
                       "message": "Forbidden: sendInitialEvents requires setting "
                                  "allowWatchBookmarks to true"})
    if rv_match != "NotOlderThan":
        causes.append({"reason": "FieldValueForbidden", "field": "resourceVersionMatch",
                       "message": "Forbidden: sendInitialEvents requires setting "
                                  "resourceVersionMatch to NotOlderThan"})
    if causes:
        from jobset_infra.sim.errors import invalid

        raise invalid("meta.k8s.io", "ListOptions", "", causes)


def _warn(response: web.Response, warnings: list[str]) -> web.Response:
    for warning in warnings:
        text = warning.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{text}"')
    return response


def _agent_manager(request: web.Request) -> str:
    """The default field manager: the User-Agent up to its first "/", as Kubernetes derives it."""
    agent = request.headers.get("User-Agent", "")
    return agent.split("/", 1)[0][:128] or "unknown"


def _object(body: Any) -> JsonObj:
    if not isinstance(body, dict):
        raise bad_request("the request body must be an object")
    return body

