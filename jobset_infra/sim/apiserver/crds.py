"""Serving CustomResourceDefinitions: a registered CRD is served at once.

Creating or updating a CRD registers a resource type per served version (scope, names, status
subresource, selectable fields, printer columns) and installs an admission step for its objects:
pruning of unknown fields, structural defaults, then schema and CEL validation (including
transition rules against the old object), all through `jobset_infra.api.crd.schema.CrdSchema`.
The CRD gets the status a real apiextensions-apiserver writes (NamesAccepted and Established
conditions, acceptedNames, storedVersions). Deleting the CRD deletes its objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jobset_infra.api.crd.schema import CrdSchema, CrdSchemaError
from jobset_infra.api.errors import FieldError
from jobset_infra.sim.apiserver.errors import field_cause, invalid
from jobset_infra.sim.apiserver.resources import GVR, ResourceInfo

if TYPE_CHECKING:
    from jobset_infra.sim.apiserver.store import Store

JsonObj = dict[str, Any]
_log = logging.getLogger(__name__)
CRDS = GVR("apiextensions.k8s.io", "v1", "customresourcedefinitions")
Admit = Callable[[ResourceInfo, JsonObj, JsonObj | None], JsonObj]


def map_list_keys(schema: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Every `x-kubernetes-list-type: map` list of a schema, by field name, with its keys (the
    first declaration of a name wins: server-side apply looks lists up by name)."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: Any, name: str) -> None:
        if not isinstance(node, dict):
            return
        if node.get("x-kubernetes-list-type") == "map" and name not in found:
            found[name] = tuple(node.get("x-kubernetes-list-map-keys") or ())
        for key, child in (node.get("properties") or {}).items():
            walk(child, key)
        walk(node.get("items"), name)
        walk(node.get("additionalProperties"), name)

    walk(schema, "")
    return tuple(sorted(found.items()))


def infos_for(crd: JsonObj) -> list[ResourceInfo]:
    """One ResourceInfo per served version of a CRD."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    out = []
    for version in spec.get("versions") or ():
        if not version.get("served", True):
            continue
        selectable = tuple(
            f["jsonPath"].lstrip(".") for f in version.get("selectableFields") or ()
        )
        out.append(ResourceInfo(
            gvr=GVR(spec["group"], version["name"], names["plural"]),
            kind=names["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            has_status="status" in (version.get("subresources") or {}),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            selectable_fields=selectable,
            crd=crd,
            list_keys=map_list_keys((version.get("schema") or {}).get("openAPIV3Schema")),
        ))
    return out


def _crd_status(crd: JsonObj, now: str) -> JsonObj:
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    stored = [v["name"] for v in crd["spec"].get("versions") or () if v.get("storage")]
    conditions = [
        {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
         "message": "no conflicts found", "lastTransitionTime": now},
        {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
         "message": "the initial names have been accepted", "lastTransitionTime": now},
    ]
    return {"acceptedNames": names, "conditions": conditions, "storedVersions": stored}


def _admit_crd(store: Store) -> Admit:
    def admit(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        name = obj["metadata"]["name"]
        want = f"{names.get('plural')}.{spec.get('group')}"
        if name != want:
            raise invalid(info.gvr.group, info.kind, name, [field_cause(
                "FieldValueInvalid", "metadata.name",
                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')])
        if old is None or "status" not in obj:
            obj["status"] = _crd_status(obj, store.now())
        return obj

    return admit


_REASONS = (
    ("Required value", "FieldValueRequired"), ("Unsupported value", "FieldValueNotSupported"),
    ("Forbidden", "FieldValueForbidden"), ("Too many", "FieldValueTooMany"),
    ("Too long", "FieldValueTooLong"), ("Duplicate value", "FieldValueDuplicate"),
    ("Invalid value", "FieldValueInvalid"),
)


def _cause(error: FieldError) -> JsonObj:
    """A FieldError as an entry of Status details.causes (reason from the message's prefix)."""
    reason = next((r for prefix, r in _REASONS if error.message.startswith(prefix)),
                  "FieldValueInvalid")
    # an error about the object itself has a nil field path, which Go prints as "<nil>"
    return field_cause(reason, error.path or "<nil>", error.message)


def _admit_custom(schema: CrdSchema) -> Admit:
    def admit(info: ResourceInfo, obj: JsonObj, old: JsonObj | None) -> JsonObj:
        admitted, errors = schema.admit(obj, old)
        if errors:
            name = obj["metadata"].get("name", "")
            raise invalid(info.gvr.group, info.kind, name, [_cause(e) for e in errors])
        result: JsonObj = admitted
        return result

    return admit


def _register(store: Store, crd: JsonObj) -> None:
    infos = infos_for(crd)
    served = {info.gvr for info in infos}
    name = crd["metadata"]["name"]
    for old in store.registry.all():  # versions the updated CRD no longer serves
        if old.crd is not None and old.crd["metadata"]["name"] == name and old.gvr not in served:
            store.registry.remove(old.gvr)
            store.admission.pop(old.gvr, None)
            store.schemas.pop(old.gvr, None)
    for info in infos:
        store.registry.add(info)
        schema = CrdSchema.from_crd(crd, info.gvr.version)
        store.admission[info.gvr] = [_admit_custom(schema)]
        store.schemas[info.gvr] = schema


def _unregister(store: Store, crd: JsonObj) -> None:
    for info in infos_for(crd):
        for obj in list(store.iter_objects(info.gvr)):
            meta = obj["metadata"]
            store.drop(info, meta.get("namespace", ""), meta["name"])
        store.registry.remove(info.gvr)
        store.admission.pop(info.gvr, None)
        store.schemas.pop(info.gvr, None)


def _observe(store: Store, event: str, info: ResourceInfo, obj: JsonObj) -> None:
    if info.gvr != CRDS:
        return
    if event == "DELETED":
        _unregister(store, obj)
    else:
        try:
            _register(store, obj)
        except (KeyError, TypeError, ValueError, CrdSchemaError):
            # a CRD this server cannot serve is still stored, as the write succeeded
            _log.warning("sim: CRD %s is stored but not served", obj["metadata"].get("name"),
                         exc_info=True)


def install(store: Store) -> None:
    store.admission.setdefault(CRDS, []).append(_admit_crd(store))
    store.observers.append(_observe)
