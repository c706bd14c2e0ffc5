"""A create or update body of the wrong kind for its path, refused as kube-apiserver refuses it.

Checked before anything else reads the body (so an object of the wrong kind gets no unknown-field
warnings first), worded as kube-apiserver v1.37.2 words it (the conformance corpus's
`request_shapes`):

- a built-in resource decodes with its scheme: another registered kind cannot be converted
  (`Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to
  (core.ConfigMap): unknown conversion`), a kind the scheme does not have is not registered
  (`no kind "JobSet" is registered for version "jobset.x-k8s.io/v1alpha2" in scheme ...`); a
  body without apiVersion or kind takes the path's;
- a custom resource needs `kind` (else the body is unrecognized, `Object 'Kind' is missing`:
  see `routes.read_body`, which has the raw bytes) and the served `apiVersion` (`the API version
  in the data (batch/v1) does not match the expected API version (jobset.x-k8s.io/v1alpha2)`).
  Another version of the same group has no schema to decode with, so every field but the type
  and object metadata is unknown to it, and the real server warns about them before refusing.
  The served version with another kind is invalid (422 on `kind`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jobset_infra.sim.apiserver.errors import bad_request, field_cause, invalid
from jobset_infra.sim.apiserver.resources import ResourceInfo, builtin_resources

__all__ = ["check_type_meta", "unknown_in_other_version"]

_SCHEME = "pkg/runtime/scheme.go:111"
_TYPE_AND_META = ("apiVersion", "kind", "metadata")


@cache
def _registered() -> frozenset[tuple[str, str]]:
    return frozenset((i.gvr.api_version, i.kind) for i in builtin_resources())


def check_type_meta(info: ResourceInfo, obj: dict[str, Any]) -> None:
    """400 when `obj` is not of `info`'s kind and version (the path's), as the decoder says it."""
    if info.crd is not None:
        sent, kind = str(obj.get("apiVersion") or ""), obj.get("kind")
        if kind and sent != info.gvr.api_version:
            raise bad_request(f"the API version in the data ({sent}) does not match the "
                              f"expected API version ({info.gvr.api_version})")
        if kind and kind != info.kind:  # validation says so, naming the object by what it is
            meta = obj.get("metadata")  # any JSON value here: the body is not decoded yet
            name = str(meta.get("name") or "") if isinstance(meta, dict) else ""
            raise invalid(info.gvr.group, str(kind), name, [field_cause(
                "FieldValueInvalid", "kind", f'Invalid value: "{kind}": must be {info.kind}')])
        return
    api_version = str(obj.get("apiVersion") or info.gvr.api_version)
    kind = str(obj.get("kind") or info.kind)
    if (api_version, kind) == (info.gvr.api_version, info.kind):
        return
    version = api_version.rpartition("/")[2]
    prefix = f'{kind} in version "{version}" cannot be handled as a {info.kind}: '
    if (api_version, kind) in _registered():
        internal = info.gvr.group.split(".")[0] if info.gvr.group else "core"
        raise bad_request(f"{prefix}converting ({version}.{kind}) to ({internal}.{info.kind}): "
                          "unknown conversion")
    raise bad_request(f'{prefix}no kind "{kind}" is registered for version "{api_version}" in '
                      f'scheme "{_SCHEME}"')


def unknown_in_other_version(info: ResourceInfo, obj: dict[str, Any]) -> list[str]:
    """The fields a custom resource sent as another version of its group has no schema for."""
    sent = str(obj.get("apiVersion") or "")
    group = sent.rpartition("/")[0]
    if info.crd is None or not obj.get("kind") or sent == info.gvr.api_version \
            or group != info.gvr.group:
        return []
    return sorted(k for k in obj if k not in _TYPE_AND_META)
