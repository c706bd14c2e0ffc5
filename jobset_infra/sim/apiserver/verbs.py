"""The non-watch resource verbs over HTTP: each takes a `Call` (the parsed request) and returns
the response a real API server gives, dispatched through `VERBS`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from jobset_infra.sim.apiserver import field_validation as fields
from jobset_infra.sim.apiserver import list_options, pod_updates, tables, type_meta
from jobset_infra.sim.apiserver.errors import (
    StatusError,
    bad_request,
    field_cause,
    invalid,
    method_not_allowed,
    name_mismatch,
    not_found_resource,
)
from jobset_infra.sim.apiserver.hooks import ApiRequest
from jobset_infra.sim.apiserver.listing import ListResult, check_list_version
from jobset_infra.sim.apiserver.patch import STRATEGIC_PATCH
from jobset_infra.sim.apiserver.resources import GVR, ResourceInfo
from jobset_infra.sim.apiserver.responses import json_response, number, with_warnings
from jobset_infra.sim.apiserver.store import Store
from jobset_infra.sim.apiserver.strategies import RETURNS_DELETED

JsonObj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Call:
    """One resource request, parsed: what the verb handlers need and nothing else."""

    store: Store
    api: ApiRequest
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any

    @property
    def gvr(self) -> GVR:
        return GVR(self.api.group, self.api.version, self.api.resource)

    @property
    def dry_run(self) -> bool:
        """`dryRun=All`; any other value is 422 on the verb's options, as the server checks."""
        values = [v for k, v in self.query.items() if k == "dryRun"]
        wrong = [v for v in values if v != "All"]
        if wrong:
            options = {"create": "CreateOptions", "update": "UpdateOptions",
                       "patch": "PatchOptions"}.get(self.api.verb, "DeleteOptions")
            shown = "[" + ", ".join(f'"{v}"' for v in wrong) + "]"
            raise invalid("meta.k8s.io", options, "", [field_cause(
                "FieldValueNotSupported", "dryRun",
                f'Unsupported value: {shown}: supported values: "All"')])
        return bool(values)

    @property
    def content_type(self) -> str:
        return self.headers.get("Content-Type", "").split(";")[0].strip()

    @property
    def field_manager(self) -> str:
        """`fieldManager`, or the User-Agent up to its first "/", as Kubernetes derives it."""
        agent = self.headers.get("User-Agent", "").split("/", 1)[0][:128]
        return self.query.get("fieldManager") or agent or "unknown"

    def obj(self) -> JsonObj:
        return as_object(self.body)


def as_object(body: Any) -> JsonObj:
    """An object body (its metadata is checked as the decoder checks it: `decoded_body`)."""
    if not isinstance(body, dict):
        raise bad_request("the request body must be an object")
    return body


def _render(call: Call, items: list[JsonObj], page: ListResult | None) -> web.Response:
    info = call.store.info(call.gvr)
    meta: JsonObj = {"resourceVersion": str(call.store.resource_version)}
    if page is not None:
        meta = {"resourceVersion": page.resource_version}
        if info.crd is not None:  # an unstructured list keeps an empty continue
            meta["continue"] = ""
        if page.continue_token:  # a Table page keeps it too: kubectl pages tables by 500
            meta["continue"] = page.continue_token
            if page.remaining is not None:
                meta["remainingItemCount"] = page.remaining
    if "as=Table" in call.headers.get("Accept", ""):
        include = call.query.get("includeObject", "Metadata")
        return json_response(tables.table(info, items, meta, include))
    if page is None:
        return json_response(items[0])
    return json_response({"kind": info.list_kind, "apiVersion": call.gvr.api_version,
                          "metadata": meta, "items": list_items(info, items)})


def list_items(info: ResourceInfo, items: list[JsonObj]) -> list[JsonObj]:
    """A built-in list's items carry no apiVersion and kind (the typed list's do not); a custom
    resource list's keep theirs."""
    if info.crd is not None:
        return items
    return [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")}
            for item in items]


@contextmanager
def _warned(warnings: list[str]) -> Iterator[None]:
    """A write that fails still sends the field validation warnings gathered before it."""
    try:
        yield
    except StatusError as error:
        error.warnings = [*warnings, *error.warnings]
        raise


def field_validation(call: Call) -> tuple[Any, list[str]]:
    """The create or update body without unknown fields, and the warnings to send
    (`jobset_infra.sim.apiserver.field_validation` says how each mode answers); a body of
    another kind is refused first (`type_meta`)."""
    how = fields.mode(call.query, call.api.verb)
    info = call.store.info(call.gvr)
    if isinstance(call.body, dict) and not info.create_only:
        other_version = type_meta.unknown_in_other_version(info, call.body)
        with _warned(fields.warnings_for(other_version, how)):
            type_meta.check_type_meta(info, call.body)
    body, unknown = fields.unknown_fields(call.store, info, call.body)
    return body, fields.check_body(info, unknown, how)


async def get(call: Call) -> web.Response:
    sub = call.api.subresource
    if sub is not None and not (sub == "status" and call.store.info(call.gvr).has_status):
        raise not_found_resource()
    obj = call.store.get(call.gvr, call.api.name or "", call.api.namespace)
    return _render(call, [obj], None)


async def list_(call: Call) -> web.Response:
    query = call.query
    list_options.check(query, watch=False)
    check_list_version(query.get("resourceVersion"))
    limit = number(query, "limit")
    page = call.store.list(call.gvr, call.api.namespace,
                           label_selector=query.get("labelSelector"),
                           field_selector=query.get("fieldSelector"),
                           limit=int(limit) if limit else None,
                           continue_token=query.get("continue") or None)
    return _render(call, page.items, page)


async def create(call: Call) -> web.Response:
    if call.api.subresource == "binding" or (call.api.resource == "pods" and call.api.name):
        return json_response(bind(call), 201)
    if call.api.name or (call.api.namespace is None and call.store.info(call.gvr).namespaced):
        raise method_not_allowed()  # POST is served on a namespace's collection only
    body, warnings = field_validation(call)
    with _warned(warnings):
        obj = call.store.create(call.gvr, as_object(body), call.api.namespace,
                                field_manager=call.field_manager, dry_run=call.dry_run)
    return with_warnings(json_response(obj, 201), warnings)


async def update(call: Call) -> web.Response:
    pruned, warnings = field_validation(call)
    body = as_object(pruned)
    if body.get("metadata", {}).get("name", call.api.name) != call.api.name:
        raise bad_request(name_mismatch(str(body["metadata"]["name"]), call.api.name or ""))
    body.setdefault("metadata", {})["name"] = call.api.name
    with _warned(warnings):
        obj = call.store.update(call.gvr, body, call.api.namespace,
                                field_manager=call.field_manager,
                                subresource=call.api.subresource, dry_run=call.dry_run)
    return with_warnings(json_response(obj), warnings)


async def patch(call: Call) -> web.Response:
    applying = "apply" in call.content_type
    how = fields.mode(call.query, "patch")
    warnings: list[str] = []

    strategic = call.content_type == STRATEGIC_PATCH

    def check(patched: JsonObj, unknown: list[str]) -> None:
        warnings.extend(fields.check_patched(patched, unknown, how,
                                             call.body if strategic else None))

    info = call.store.info(call.gvr)
    ns = call.api.namespace or "" if info.namespaced else ""
    created = applying and call.store.peek(call.gvr, ns, call.api.name or "") is None
    with _warned(warnings):
        obj = call.store.patch(
            call.gvr, call.api.name or "", call.api.namespace, call.content_type, call.body,
            subresource=call.api.subresource,
            field_manager=call.query.get("fieldManager") if applying else call.field_manager,
            force=call.query.get("force") in ("true", "1"), dry_run=call.dry_run,
            on_unknown=check)
    return with_warnings(json_response(obj, 201 if created else 200), warnings)


def _propagation(call: Call) -> str | None:
    options = call.body if isinstance(call.body, dict) else {}
    propagation = options.get("propagationPolicy") or call.query.get("propagationPolicy")
    if propagation is None and options.get("orphanDependents") is not None:
        propagation = "Orphan" if options["orphanDependents"] else "Background"
    return propagation


async def delete(call: Call) -> web.Response:
    """The object as the delete left it (marked by a finalizer, Foreground or Orphan; also the
    deleted object of kinds that return it), else a Success Status; 202 only when the object
    stays and the client sent orphanDependents=false, as the API server answers."""
    options = call.body if isinstance(call.body, dict) else {}
    obj, gone = call.store.delete(
        call.gvr, call.api.name or "", call.api.namespace, propagation=_propagation(call),
        preconditions=options.get("preconditions"),
        dry_run=call.dry_run or options.get("dryRun") == ["All"])
    if not gone:
        return json_response(obj, 202 if options.get("orphanDependents") is False else 200)
    marked = bool(obj["metadata"].get("deletionTimestamp"))
    if marked or (call.gvr.group, call.gvr.resource) in RETURNS_DELETED:
        return json_response(obj)
    meta = obj["metadata"]
    details = {"name": meta["name"], "group": call.gvr.group, "kind": call.gvr.resource,
               "uid": meta["uid"]}
    return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                          "status": "Success", "details": {k: v for k, v in details.items() if v}})


async def delete_collection(call: Call) -> web.Response:
    items = call.store.delete_collection(
        call.gvr, call.api.namespace, label_selector=call.query.get("labelSelector"),
        field_selector=call.query.get("fieldSelector"), propagation=_propagation(call))
    info = call.store.info(call.gvr)
    return json_response({"kind": info.list_kind, "apiVersion": call.gvr.api_version,
                          "metadata": {"resourceVersion": str(call.store.resource_version)},
                          "items": list_items(info, items)})


def bind(call: Call) -> JsonObj:
    """pods/<name>/binding (`pod_updates.bind`)."""
    target = (call.obj().get("target") or {}).get("name")
    if not target:
        raise bad_request("a binding needs target.name")
    pod_updates.bind(call.store, call.api.namespace or "", call.api.name or "", str(target))
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "code": 201}


VERBS: dict[str, Callable[[Call], Awaitable[web.Response]]] = {
    "get": get, "list": list_, "create": create, "update": update, "patch": patch,
    "delete": delete, "deletecollection": delete_collection,
}
