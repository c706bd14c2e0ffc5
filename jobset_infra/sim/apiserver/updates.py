"""Pure steps of a write, shared by create, update, patch and apply: copying, server-set
metadata on create, the status subresource split, finalizer rules, and turning a PATCH body
into the next object.
"""

from __future__ import annotations

import json
import random
from typing import Any

from jobset_infra.sim.apiserver import patch
from jobset_infra.sim.apiserver.errors import (
    NotFoundError,
    bad_request,
    conflict,
    field_cause,
    forbidden,
    invalid,
    name_mismatch,
    not_found,
    stale,
    unsupported_media_type,
)
from jobset_infra.sim.apiserver.metadata import metadata_causes
from jobset_infra.sim.apiserver.object_names import name_causes
from jobset_infra.sim.apiserver.resources import ResourceInfo
from jobset_infra.sim.apiserver.type_meta import check_type_meta

JsonObj = dict[str, Any]
# metadata fields a client cannot change with an update
SERVER_OWNED_META = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                     "deletionGracePeriodSeconds", "generation", "resourceVersion")


def clone(value: Any) -> Any:
    """Deep copy of JSON-like data (several times faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def content(obj: JsonObj, has_status: bool) -> JsonObj:
    """What `generation` counts: everything but metadata (and status, with the subresource)."""
    skip = ("metadata", "status") if has_status else ("metadata",)
    return {k: v for k, v in obj.items() if k not in skip}


def _go_json_type(value: object) -> str:
    """A JSON value's type as Go's decoder names it in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def decoded_body(obj: object, info: ResourceInfo | None = None) -> JsonObj:
    """The body as the API server's JSON decoder leaves it: an object whose `metadata` is an
    object (null decodes to empty) with string maps for labels and annotations; 400 otherwise,
    worded as the decoder words it (for a built-in kind, after `<Kind> in version "v" cannot be
    handled as a <Kind>: `); a body of another kind as `type_meta` words it."""
    if not isinstance(obj, dict):
        raise bad_request("the body of the request was in an unknown format: "
                          f"cannot unmarshal {type(obj).__name__} into an object")
    builtin = info is not None and info.crd is None
    prefix = ""
    if info is not None:
        check_type_meta(info, obj)
    if info is not None and builtin:
        prefix = f'{info.kind} in version "{info.gvr.version}" cannot be handled as a {info.kind}: '
    meta = obj.get("metadata")
    if meta is None:
        return {**obj, "metadata": {}}
    owner = info.kind if builtin and info is not None else ""
    if not isinstance(meta, dict):
        raise bad_request(f"{prefix}json: cannot unmarshal {_go_json_type(meta)} into Go struct "
                          f"field {owner}.metadata of type v1.ObjectMeta")
    for key in ("name", "generateName", "namespace", "resourceVersion", "uid"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise bad_request(f"{prefix}json: cannot unmarshal {_go_json_type(meta[key])} into "
                              f"Go struct field ObjectMeta.metadata.{key} of type string")
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise bad_request(f"{prefix}json: cannot unmarshal {_go_json_type(value)} into Go "
                              f"struct field ObjectMeta.metadata.{key} of type map[string]string")
        wrong = next((v for v in value.values() if not isinstance(v, str)), None)
        if wrong is not None:
            raise bad_request(f"{prefix}json: cannot unmarshal {_go_json_type(wrong)} into Go "
                              f"struct field ObjectMeta.metadata.{key} of type string")
    return obj


def namespace_of(info: ResourceInfo, namespace: str | None, obj: JsonObj | None = None) -> str:
    """The namespace a request addresses ("" for cluster-scoped): the URL's or the body's,
    400 when they differ or a namespaced resource has none."""
    if not info.namespaced:
        return ""
    in_body = (obj or {}).get("metadata", {}).get("namespace")
    if namespace and in_body and in_body != namespace:
        raise bad_request("the namespace of the provided object does not match the "
                          "namespace sent on the request")
    ns = namespace or in_body
    if not ns:
        raise bad_request(f"a namespace is required for {info.gvr.group_resource}")
    return str(ns)


def check_namespace(info: ResourceInfo, namespace: JsonObj | None, ns: str, name: str) -> None:
    """Creating in a namespace needs it to exist (404) and not be terminating (403)."""
    if namespace is None:
        raise not_found("", "namespaces", ns)
    if namespace["metadata"].get("deletionTimestamp"):
        raise forbidden(info.gvr.group, info.gvr.resource, name,
                        f"unable to create new content in namespace {ns} because it is "
                        "being terminated")


def new_uid(rng: random.Random) -> str:
    """A version-4 UUID drawn from `rng` (seeded in tests for reproducible uids)."""
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def prepare_create(
    info: ResourceInfo, obj: JsonObj, ns: str, *, uid: str, now: str, name_suffix: str
) -> JsonObj:
    """A copy of a create body with the server's metadata: name (from generateName plus
    `name_suffix` when unset), namespace, uid, creationTimestamp, generation 1."""
    body = clone(obj)  # apiVersion and kind first, as the API server serialises objects
    obj = {"apiVersion": info.gvr.api_version, "kind": info.kind,
           **{k: v for k, v in body.items() if k not in ("apiVersion", "kind")}}
    meta = obj.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + name_suffix
    if not meta.get("name"):
        raise invalid(info.gvr.group, info.kind, "", [field_cause(
            "FieldValueRequired", "metadata.name",
            "Required value: name or generateName is required")])
    causes = name_causes(info.gvr.group, info.kind, meta) + metadata_causes(info, meta)
    if causes:
        raise invalid(info.gvr.group, info.kind, meta["name"], causes)
    if info.namespaced:
        meta["namespace"] = ns
    else:
        meta.pop("namespace", None)
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion"):
        meta.pop(key, None)
    meta.update(uid=uid, creationTimestamp=now, generation=1)
    return obj


# The metadata a status write of a built-in kind changes (its strategy resets the spec only),
# and the kinds whose status strategy resets it too (ResetObjectMetaForStatus), as custom
# resources' does.
STATUS_KEEPS_META = ("labels", "annotations", "finalizers", "ownerReferences")
STATUS_RESETS_METADATA = frozenset({"VolumeAttachment"})


def merge_subresource(
    info: ResourceInfo, old: JsonObj, obj: JsonObj, subresource: str | None
) -> JsonObj:
    """The next stored object: a status write changes only status; a write to the main resource
    keeps the stored status (with the subresource) and the server-owned metadata."""
    if subresource == "status":
        # Stored objects are immutable snapshots, so the new one shares everything but its
        # metadata (resourceVersion, managedFields are set on it) and status; a whole-object
        # copy here was the largest item of the sim's profile (every Job/Pod status write).
        new: JsonObj = dict(old)
        new["metadata"] = dict(old["metadata"])
        sent = obj.get("metadata") or {}
        if "managedFields" in sent:  # ownership the write computed
            new["metadata"]["managedFields"] = sent["managedFields"]
        if info.crd is None and info.kind not in STATUS_RESETS_METADATA:
            for key in STATUS_KEEPS_META:  # most built-in status strategies reset only spec
                if key in sent:
                    new["metadata"][key] = clone(sent[key])
                else:
                    new["metadata"].pop(key, None)
        if "status" in obj:
            new["status"] = clone(obj["status"])
        else:
            new.pop("status", None)
        return new
    if subresource is not None:
        raise NotFoundError(404, "NotFound", "the server could not find the requested resource")
    new = clone(obj)
    new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
    if info.has_status:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    old_meta = old["metadata"]
    meta = new.setdefault("metadata", {})
    for key in SERVER_OWNED_META:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    if "managedFields" not in meta and "managedFields" in old_meta:
        meta["managedFields"] = old_meta["managedFields"]
    return new


def owned_part(info: ResourceInfo, obj: JsonObj, subresource: str | None) -> JsonObj:
    """What a write can own: a main-resource write of a kind with a status subresource owns
    no status (the API server resets it there, so the field manager leaves it out)."""
    if subresource is None and info.has_status and "status" in obj:
        return {k: v for k, v in obj.items() if k != "status"}
    return obj


def check_name(obj: JsonObj, name: str) -> None:
    """A patch may not rename the object (400, as the patch handler words it)."""
    patched_name = (obj.get("metadata") or {}).get("name")
    if patched_name != name:
        raise bad_request(name_mismatch(str(patched_name), name))


def check_put_version(info: ResourceInfo, old: JsonObj, meta: JsonObj) -> None:
    """A PUT of a custom resource must carry metadata.resourceVersion (422 otherwise)."""
    if meta.get("resourceVersion") in (None, "") and info.crd is not None:
        raise invalid(info.gvr.group, info.kind, old["metadata"]["name"], [field_cause(
            "FieldValueInvalid", "metadata.resourceVersion",
            "Invalid value: 0x0: must be specified for an update")])


def check_preconditions(info: ResourceInfo, old: JsonObj, obj: JsonObj) -> None:
    """409 when the write carries a stale resourceVersion or another object's uid."""
    old_meta, meta = old["metadata"], obj.get("metadata") or {}
    rv = meta.get("resourceVersion")
    if rv not in (None, "") and str(rv) != old_meta["resourceVersion"]:
        raise stale(info.gvr.group, info.gvr.resource, old_meta["name"])
    if meta.get("uid") and meta["uid"] != old_meta["uid"]:
        raise conflict(info.gvr.group, info.gvr.resource, old_meta["name"], (
            f"StorageError: invalid object, Code: 4, Key: {_etcd_key(info, old_meta)}, "
            f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: "
            f"{meta['uid']}, UID in object meta: {old_meta['uid']}"))


def _etcd_key(info: ResourceInfo, meta: JsonObj) -> str:
    """Where kube-apiserver keeps the object in etcd (named in its storage errors)."""
    group = f"{info.gvr.group}/" if info.crd is not None else ""
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"/registry/{group}{info.gvr.resource}/{where}{meta['name']}"


def check_metadata(info: ResourceInfo, new: JsonObj) -> None:
    """422 when an update leaves labels, annotations or finalizers the API server refuses."""
    causes = metadata_causes(info, new["metadata"])
    if causes:
        raise invalid(info.gvr.group, info.kind, new["metadata"].get("name", ""), causes)


def check_finalizers(info: ResourceInfo, old: JsonObj, new: JsonObj) -> None:
    """422 for a finalizer added to an object that is already being deleted."""
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or ())
    added = [f for f in new["metadata"].get("finalizers") or () if f not in before]
    if added:
        raise invalid(info.gvr.group, info.kind, old["metadata"]["name"], [field_cause(
            "FieldValueForbidden", "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being deleted, "
            f"found new finalizers {go_strings(added)}")])


def go_strings(values: list[str]) -> str:
    """A []string as Go's %#v prints it: `[]string{"a", "b"}`."""
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


def patched(info: ResourceInfo, old: JsonObj, patch_type: str, body: Any) -> JsonObj:
    """The object a merge, JSON or strategic-merge PATCH turns `old` into. Strategic merge is
    refused for custom resources (415), as Kubernetes does."""
    if patch_type == patch.MERGE_PATCH:
        new = patch.json_merge(old, body)
    elif patch_type == patch.JSON_PATCH:
        new = patch.json_patch(old, body)
    elif patch_type == patch.STRATEGIC_PATCH and info.crd is None:
        new = patch.strategic_merge(old, body)
    else:
        raise unsupported_media_type()
    if not isinstance(new, dict):
        raise bad_request("the patch did not result in an object")
    meta = new.get("metadata") or {}
    if not meta.get("resourceVersion"):
        new["metadata"] = dict(meta) | {"resourceVersion": old["metadata"]["resourceVersion"]}
    return new
