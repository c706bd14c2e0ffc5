"""What an offline run would create: a `pulumi preview`-like tree and the Kubernetes objects.

Pure functions over the recorded registrations (no Pulumi import), used by `jobset-infra plan`.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from jobset_infra.api import constants as k
from jobset_infra.api.k8s_openapi import definition_for, validate_builtin
from jobset_infra.api.kueue_crds import kueue_errors
from jobset_infra.manifests.wire import from_wire
from jobset_infra.manifests.workload import jobset_problems

__all__ = [
    "SECRET_PLACEHOLDER",
    "HelmRelease",
    "RegistrationLike",
    "apply_order",
    "helm_releases",
    "key_inputs",
    "kubernetes_objects",
    "object_problems",
    "redact_secrets",
    "render_tree",
]

SECRET_PLACEHOLDER = "[secret]"
# Pulumi's wire encoding of a secret: {_SIG_KEY: _SECRET_SIG, "value": ...} (pulumi/runtime/rpc.py).
_SIG_KEY = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"

# Per type, the inputs worth showing on the tree line (the rest goes to --out files).
_KEY_INPUTS: dict[str, tuple[str, ...]] = {
    "gcp:container/cluster:Cluster": ("location", "minMasterVersion"),
    "gcp:container/nodePool:NodePool": ("nodeConfig.machineType", "nodeCount",
                                        "placementPolicy.tpuTopology",
                                        "placementPolicy.policyName", "nodeConfig.spot",
                                        "nodeConfig.flexStart", "queuedProvisioning.enabled"),
    "gcp:compute/resourcePolicy:ResourcePolicy": ("region", "workloadPolicy.type",
                                                  "workloadPolicy.acceleratorTopology"),
    "kubernetes:helm.sh/v3:Release": ("chart", "version"),
    "kubernetes:helm.sh/v4:Chart": ("chart", "version"),
}


class RegistrationLike(Protocol):
    """What the tree needs of a recorded registration."""

    @property
    def urn(self) -> str: ...

    @property
    def type(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def parent(self) -> str | None: ...

    @property
    def dependencies(self) -> tuple[str, ...]: ...

    @property
    def inputs(self) -> Mapping[str, Any]: ...


_R = TypeVar("_R", bound=RegistrationLike)


def apply_order(registrations: Iterable[_R]) -> list[_R]:
    """Return the registrations so that each follows its parent and everything it depends on.

    The engine registers a resource once its inputs resolve, so the recorded order changes from
    run to run. This order depends only on the resources themselves: among those whose parent and
    dependencies are already placed, the smallest (type, name) goes next. Two plans of the same
    program therefore print the same tree and write the same numbered files.
    """
    by_urn = {reg.urn: reg for reg in registrations}
    waits_for = {
        urn: {u for u in (*reg.dependencies, reg.parent) if u in by_urn and u != urn}
        for urn, reg in by_urn.items()
    }
    unblocks: dict[str, list[str]] = {urn: [] for urn in by_urn}
    for urn, before in waits_for.items():
        for other in before:
            unblocks[other].append(urn)
    ready = [(reg.type, reg.name, urn) for urn, reg in by_urn.items() if not waits_for[urn]]
    heapq.heapify(ready)
    ordered: list[_R] = []
    while ready:
        _, _, urn = heapq.heappop(ready)
        ordered.append(by_urn[urn])
        for after in unblocks[urn]:
            waits_for[after].discard(urn)
            if not waits_for[after]:
                heapq.heappush(ready, (by_urn[after].type, by_urn[after].name, after))
    # A dependency cycle cannot come from a Pulumi program (it would never finish); keep any
    # leftovers anyway, so nothing recorded is ever dropped from the plan.
    placed = {reg.urn for reg in ordered}
    ordered += sorted(
        (reg for urn, reg in by_urn.items() if urn not in placed), key=lambda r: (r.type, r.name)
    )
    return ordered


def redact_secrets(value: Any) -> Any:
    """Return `value` with every Pulumi secret replaced by a placeholder; never prints a secret."""
    if isinstance(value, Mapping):
        if value.get(_SIG_KEY) == _SECRET_SIG:
            return SECRET_PLACEHOLDER
        return {k: redact_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_secrets(v) for v in value]
    return value


def _dig(inputs: Mapping[str, Any], dotted: str) -> Any:
    value: Any = inputs
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def key_inputs(reg: RegistrationLike) -> str:
    """Return the short `key=value` summary shown after a resource on the tree."""
    inputs = redact_secrets(reg.inputs)
    if reg.type.startswith("kubernetes:") and reg.type not in _KEY_INPUTS:
        meta = inputs.get("metadata") or {}
        name = meta.get("name")
        namespace = meta.get("namespace")
        shown = f"{namespace}/{name}" if namespace and name else name
        return f"name={shown}" if shown else ""
    pairs = []
    for dotted in _KEY_INPUTS.get(reg.type, ()):
        value = from_wire(_dig(inputs, dotted))  # counts read better as 2 than 2.0
        if value is not None:
            pairs.append(f"{dotted.split('.')[-1]}={value}")
    return " ".join(pairs)


def render_tree(registrations: Sequence[RegistrationLike], project: str, stack: str) -> str:
    """Return the resource tree as `pulumi preview` draws it: type, name, key inputs."""
    by_parent: dict[str | None, list[RegistrationLike]] = {}
    for reg in registrations:
        by_parent.setdefault(reg.parent, []).append(reg)
    rows: list[tuple[str, str, str]] = [("pulumi:pulumi:Stack", f"{project}-{stack}", "")]
    _walk(by_parent, None, "", rows)
    width = max(len(t) for t, _, _ in rows) + 2
    name_width = max(len(n) for _, n, _ in rows) + 2
    lines = [f"     {'Type':<{width}}{'Name':<{name_width}}Key inputs"]
    lines += [f" +   {t:<{width}}{n:<{name_width}}{k}".rstrip() for t, n, k in rows]
    lines.append("")
    lines.append(f"Resources:\n    + {len(registrations) + 1} to create")
    return "\n".join(lines)


def _walk(
    by_parent: Mapping[str | None, list[RegistrationLike]],
    parent: str | None,
    prefix: str,
    rows: list[tuple[str, str, str]],
) -> None:
    children = by_parent.get(parent, [])
    for i, reg in enumerate(children):
        last = i == len(children) - 1
        rows.append((f"{prefix}{'└─ ' if last else '├─ '}{reg.type}", reg.name, key_inputs(reg)))
        _walk(by_parent, reg.urn, prefix + ("   " if last else "│  "), rows)


def kubernetes_objects(registrations: Iterable[RegistrationLike]) -> list[dict[str, Any]]:
    """Return every Kubernetes object the run would apply, as manifests, in registration order.

    Typed resources give one object each; `yaml/v2` ConfigGroups give their `objs`. Helm releases
    are rendered by the chart at deploy time and are not objects here.
    """
    objects: list[dict[str, Any]] = []
    for reg in registrations:
        inputs = from_wire(redact_secrets(dict(reg.inputs)))
        if reg.type == "kubernetes:yaml/v2:ConfigGroup":
            objects += [dict(obj) for obj in inputs.get("objs") or []]
        elif reg.type.startswith("kubernetes:") and "kind" in inputs and "apiVersion" in inputs:
            objects.append(_manifest(reg.name, inputs))
    return objects


_HELM_KINDS = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")


@dataclass(frozen=True)
class HelmRelease:
    """A Helm release or chart the run would install: not an object in the plan, the chart
    renders it (a local chart folder has no version)."""

    name: str
    chart: str
    version: str
    namespace: str
    values: Mapping[str, Any]

    def install_command(self, values_file: str) -> str:
        """The `helm install` that does what the provider would, with these values."""
        version = f" --version {self.version}" if self.version else ""
        return (f"helm install {self.name} {self.chart}{version} "
                f"--namespace {self.namespace} --create-namespace --values {values_file} --wait")


def helm_releases(registrations: Iterable[RegistrationLike]) -> list[HelmRelease]:
    """Return the Helm releases among the registrations, in their order, secrets redacted."""
    return [
        HelmRelease(
            name=str(inputs.get("name") or reg.name), chart=str(inputs.get("chart", "")),
            version=str(inputs.get("version", "")),
            namespace=str(inputs.get("namespace") or "default"),
            values=inputs.get("values") or {},
        )
        for reg in registrations if reg.type in _HELM_KINDS
        for inputs in [from_wire(redact_secrets(dict(reg.inputs)))]
    ]


def _manifest(name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    manifest = {"apiVersion": inputs["apiVersion"], "kind": inputs["kind"]}
    metadata = dict(inputs.get("metadata") or {})
    metadata.setdefault("name", name)  # Pulumi autonames from the logical name
    manifest["metadata"] = metadata
    for key, value in inputs.items():
        if key not in manifest:
            manifest[key] = value
    return manifest


# --- validation of what would be applied ---------------------------------------------------------

def object_problems(manifest: Mapping[str, Any]) -> list[str]:
    """Return every reason the API server would refuse `manifest` (empty: it would accept it).

    Built-in kinds are checked against the pinned Kubernetes OpenAPI schema; JobSets against our
    CRD (schema, CEL rules) and upstream's webhook rules; Kueue kinds against Kueue's documented
    fields. Any other custom kind gets the checks every object gets (apiVersion, kind, name).
    """
    api_version = str(manifest.get("apiVersion") or "")
    kind = str(manifest.get("kind") or "")
    basics = _basic_problems(manifest)
    if basics:
        return basics
    if definition_for(api_version, kind) is not None:
        return [str(error) for error in validate_builtin(manifest)]
    if api_version == k.API_VERSION and kind == k.KIND:
        return jobset_problems(manifest)
    if api_version == k.KUEUE_API_VERSION:
        return kueue_errors(dict(manifest))
    return []


def _basic_problems(manifest: Mapping[str, Any]) -> list[str]:
    problems = [f"{key}: Required value" for key in ("apiVersion", "kind") if not manifest.get(key)]
    metadata = manifest.get("metadata")
    if not isinstance(metadata, Mapping) or not metadata.get("name"):
        problems.append("metadata.name: Required value")
    return problems
