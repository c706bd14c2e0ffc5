"""Discovery documents: /api, /apis, /apis/<group>, the resource list of each group-version, and
/version. Built from the registry on each request, so a CRD shows up as soon as it is created.
Unknown groups and versions are 404, as on a real server.
"""

from __future__ import annotations

import re
from typing import Any

from jobset_infra.sim.apiserver.errors import NotFoundError
from jobset_infra.sim.apiserver.resources import KUBERNETES_VERSION, Registry, ResourceInfo

JsonObj = dict[str, Any]
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = ["get", "patch", "update"]


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes' version ordering: GA before beta before alpha, higher numbers first."""
    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (3, 0, 0)
    major, stage, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0))


def sorted_versions(versions: list[str]) -> list[str]:
    return sorted(versions, key=_version_priority)


def not_found() -> NotFoundError:
    return NotFoundError(404, "NotFound", "the server could not find the requested resource",
                         details={})


def api_versions(server_address: str) -> JsonObj:
    return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group(name: str, versions: list[str]) -> JsonObj:
    ordered = sorted_versions(versions)
    entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in ordered]
    return {"name": name, "versions": entries, "preferredVersion": entries[0]}


def api_group_list(registry: Registry) -> JsonObj:
    groups = [_group(name, versions) for name, versions in sorted(registry.groups().items())
              if name]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, name: str) -> JsonObj:
    versions = registry.groups().get(name)
    if not name or not versions:
        raise not_found()
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name, versions)}


def _verbs(info: ResourceInfo) -> list[str]:
    return ["create"] if info.create_only else VERBS


def _entries(info: ResourceInfo) -> list[JsonObj]:
    main: JsonObj = {
        "name": info.gvr.resource, "singularName": info.singular,
        "namespaced": info.namespaced, "kind": info.kind, "verbs": _verbs(info),
    }
    if info.short_names:
        main["shortNames"] = list(info.short_names)
    if info.categories:
        main["categories"] = list(info.categories)
    out = [main]
    if info.has_status:
        out.append({"name": f"{info.gvr.resource}/status", "singularName": "",
                    "namespaced": info.namespaced, "kind": info.kind, "verbs": SUB_VERBS})
    if info.gvr.resource == "pods" and not info.gvr.group:
        out.append({"name": "pods/binding", "singularName": "", "namespaced": True,
                    "kind": "Binding", "verbs": ["create"]})
    return out


def resource_list(registry: Registry, group: str, version: str) -> JsonObj:
    infos = [i for i in registry.all() if (i.gvr.group, i.gvr.version) == (group, version)]
    if not infos:
        raise not_found()
    resources = [e for info in sorted(infos, key=lambda i: i.gvr.resource) for e in _entries(info)]
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": resources}


def version_info() -> JsonObj:
    major, minor, _ = KUBERNETES_VERSION.split(".")
    return {
        "major": major, "minor": minor, "gitVersion": f"v{KUBERNETES_VERSION}-jobset-infra-sim",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "python", "compiler": "python",
        "platform": "linux/amd64",
    }


AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> bool:
    """Whether a client (kubectl, client-go) accepts aggregated discovery v2 for /api or /apis."""
    return any("as=APIGroupDiscoveryList" in part and "v=v2;" in part.replace(" ", "") + ";"
               for part in accept.split(","))


def _aggregated_resource(info: ResourceInfo) -> JsonObj:
    kind = {"group": info.gvr.group, "version": info.gvr.version, "kind": info.kind}
    out: JsonObj = {
        "resource": info.gvr.resource, "responseKind": kind,
        "scope": "Namespaced" if info.namespaced else "Cluster",
        "singularResource": info.singular, "verbs": _verbs(info),
    }
    if info.short_names:
        out["shortNames"] = list(info.short_names)
    if info.categories:
        out["categories"] = list(info.categories)
    if info.has_status:
        out["subresources"] = [{"subresource": "status", "responseKind": kind,
                                "verbs": SUB_VERBS}]
    return out


def aggregated(registry: Registry, *, core: bool) -> JsonObj:
    """APIGroupDiscoveryList: every group (core only for /api, all others for /apis) with its
    versions' resources in one document."""
    items = []
    for name, versions in sorted(registry.groups().items()):
        if (name == "") != core:
            continue
        entries = []
        for version in sorted_versions(versions):
            infos = sorted((i for i in registry.all()
                            if (i.gvr.group, i.gvr.version) == (name, version)),
                           key=lambda i: i.gvr.resource)
            entries.append({"version": version, "freshness": "Current",
                            "resources": [_aggregated_resource(i) for i in infos]})
        items.append({"metadata": {"name": name, "creationTimestamp": None},
                      "versions": entries})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}
