"""Kueue on the local cluster's system node, as it ships.

Its chart comes from the pinned sigs.k8s.io/kueue module (the Go module cache `make tools`
filled), rendered by the Helm the stacks' Chart runs, inside the pinned pulumi-kubernetes
provider (`chart_template`), with the values `manifests.kueue_install.helm_values` gives the
Kueue component's helm.v4.Chart, and applied server-side in Helm's install order. Nothing is
post-rendered: the admission and conversion webhooks call the chart's Service, which the API
server reaches inside the cluster's network namespace; Kueue's own certificate rotation fills
the webhook Secret and the configurations' CA bundles; its visibility API is served through the
API server's aggregation layer (`layout._aggregation_layer`). The manager's Pod runs from the
`kueue` image (`jobset-infra image build kueue`, by digest), selecting and tolerating the system
node (`realnode.SYSTEM_NODE_LABEL`), as a GKE install pinned to a tainted system pool would.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from jobset_infra.cluster.chart_template import ChartTemplateError, template_chart
from jobset_infra.cluster.install import (
    APPLY,
    SYSTEM_TOLERATION,
    until_established,
    wait_available,
)
from jobset_infra.cluster.install import KINDS as SYSTEM_KINDS
from jobset_infra.cluster.realnode import SYSTEM_NODE_LABEL
from jobset_infra.controller.runtime.kube import KubeClient
from jobset_infra.controller.runtime.resources import Resource
from jobset_infra.manifests.kueue_install import helm_values
from jobset_infra.manifests.kueue_spec import KueueInstall, parse_kueue_install

JsonObj = dict[str, Any]
FIELD_MANAGER: Final = "jobset-infra-kueue"
MODULE: Final = "sigs.k8s.io/kueue"

# Kinds Kueue's chart renders that our own system has none of.
_KUEUE_ONLY: Final[tuple[Resource, ...]] = (
    Resource("", "v1", "secrets", "Secret"),
    Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
             "CustomResourceDefinition", namespaced=False),
    Resource("apiregistration.k8s.io", "v1", "apiservices", "APIService", namespaced=False),
    Resource("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "FlowSchema",
             namespaced=False),
    Resource("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations",
             "PriorityLevelConfiguration", namespaced=False),
    Resource("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
             "MutatingWebhookConfiguration", namespaced=False),
    Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
             "ValidatingWebhookConfiguration", namespaced=False),
)
_KNOWN: Final[Mapping[str, Resource]] = {**SYSTEM_KINDS, **{r.kind: r for r in _KUEUE_ONLY}}
# Every kind Kueue's chart renders (with the values we give it), in Helm's install order:
# what others reference first, the webhook configurations last.
ORDER: Final[tuple[Resource, ...]] = tuple(_KNOWN[kind] for kind in (
    "Namespace", "NetworkPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "ConfigMap",
    "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
    "Service", "Deployment", "APIService", "FlowSchema", "PriorityLevelConfiguration",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"))
KINDS: Final[Mapping[str, Resource]] = {r.kind: r for r in ORDER}


class KueueInstallError(RuntimeError):
    """Kueue's chart could not be found or rendered; the message says why and the fix."""


def module_cache() -> Path:
    """Go's module cache (GOMODCACHE, else GOPATH's first entry, else ~/go)."""
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0]
    return Path(gopath or Path.home() / "go") / "pkg" / "mod"


def chart_folder(version: str) -> Path:
    """Kueue's chart in the pinned module, as `make tools` downloaded it."""
    folder = module_cache() / f"{MODULE}@v{version}" / "charts" / "kueue"
    if not (folder / "Chart.yaml").is_file():
        raise KueueInstallError(
            f"Kueue's chart {version} not found at {folder}: run `make tools` (it downloads "
            f"{MODULE} v{version}, which carries charts/kueue), or "
            f"`go mod download -json {MODULE}@v{version}`")
    return folder


def system_node_kueue(image: str, **fields: object) -> KueueInstall:
    """The Kueue install for a cluster with a system node: `image` (`repository:tag@sha256:`),
    the chart of the pinned module, its Pods selecting and tolerating that node."""
    version = str(fields.pop("version", KueueInstall.model_fields["version"].default))
    return parse_kueue_install(**{
        "version": version, "image": image, "chart_path": str(chart_folder(version)),
        "node_selector": {SYSTEM_NODE_LABEL: "true"}, "tolerations": [SYSTEM_TOLERATION],
        **fields})


def kueue_image() -> str:
    """The `kueue` image as the chart takes it: `repository:tag@sha256:...` (built if not
    cached; the real-node start built it, if it was among the cluster's images)."""
    from jobset_infra.cluster.images.build import build_images

    built = build_images(["kueue"])["kueue"]
    return f"{built.spec.reference}@{built.digest}"


def render(install: KueueInstall, kubeconfig: Path) -> list[JsonObj]:
    """The chart's objects for `install` on the cluster of `kubeconfig`, rendered by the
    provider's Helm (`chart_template`), nothing post-rendered."""
    if install.chart_path is None:
        raise KueueInstallError("render: the install names no chart_path (a local chart)")
    try:
        return template_chart(
            Path(install.chart_path).expanduser(), release=install.release_name,
            namespace=install.namespace, values=helm_values(install), kubeconfig=kubeconfig)
    except ChartTemplateError as err:
        raise KueueInstallError(f"Kueue's chart could not be rendered: {err}") from None


def in_install_order(objects: Sequence[Mapping[str, Any]], namespace: str) -> list[JsonObj]:
    """The Namespace, then `objects` in Helm's install order (their order kept within a kind);
    a kind this module does not know is an error naming it."""
    unknown = sorted({o["kind"] for o in objects} - set(KINDS))
    if unknown:
        raise KueueInstallError(f"Kueue's chart rendered kinds this install does not apply: "
                                f"{', '.join(unknown)} (add them to kueue_system.ORDER)")
    rank = {r.kind: i for i, r in enumerate(ORDER)}
    ns: JsonObj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    return [ns, *sorted((dict(o) for o in objects), key=lambda o: rank[o["kind"]])]


async def apply(api: KubeClient, manifest: Mapping[str, Any]) -> None:
    """Server-side apply of one of the chart's objects, as this install's field manager."""
    res = KINDS[manifest["kind"]]
    meta = manifest["metadata"]
    await api.request("PATCH", res.path(meta.get("namespace"), meta["name"]),
                      body=dict(manifest), content_type=APPLY,
                      params={"fieldManager": FIELD_MANAGER, "force": "true"})


async def install_kueue(
    api: KubeClient, install: KueueInstall, kubeconfig: Path, timeout: float = 300.0,
) -> str:
    """Apply Kueue's chart for `install` (rendered for the cluster of `kubeconfig`) and wait
    for its manager's Deployment to be available (its /readyz passes once its webhook
    certificate is in place); returns the Deployment's name."""
    rendered = await asyncio.to_thread(render, install, kubeconfig)
    objects = in_install_order(rendered, install.namespace)
    for manifest in objects:
        await apply(api, manifest)
        if manifest["kind"] == "CustomResourceDefinition":
            # Not yet served: Kueue's kinds convert through its webhook, up only later.
            await until_established(api, manifest["metadata"]["name"], served=False)
    [deployment] = [o["metadata"]["name"] for o in objects if o["kind"] == "Deployment"]
    await wait_available(api, install.namespace, deployment, timeout)
    return str(deployment)
